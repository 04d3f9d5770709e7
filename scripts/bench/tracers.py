"""The traced arms: innostall record and bpftrace, each a process run for one window."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from .errors import BenchError
from .processes import end_process
from .procfs import alive, children, cpu_seconds, peak_rss_mb, perf_events
from .settings import ATTACH_TIMEOUT_S, INNOSTALL, RECORD_ARGS, STOP_TIMEOUT_S


class Tracer:
    """A tracing process run for one window: start, wait until its probes are attached,
    sample its CPU, then SIGINT so it detaches cleanly. Subclasses say how."""

    def __init__(self, workdir: Path, name: str):
        self.workdir = workdir
        self.log_path = workdir / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        self.result: dict = {}

    def launch(self, cmd: list[str]) -> None:
        self.launched = time.monotonic()
        with open(self.log_path, "w") as logf:
            self.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return " | ".join(self.log_path.read_text().strip().splitlines()[-5:])
        return ""

    def wait_attached(self) -> None:
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while not self.attached():
            if self.proc.poll() is not None:
                raise BenchError(f"{self.describe()} exited ({self.proc.returncode}) before "
                                 f"attaching: {self.log_tail()}")
            if time.monotonic() > deadline:
                raise BenchError(f"{self.describe()} not attached after {ATTACH_TIMEOUT_S} s")
            time.sleep(0.05)

    def pids(self) -> dict[str, int]:
        return {"main": self.proc.pid}

    def cpu(self) -> dict[str, float]:
        return {name: cpu_seconds(pid) for name, pid in self.pids().items() if alive(pid)}

    def peaks(self) -> dict[str, float]:
        return {name: round(peak_rss_mb(pid), 1) for name, pid in self.pids().items() if alive(pid)}

    def stop(self) -> None:
        """SIGINT, then follow it to its end, sampling its peak RSS until the last moment."""
        if self.proc is None or self.proc.returncode is not None:
            return
        pids = self.pids()
        self.proc.send_signal(signal.SIGINT)
        peaks, usage = self.follow_to_exit(pids)
        if usage is None:
            self.kill()
            raise BenchError(f"{self.describe()} ignored SIGINT for {STOP_TIMEOUT_S} s; killed")
        self.record_lifetime(usage)
        self.result["peak_rss_mb"] = {name: round(mb, 1) for name, mb in peaks.items()}
        self.result["exit_status"] = self.proc.returncode

    def follow_to_exit(self, pids: dict[str, int]) -> tuple[dict[str, float], object | None]:
        """Polls until it exits or STOP_TIMEOUT_S passes -> (peak RSS per process, its
        resource usage, None if it did not exit). VmHWM goes with the process, and writing
        the recording's tables at exit is when the recorder peaks, so it is read to the end."""
        peaks = {name: 0.0 for name in pids}
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline:
            for name, pid in pids.items():
                with contextlib.suppress(OSError, ValueError):
                    peaks[name] = max(peaks[name], peak_rss_mb(pid))
            done, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if done:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                return peaks, usage
            time.sleep(0.02)
        return peaks, None

    def record_lifetime(self, usage) -> None:
        # wait4's usage covers the process and the children it reaped (the loader)
        lifetime = time.monotonic() - self.launched
        cpu = usage.ru_utime + usage.ru_stime
        self.result.update(lifetime_s=round(lifetime, 2), lifetime_cpu_s=round(cpu, 2),
                           lifetime_cpu_percent=round(cpu / lifetime * 100, 2),
                           lifetime_max_rss_mb=round(usage.ru_maxrss / 1024, 1))

    def kill(self) -> None:
        """Last resort for cleanup: SIGINT the group, then SIGKILL it."""
        if self.proc is not None:
            end_process(self.proc, signal.SIGINT)


class Recorder(Tracer):
    """innostall record in the background; its loader child holds the probes."""

    def __init__(self, workdir: Path, server_pid: int, probes: str, cap_s: float, name: str,
                 extra: tuple[str, ...] = ()):
        super().__init__(workdir, name)
        self.server_pid, self.probes, self.cap_s = server_pid, probes, cap_s
        self.extra = [*extra, *RECORD_ARGS]
        self.out = workdir / name
        self.loader_pid: int | None = None

    def describe(self) -> str:
        return " ".join(["innostall record --probes", self.probes, *self.extra])

    def start(self) -> None:
        # --duration only caps a run we fail to stop; the window ends it with SIGINT.
        self.launch([INNOSTALL, "record", "--pid", str(self.server_pid), "--probes", self.probes,
                     "-o", str(self.out), "--duration", str(int(self.cap_s)), *self.extra])

    def attached(self) -> bool:
        """The journal's "attached" line: the loader has placed every probe."""
        with contextlib.suppress(OSError):
            with open(self.out / "journal.jsonl") as f:
                if re.search(r'"type"\s*:\s*"attached"', f.read(1 << 20)):
                    self.loader_pid = self.find_loader()
                    return True
        return False

    def find_loader(self) -> int | None:
        return next((pid for pid in children(self.proc.pid) if self.is_my_loader(pid)), None)

    def is_my_loader(self, pid: int) -> bool:
        """pid is an innostall-loader tracing our server (not a reused pid)."""
        try:
            with open(f"/proc/{pid}/cmdline") as f:
                args = f.read().split("\0")
            return os.readlink(f"/proc/{pid}/exe").endswith("innostall-loader") and \
                str(self.server_pid) in args and alive(pid)
        except OSError:
            return False

    def pids(self) -> dict[str, int]:
        pids = {"python": self.proc.pid}
        if self.loader_pid:
            pids["loader"] = self.loader_pid
        return pids

    def stop(self) -> None:
        self.finish()
        self.summarise()

    def finish(self) -> None:
        """SIGINT, and wait until it has written the recording and exited."""
        super().stop()

    def summarise(self) -> None:
        self.result.update(recording_summary(self.out))
        if self.result.get("exit_status"):
            raise BenchError(f"{self.describe()} exited with {self.result['exit_status']}: "
                             f"{self.log_tail()}")

    def kill(self) -> None:
        super().kill()
        # The loader dies with the recorder (PR_SET_PDEATHSIG); make sure all the same.
        if self.loader_pid and self.is_my_loader(self.loader_pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.loader_pid, signal.SIGINT)


class Bpftrace(Tracer):
    """bpftrace -p PID running the script `innostall bpftrace` generated."""

    def __init__(self, workdir: Path, server_pid: int, script: Path):
        super().__init__(workdir, "bpftrace")
        self.server_pid, self.script = server_pid, script

    def describe(self) -> str:
        return "bpftrace"

    def start(self) -> None:
        self.launch(["bpftrace", "-p", str(self.server_pid), str(self.script)])

    def attached(self) -> bool:
        """It says "Attaching N probes" before it attaches them: attached once it holds a
        perf event for each (bpftrace 0.17 makes one per probe, BEGIN included)."""
        with contextlib.suppress(OSError):
            m = re.search(r"Attaching (\d+) probes", self.log_path.read_text())
            if m and perf_events(self.proc.pid) >= int(m.group(1)):
                self.result["probes_attached"] = int(m.group(1))
                return True
        return False

    def stop(self) -> None:
        super().stop()
        if self.result.get("exit_status"):
            raise BenchError(f"bpftrace exited with {self.result['exit_status']}: {self.log_tail()}")


def bpftrace_script(server_pid: int, probes: str) -> str:
    """`innostall bpftrace` for the server: the script the bpftrace arm runs."""
    selection = ["--probes", probes] if probes else []  # empty: all probes
    result = subprocess.run([INNOSTALL, "bpftrace", "--pid", str(server_pid), *selection],
                            capture_output=True, text=True)
    if result.returncode:
        raise BenchError(f"innostall bpftrace: {result.stderr.strip()}")
    return result.stdout


def drop_counts(node, path: str = "") -> dict[str, float]:
    """Every count in a report summary whose name says events were lost."""
    found = {}
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "governor":
                continue  # its probe sampling is not lost events
            where = f"{path}.{key}" if path else key
            if isinstance(value, (int, float)) and re.search(r"drop|lost|map_full", key):
                found[where] = value
            else:
                found.update(drop_counts(value, where))
    return found


def recording_summary(out: Path) -> dict:
    """Drops and the governor's accounts from `innostall report --json`; the recording
    itself is deleted, as those of the worst case grow large."""
    result = subprocess.run([INNOSTALL, "report", str(out), "--json"], capture_output=True, text=True)
    if result.returncode:
        return {"report_error": result.stderr.strip()}
    summary = json.loads(result.stdout)
    found = {"drops": drop_counts(summary)}
    if "governor" in summary:
        found["governor"] = summary["governor"]
    shutil.rmtree(out, ignore_errors=True)
    return found
