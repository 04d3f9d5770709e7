#!/usr/bin/env python3
"""make bench: what tracing with innostall costs the server it traces.

1. microbenchmark: the loader's own probe-hit calibration (innostall-loader --calibrate);
2. steady load: one continuous sysbench oltp_read_write run, at half its untraced capacity,
   while the arms none, default, exact (the default set with --exact), full (innostall
   record --probes SET) and bpftrace (the equivalent bpftrace script) take turns, one
   window each;
3. performance_schema: its latch instruments off and on, toggled live under the same kind
   of load, for scale;
4. worst case: a full scan inside an old snapshot over long version chains, untraced, under
   each probe set and under the bpftrace script.

On a small, noisy machine TPS swings more than any probe costs, so the main metric is the
server's CPU time per transaction: uprobe and BPF time is charged to the traced thread.
Every comparison is interleaved: each traced window lies between two untraced ones, and
gives a ratio B/A against their mean (a slow drift cancels out), summarised as median,
min and max. Writes bench/results.json and bench/results.md and prints the ratios and the
targets. Runs as root; durations are the constants below, each with an env override.
"""
from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pymysql


def env_number(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


ROUNDS = int(env_number("BENCH_ROUNDS", 7))            # A/B pairs per comparison (>= 5)
WINDOW_S = env_number("BENCH_WINDOW", 12)              # measured seconds per steady window
SETTLE_S = env_number("BENCH_SETTLE", 2)               # after an arm switch, before measuring
SCAN_TARGET_S = env_number("BENCH_SCAN", 5)            # untraced worst-case scan to build up to
MAX_UPDATE_S = env_number("BENCH_MAX_UPDATE", 240)     # cap on growing the version chains
RECORD_LEAD_S = env_number("BENCH_RECORD_LEAD", 2)     # recorder attached this long before a scan

SERVER = "mariadb-11.4.5"
STEADY_LOAD = ("2", "20000")                           # fixture.sh load TABLES ROWS
SYSBENCH_THREADS = 8
RATE_SHARE = env_number("BENCH_RATE_SHARE", 0.5)       # steady load's rate: this share of the
                                                       # untraced capacity; 0: flat out
CAPACITY_S = 15                                        # the capacity run, warm-up included
CAPACITY_WARMUP_S = 4
WORST_ROWS = 200000                                    # the seed's table size
WORST_POOL = "2G"                                      # buffer pool of the worst-case phase
HOT_ROWS = 2000                                        # the updates cycle over ids 1..HOT_ROWS
UPDATE_BATCH = 500                                     # rows per UPDATE (one transaction)
QUIET_CORES = 0.1                                      # an idle server uses less than this
QUIET_MAX_S = 60
ATTACH_TIMEOUT_S = 60
STOP_TIMEOUT_S = 60
CALIBRATE_TIMEOUT_S = 300
# a subset of calibrate,steady,pfs,worst, for dev runs
PHASES = os.environ.get("BENCH_PHASES", "calibrate,steady,pfs,worst").split(",")
RECORD_ARGS = shlex.split(os.environ.get("BENCH_RECORD_ARGS", ""))
# The bpftrace arm traces the same probes as the default set, so the two compare like for like.
BPFTRACE_PROBES = os.environ.get("BENCH_BPFTRACE_PROBES", "default")

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "scripts" / "fixture.sh"
TOOLS = Path(sys.prefix).parent                        # the build dir whose venv runs us
INNOSTALL = str(Path(sys.prefix) / "bin" / "innostall")
LOADER = str(TOOLS / "innostall-loader")
OUT_DIR = REPO / "bench"
TICKS = os.sysconf("SC_CLK_TCK")
SCAN_SQL = "SELECT avg(k) FROM sbtest1 FORCE INDEX (PRIMARY)"  # PRIMARY holds the chains

# default: the default set within the cost budget; exact: the same with the governor off
# (--exact), what the budget saves; full: every probe; bpftrace: the default set's script
STEADY_ARMS = tuple(os.environ.get("BENCH_STEADY_ARMS", "default,exact,full,bpftrace").split(","))
SCAN_ARMS = ("default", "full", "bpftrace")


class BenchError(Exception):
    """A step failed; the phase it belongs to is reported as failed and the run goes on."""


class LoadFailed(BenchError):
    """The phase's sysbench ended: no later window of the phase can be measured."""


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


# --- processes -----------------------------------------------------------------------

def proc_stat_fields(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()  # the name in () may hold spaces


def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of pid so far."""
    fields = proc_stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / TICKS


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def machine_ticks() -> tuple[int, int]:
    """(busy, all) CPU ticks of the whole machine, to see what else ran in a window."""
    with open("/proc/stat") as f:
        ticks = [int(t) for t in f.readline().split()[1:9]]  # user .. steal; guest is in user
    idle = ticks[3] + ticks[4]  # idle + iowait
    return sum(ticks) - idle, sum(ticks)


def children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if entry.isdigit() and int(proc_stat_fields(int(entry))[1]) == pid:
                kids.append(int(entry))
    return kids


def alive(pid: int) -> bool:
    try:
        return proc_stat_fields(pid)[0] != "Z"
    except OSError:
        return False


def signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def reap(proc: subprocess.Popen, timeout: float) -> bool:
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=timeout)
        return True
    return False


def end_process(proc: subprocess.Popen, first_signal: int) -> None:
    """first_signal to its process group, then SIGKILL if it is still there after a while."""
    if proc.returncode is not None or proc.poll() is not None:
        return
    signal_group(proc, first_signal)
    if not reap(proc, STOP_TIMEOUT_S):
        signal_group(proc, signal.SIGKILL)
        reap(proc, 10)


def fixture(*args: str) -> str:
    result = subprocess.run([str(FIXTURE), SERVER, *args], capture_output=True, text=True)
    if result.returncode:
        raise BenchError(f"fixture.sh {SERVER} {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def first_line(*cmd: str) -> str:
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except OSError as e:
        return f"unavailable: {e}"
    lines = (result.stdout or result.stderr).strip().splitlines()
    return lines[0] if lines else ""


# --- the server ----------------------------------------------------------------------

class Server:
    """The fixture server, its pid and one connection for counters and settings."""

    def __init__(self):
        self.pid = int(fixture("pid"))
        self.socket = fixture("socket")
        self.conn = self.connect()

    def connect(self) -> pymysql.Connection:
        return pymysql.connect(unix_socket=self.socket, user="innostall", password="",
                               database="sbtest", autocommit=True)

    def query(self, sql: str, conn: pymysql.Connection | None = None) -> list[tuple]:
        with (conn or self.conn).cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def transactions(self) -> int:
        # The server's own count, read at the same instant as its CPU time: sysbench's
        # per-second lines run on sysbench's clock and would not line up with the window.
        rows = self.query("SELECT SUM(VARIABLE_VALUE) FROM information_schema.GLOBAL_STATUS "
                          "WHERE VARIABLE_NAME IN ('COM_COMMIT', 'COM_ROLLBACK')")
        return int(rows[0][0])

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()


def start_server(*options: str) -> Server:
    """A clean start: stop whatever runs, then start with only these options added."""
    fixture("stop")
    fixture("start", *options)
    return Server()


# --- the continuous load -------------------------------------------------------------

REPORT_LINE = re.compile(r"^\[ *(\d+)s \].*tps: ([\d.]+).*lat \(ms,95%\): ([\d.]+)")


class Load:
    """One sysbench run for a whole phase. Its per-second lines are stamped with our clock
    on arrival, so a window can pick the seconds that lie inside it."""

    def __init__(self, test: str, seconds: int, *extra: str):
        self.proc = subprocess.Popen(
            [str(FIXTURE), SERVER, "sysbench", test, str(seconds), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.seconds: list[tuple[float, float, float]] = []  # (arrival, tps, p95 ms)
        self.tail: list[str] = []
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self) -> None:
        for line in self.proc.stdout:
            self.tail = (self.tail + [line.rstrip()])[-20:]
            m = REPORT_LINE.match(line)
            if m:
                self.seconds.append((time.monotonic(), float(m.group(2)), float(m.group(3))))

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise LoadFailed("sysbench ended early:\n  " + "\n  ".join(self.tail[-8:]))

    def p95_within(self, start: float, end: float) -> tuple[float | None, int]:
        """Median of the per-second p95 latencies of the seconds wholly inside [start, end]."""
        inside = [p95 for arrived, _, p95 in self.seconds if start + 0.95 <= arrived <= end + 0.1]
        return (statistics.median(inside) if inside else None), len(inside)

    def stop(self) -> None:
        end_process(self.proc, signal.SIGTERM)


def steady_load(seconds: int, rate: int = 0) -> Load:
    """sysbench oltp_read_write, flat out or at a fixed rate of transactions per second."""
    return Load("oltp_read_write", seconds, f"--threads={SYSBENCH_THREADS}",
                "--rand-type=pareto", "--report-interval=1", *([f"--rate={rate}"] if rate else []))


def steady_rate(bench: Bench, phase: str) -> int:
    """The rate the steady load runs at: RATE_SHARE of what the untraced server does flat out.
    A saturated server's CPU per transaction follows its throughput, which swings ±15% from
    one window to the next here; below capacity the same work costs the same CPU."""
    if not RATE_SHARE:
        return 0
    load = steady_load(CAPACITY_S + 5)
    try:
        time.sleep(CAPACITY_S)
        load.check()
        tps = [t for arrived, t, _ in load.seconds[CAPACITY_WARMUP_S:]]
    finally:
        load.stop()
    if not tps:
        raise BenchError("the capacity run printed no per-second lines")
    capacity = statistics.median(tps)
    rate = max(1, round(capacity * RATE_SHARE))
    bench.results.setdefault("capacity", {})[phase] = {"tps": round(capacity, 1), "rate": rate}
    log(f"  capacity {capacity:.0f} tps untraced; steady load at {rate} tps")
    return rate


# --- tracers -------------------------------------------------------------------------

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
        peaks = {name: 0.0 for name in pids}
        self.proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline:
            for name, pid in pids.items():
                with contextlib.suppress(OSError, ValueError):
                    peaks[name] = max(peaks[name], peak_rss_mb(pid))
            done, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if done:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                # wait4's usage covers the process and the children it reaped (the loader)
                lifetime = time.monotonic() - self.launched
                cpu = usage.ru_utime + usage.ru_stime
                self.result.update(lifetime_s=round(lifetime, 2), lifetime_cpu_s=round(cpu, 2),
                                   lifetime_cpu_percent=round(cpu / lifetime * 100, 2),
                                   lifetime_max_rss_mb=round(usage.ru_maxrss / 1024, 1))
                break
            time.sleep(0.02)
        else:
            self.kill()
            raise BenchError(f"{self.describe()} ignored SIGINT for {STOP_TIMEOUT_S} s; killed")
        self.result["peak_rss_mb"] = {name: round(mb, 1) for name, mb in peaks.items()}
        self.result["exit_status"] = self.proc.returncode

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
        super().stop()
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


def perf_events(pid: int) -> int:
    """Perf event file descriptors the process holds."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]"
    return count


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
    result = subprocess.run([INNOSTALL, "report", str(out), "--json"], capture_output=True, text=True)
    if result.returncode:
        return {"report_error": result.stderr.strip()}
    summary = json.loads(result.stdout)
    found = {"drops": drop_counts(summary)}
    if "governor" in summary:
        found["governor"] = summary["governor"]
    shutil.rmtree(out, ignore_errors=True)  # recordings of the worst case grow large
    return found


# --- measurement ---------------------------------------------------------------------

def snapshot(server: Server, tracer: Tracer | None) -> dict:
    return {"t": time.monotonic(), "server_cpu_s": cpu_seconds(server.pid),
            "transactions": server.transactions(), "tracer_cpu_s": tracer.cpu() if tracer else {},
            "machine_ticks": machine_ticks()}


def tracer_cpu_percent(before: dict, after: dict, seconds: float) -> dict[str, float]:
    shares = {name: (after["tracer_cpu_s"][name] - cpu) / seconds * 100
              for name, cpu in before["tracer_cpu_s"].items() if name in after["tracer_cpu_s"]}
    if shares:
        shares["total"] = sum(shares.values())
    return {name: round(share, 2) for name, share in shares.items()}


def window_numbers(before: dict, after: dict, load: Load) -> dict:
    seconds = after["t"] - before["t"]
    cpu = after["server_cpu_s"] - before["server_cpu_s"]
    trx = after["transactions"] - before["transactions"]
    p95, p95_seconds = load.p95_within(before["t"], after["t"])
    busy, ticks = (a - b for a, b in zip(after["machine_ticks"], before["machine_ticks"]))
    return {"seconds": round(seconds, 3), "server_cpu_s": round(cpu, 3), "transactions": trx,
            "cpu_per_trx_us": round(cpu / trx * 1e6, 2) if trx else None,
            "tps": round(trx / seconds, 1), "p95_ms": p95, "p95_seconds_used": p95_seconds,
            "tracer_cpu_percent": tracer_cpu_percent(before, after, seconds),
            "machine_busy_cores": round(busy / ticks * os.cpu_count(), 2) if ticks else None}


def measure(server: Server, load: Load, tracer: Tracer | None) -> dict:
    time.sleep(SETTLE_S)
    before = snapshot(server, tracer)
    time.sleep(WINDOW_S)
    after = snapshot(server, tracer)
    load.check()
    if tracer and tracer.proc.poll() is not None:
        raise BenchError(f"{tracer.describe()} ended during the window: {tracer.log_tail()}")
    if tracer:  # the steady-state peak, before shutdown writes the recording's tables
        tracer.result["window_end_rss_mb"] = tracer.peaks()
    return window_numbers(before, after, load)


class Bench:
    """The state of one run: the server, the tracers alive, the results so far."""

    def __init__(self):
        self.workdir = Path(tempfile.mkdtemp(prefix="innostall-bench-"))
        self.server: Server | None = None
        self.load: Load | None = None
        self.tracer: Tracer | None = None
        self.snapshot_conn: pymysql.Connection | None = None
        self.results: dict = {"errors": []}

    @contextlib.contextmanager
    def traced(self, tracer: Tracer | None):
        """The tracer attached for the body; stopped (SIGINT) however the body ends."""
        if tracer is None:
            yield None
            return
        self.tracer = tracer
        try:
            tracer.start()
            tracer.wait_attached()
            yield tracer
        finally:
            try:
                tracer.stop()
            finally:
                tracer.kill()
                self.tracer = None

    def new_tracer(self, arm: str, cap_s: float, name: str) -> Tracer | None:
        """A recorder for a probe set, bpftrace, or None for the untraced arms."""
        if arm == "bpftrace":
            return Bpftrace(self.workdir, self.server.pid, self.workdir / "innostall.bt")
        if arm in ("default", "full"):
            return Recorder(self.workdir, self.server.pid, arm, cap_s, name)
        if arm == "exact":
            return Recorder(self.workdir, self.server.pid, "default", cap_s, name, ("--exact",))
        return None

    def start_server(self, *options: str) -> None:
        self.server = start_server(*options)
        version = self.server.query("SELECT VERSION()")[0][0]
        self.results.setdefault("server_version", version)

    def window(self, phase: str, rnd: int, arm: str) -> dict:
        cap = SETTLE_S + WINDOW_S + ATTACH_TIMEOUT_S + 60
        tracer = self.new_tracer(arm, cap, f"{phase}-{rnd}-{arm}")
        entry = {"phase": phase, "round": rnd, "arm": arm}
        try:
            with self.traced(tracer):
                entry.update(measure(self.server, self.load, tracer))
        except LoadFailed:
            raise
        except BenchError as e:
            entry["error"] = str(e)
            log(f"  {arm}: {e}")
        if tracer:
            entry["tracer"] = tracer.result
        show_window(entry)
        return entry

    def stop_all(self) -> None:
        """Tracers first (SIGINT, so probes detach), then the load, the snapshot, the server."""
        if self.tracer:
            self.tracer.kill()
        if self.load:
            self.load.stop()
            self.load = None
        if self.snapshot_conn:
            with contextlib.suppress(Exception):
                self.snapshot_conn.close()
            self.snapshot_conn = None
        if self.server:
            self.server.close()
            self.server = None

    def cleanup(self) -> None:
        self.stop_all()
        with contextlib.suppress(BenchError):
            fixture("stop")
        shutil.rmtree(self.workdir, ignore_errors=True)


def show_window(w: dict) -> None:
    if "error" in w:
        return
    extra = ""
    cpu = w.get("tracer_cpu_percent", {}).get("total")
    if cpu is not None:
        extra = f"  tracer {cpu:.1f}% of a core"
    log(f"  {w['phase']} round {w['round']} {w['arm']:<9} cpu/trx {w['cpu_per_trx_us']} us  "
        f"tps {w['tps']}  p95 {w['p95_ms']} ms{extra}")


# --- comparisons ---------------------------------------------------------------------

def spread(values: list[float]) -> dict:
    if not values:
        return {"ratios": [], "median": None, "min": None, "max": None, "pairs": 0}
    return {"ratios": [round(v, 4) for v in values], "median": round(statistics.median(values), 4),
            "min": round(min(values), 4), "max": round(max(values), 4), "pairs": len(values)}


def ratio(a, b) -> float | None:
    return b / a if a and b is not None else None


def baseline(sides: list[dict], metrics: tuple[str, ...]) -> dict:
    """The untraced figures of a traced window: the mean of the untraced windows either side,
    so that a load drifting slowly over a phase cancels out of the ratio."""
    sides = [w for w in sides if w and "error" not in w]
    return {m: statistics.mean(w[m] for w in sides) for m in metrics
            if sides and all(w.get(m) is not None for w in sides)}


def bracketed_pairs(sequence: list[dict], base_arm: str,
                    metrics: tuple[str, ...]) -> dict[str, list[tuple[dict, dict]]]:
    """(baseline, traced) per traced arm, from windows that alternate base, traced, base, ..."""
    pairs: dict[str, list[tuple[dict, dict]]] = {}
    for i, w in enumerate(sequence):
        if w["arm"] == base_arm or "error" in w:
            continue
        sides = [sequence[j] for j in (i - 1, i + 1)
                 if 0 <= j < len(sequence) and sequence[j]["arm"] == base_arm]
        base = baseline(sides, metrics)
        if base:
            pairs.setdefault(w["arm"], []).append((base, w))
    return pairs


def run_bracketed(out: list[dict], arms: tuple[str, ...], base_arm: str, measure) -> None:
    """Appends measure(round, arm) for base, arm, base, next arm, ... and a closing base, so
    that every traced window lies between two base ones; `out` keeps what was measured if
    a window raises."""
    for rnd in range(1, ROUNDS + 1):
        for arm in arms:
            out.append(measure(rnd, base_arm))
            out.append(measure(rnd, arm))
    out.append(measure(ROUNDS, base_arm))


def compare(pairs: list[tuple[dict, dict]], metrics: tuple[str, ...]) -> dict:
    """Per metric, the ratio B/A of each pair that has both numbers."""
    out = {}
    for metric in metrics:
        values = [ratio(a.get(metric), b.get(metric)) for a, b in pairs]
        out[metric] = spread([v for v in values if v is not None])
    return out


STEADY_METRICS = ("cpu_per_trx_us", "tps", "p95_ms")


# --- phase 1: microbenchmark ---------------------------------------------------------

def calibrate() -> dict:
    try:
        result = subprocess.run([LOADER, "--calibrate"], capture_output=True, text=True,
                                timeout=CALIBRATE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"status": "missing", "error": str(e)}
    for line in result.stdout.splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict) and record.get("type") == "calibration":
                return {"status": "ok", **record}
    error = result.stderr.strip() or f"exit status {result.returncode}, no calibration line"
    return {"status": "missing", "error": error}


def phase_calibrate(bench: Bench) -> None:
    log("phase 1: microbenchmark (innostall-loader --calibrate)")
    found = calibrate()
    bench.results["calibration"] = found
    if found["status"] != "ok":
        log(f"  calibration missing: {found['error']}")
    else:
        log("  " + json.dumps(found))


# --- phase 2: steady load ------------------------------------------------------------

def phase_seconds(windows: int, slow_windows: int) -> int:
    """A generous sysbench --time for a phase: it is stopped when the phase ends."""
    return int(windows * (SETTLE_S + WINDOW_S) + slow_windows * (ATTACH_TIMEOUT_S + 30) + 600)


def write_bpftrace_script(bench: Bench) -> None:
    probes = ["--probes", BPFTRACE_PROBES] if BPFTRACE_PROBES else []  # empty: all probes
    result = subprocess.run([INNOSTALL, "bpftrace", "--pid", str(bench.server.pid), *probes],
                            capture_output=True, text=True)
    if result.returncode:
        raise BenchError(f"innostall bpftrace: {result.stderr.strip()}")
    (bench.workdir / "innostall.bt").write_text(result.stdout)


def phase_steady(bench: Bench) -> None:
    log("phase 2: steady load, arms none/default/full/bpftrace")
    bench.start_server()
    fixture("load", *STEADY_LOAD)
    write_bpftrace_script(bench)
    traced = ROUNDS * len(STEADY_ARMS)
    bench.load = steady_load(phase_seconds(2 * traced + 1, traced), steady_rate(bench, "steady"))
    windows = []
    try:
        run_bracketed(windows, STEADY_ARMS, "none",
                      lambda rnd, arm: bench.window("steady", rnd, arm))
    finally:  # what was measured is kept if the phase fails
        pairs = bracketed_pairs(windows, "none", STEADY_METRICS)
        bench.results["steady"] = {"windows": windows,
                                   "comparisons": {f"{arm}/none": compare(pairs.get(arm, []),
                                                                          STEADY_METRICS)
                                                   for arm in STEADY_ARMS},
                                   "recorder": recorder_costs(windows)}
    bench.stop_all()


def recorder_costs(windows: list[dict]) -> dict:
    """Per recorder arm, over its windows: CPU share (% of one core), peak RSS, drops."""
    costs = {}
    for arm in ("default", "full"):
        mine = [w for w in windows if w["arm"] == arm and "error" not in w]
        cpu = [w["tracer_cpu_percent"].get("total", 0.0) for w in mine]
        drops = [sum(w["tracer"].get("drops", {}).values()) for w in mine]
        costs[arm] = {"cpu_percent_max": max(cpu, default=None),
                      "cpu_percent_median": statistics.median(cpu) if cpu else None,
                      **peak_rss(mine, "peak_rss_mb", ""),
                      **peak_rss(mine, "window_end_rss_mb", "_window_end"),
                      "drops_total": sum(drops), "windows": len(mine)}
    return costs


def peak_rss(windows: list[dict], key: str, suffix: str) -> dict:
    """The largest VmHWM of the recorder's python and of its loader over the windows."""
    found = [w["tracer"].get(key, {}) for w in windows]
    return {f"{proc}_rss_mb_max{suffix}": max((f.get(proc, 0.0) for f in found), default=None)
            for proc in ("python", "loader")}


# --- phase 3: performance_schema -----------------------------------------------------

LATCH_INSTRUMENTS = "NAME LIKE 'wait/synch/%'"


def pfs_consumers(server: Server) -> dict[str, str]:
    return dict(server.query("SELECT NAME, ENABLED FROM performance_schema.setup_consumers"))


def pfs_switch(server: Server, on: bool, startup_consumers: dict[str, str]) -> None:
    """on: every latch instrument enabled and timed, every consumer on. off: latch
    instruments off, consumers back as the server started."""
    flag = "YES" if on else "NO"
    server.query(f"UPDATE performance_schema.setup_instruments SET ENABLED='{flag}', "
                 f"TIMED='{flag}' WHERE {LATCH_INSTRUMENTS}")
    for name, enabled in startup_consumers.items():
        server.query(f"UPDATE performance_schema.setup_consumers SET ENABLED="
                     f"'{'YES' if on else enabled}' WHERE NAME='{name}'")


def phase_pfs(bench: Bench) -> None:
    log("phase 3: performance_schema latch instruments off/on")
    bench.start_server("--performance-schema=ON")
    fixture("load", *STEADY_LOAD)
    if bench.server.query("SELECT @@performance_schema")[0][0] != 1:
        raise BenchError("the server did not start with performance_schema on")
    consumers = pfs_consumers(bench.server)
    bench.load = steady_load(phase_seconds(2 * ROUNDS + 1, 0), steady_rate(bench, "pfs"))
    windows = []

    def switched_window(rnd: int, arm: str) -> dict:
        pfs_switch(bench.server, arm == "pfs_on", consumers)
        return bench.window("pfs", rnd, arm)
    try:
        run_bracketed(windows, ("pfs_on",), "pfs_off", switched_window)
    finally:
        pairs = bracketed_pairs(windows, "pfs_off", STEADY_METRICS).get("pfs_on", [])
        bench.results["pfs"] = {"windows": windows, "startup_consumers": consumers,
                                "comparisons": {"pfs_on/pfs_off": compare(pairs, STEADY_METRICS)}}
    bench.stop_all()


# --- phase 4: worst case -------------------------------------------------------------

def open_snapshot(server: Server) -> pymysql.Connection:
    conn = server.connect()
    server.query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", conn)
    server.query("START TRANSACTION WITH CONSISTENT SNAPSHOT", conn)
    return conn


def timed_scan(server: Server, conn: pymysql.Connection) -> float:
    started = time.monotonic()
    server.query(SCAN_SQL, conn)
    return time.monotonic() - started


def update_hot_rows(conn: pymysql.Connection, seconds: float, first_pass: int) -> tuple[int, int]:
    """Passes over the hot rows, UPDATE_BATCH rows per autocommit UPDATE, for about seconds.
    Each pass writes a new value, so every row gains one version per pass. -> (versions, passes)."""
    versions, passes = 0, 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        tag = f"pass {first_pass + passes}"
        for low in range(1, HOT_ROWS + 1, UPDATE_BATCH):
            high = min(low + UPDATE_BATCH - 1, HOT_ROWS)
            with conn.cursor() as cur:
                versions += cur.execute("UPDATE sbtest1 SET c = RPAD(%s, 120, '-') "
                                        "WHERE id BETWEEN %s AND %s", (tag, low, high))
        passes += 1
    return versions, passes


def grow_chains(server: Server, snapshot_conn: pymysql.Connection) -> dict:
    """Update until the snapshot's scan takes about SCAN_TARGET_S: chunks sized by assuming
    the scan time grows in proportion to the versions it rebuilds."""
    updater = server.connect()
    versions, passes, spent, scan = 0, 0, 0.0, timed_scan(server, snapshot_conn)
    chunk = min(10.0, MAX_UPDATE_S)
    growth = []
    while scan < 0.9 * SCAN_TARGET_S and spent < MAX_UPDATE_S:
        started = time.monotonic()
        more, more_passes = update_hot_rows(updater, chunk, passes)
        spent += time.monotonic() - started
        versions, passes = versions + more, passes + more_passes
        scan = timed_scan(server, snapshot_conn)
        growth.append({"versions": versions, "update_s": round(spent, 1), "scan_s": round(scan, 3)})
        log(f"  {versions} versions after {spent:.0f} s of updates: scan {scan:.2f} s")
        if not versions:
            raise BenchError("the hot-row updates changed no row")
        wanted = versions * SCAN_TARGET_S / scan
        # at most double the history per step: once undo pages fall out of the buffer pool
        # the scan time grows much faster than the versions
        chunk = min(max((wanted - versions) * spent / versions, 2.0), spent, MAX_UPDATE_S - spent)
    updater.close()
    # every pass gives each hot row one more version
    return {"versions": versions, "chain_depth": passes, "update_s": round(spent, 1), "growth": growth}


def wait_quiet(server: Server) -> float:
    """Wait until the server, now without clients at work, uses under QUIET_CORES of CPU
    for a second: after the burst of updates it flushes pages for a while, which would
    slow the first scans only. -> seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < QUIET_MAX_S:
        before = cpu_seconds(server.pid)
        time.sleep(1)
        if cpu_seconds(server.pid) - before < QUIET_CORES:
            break
    return round(time.monotonic() - started, 1)


def scan_with(bench: Bench, rnd: int, arm: str) -> dict:
    cap = RECORD_LEAD_S + 50 * SCAN_TARGET_S + ATTACH_TIMEOUT_S + 120
    tracer = bench.new_tracer(arm, cap, f"worst-{rnd}-{arm}")
    entry = {"phase": "worst", "round": rnd, "arm": arm}
    try:
        with bench.traced(tracer):
            if tracer:
                time.sleep(RECORD_LEAD_S)
            entry["scan_s"] = round(timed_scan(bench.server, bench.snapshot_conn), 3)
    except BenchError as e:
        entry["error"] = str(e)
    if tracer:
        entry["tracer"] = tracer.result
    log(f"  worst round {rnd} {arm:<9} " + (f"scan {entry['scan_s']} s" if "scan_s" in entry
                                            else entry["error"]))
    return entry


def phase_worst(bench: Bench) -> None:
    log("phase 4: worst case, a scan under an old snapshot over long version chains")
    # A pool that holds the whole history: the seed's scan is CPU-bound (14 s for ~30 M
    # versions); with the default 128 MB pool it turns into minutes of undo page reads.
    bench.start_server(f"--innodb-buffer-pool-size={WORST_POOL}")
    fixture("load", "1", str(WORST_ROWS))
    write_bpftrace_script(bench)
    bench.snapshot_conn = open_snapshot(bench.server)
    chains = grow_chains(bench.server, bench.snapshot_conn)
    chains["quiet_wait_s"] = wait_quiet(bench.server)
    chains["warmup_scan_s"] = round(timed_scan(bench.server, bench.snapshot_conn), 3)
    scans = []
    try:
        run_bracketed(scans, SCAN_ARMS, "untraced", lambda rnd, arm: scan_with(bench, rnd, arm))
    finally:
        pairs = bracketed_pairs(scans, "untraced", ("scan_s",))
        bench.results["worst"] = {
            "updates_during_scans": "stopped: the chains are grown first, then the updates end "
                                    "and the snapshot stays open, so every scan rebuilds the "
                                    "same versions",
            "chains": chains, "scans": scans,
            "comparisons": {f"{arm}/untraced": compare(pairs.get(arm, []), ("scan_s",))
                            for arm in SCAN_ARMS}}
    bench.stop_all()


# --- targets -------------------------------------------------------------------------

def median_of(results: dict, section: str, comparison: str, metric: str) -> float | None:
    found = results.get(section, {}).get("comparisons", {}).get(comparison, {})
    return found.get(metric, {}).get("median")


def percent_extra(ratio_median: float | None) -> str:
    return "n/a" if ratio_median is None else f"{(ratio_median - 1) * 100:+.2f}%"


def target(name: str, figure: str, ok: bool | None) -> dict:
    verdict = "n/a" if ok is None else ("PASS" if ok else "FAIL")
    return {"target": name, "measured": figure, "result": verdict}


def extra_target(name: str, ratio_median: float | None, limit: float) -> dict:
    """Passes when the median ratio is at most 1 + limit."""
    ok = None if ratio_median is None else ratio_median - 1 <= limit
    return target(name, percent_extra(ratio_median), ok)


def targets(results: dict) -> list[dict]:
    cpu = {arm: median_of(results, "steady", f"{arm}/none", "cpu_per_trx_us") for arm in STEADY_ARMS}
    scan = {arm: median_of(results, "worst", f"{arm}/untraced", "scan_s") for arm in SCAN_ARMS}
    return [extra_target("default set: <= 1% extra server CPU/trx (steady)", cpu.get("default"), 0.01),
            extra_target("worst-case scan: <= 5% slower with the default set", scan.get("default"), 0.05),
            extra_target("full set: <= 5% extra server CPU/trx (steady)", cpu.get("full"), 0.05),
            bpftrace_target("CPU/trx, steady", cpu.get("default"), cpu.get("bpftrace")),
            bpftrace_target("worst-case scan time", scan.get("default"), scan.get("bpftrace")),
            *recorder_targets(results),
            drops_target(results)]


def bpftrace_target(what: str, default: float | None, bpftrace: float | None) -> dict:
    name = f"default set: >= 3x less extra than the bpftrace script ({what})"
    if default is None or bpftrace is None:
        return target(name, "n/a", None)
    ours, theirs = default - 1, bpftrace - 1
    factor = f" ({theirs / ours:.1f}x)" if ours > 0 and theirs > 0 else ""
    # Both within noise of zero is no evidence of a 3x gap: it passes only if bpftrace costs something.
    return target(name, f"ours {ours * 100:+.2f}%, bpftrace {theirs * 100:+.2f}%{factor}",
                  theirs > 0 and 3 * ours <= theirs)


def recorder_targets(results: dict) -> list[dict]:
    cost = results.get("steady", {}).get("recorder", {}).get("default", {})
    cpu = cost.get("cpu_percent_max")
    python, loader = cost.get("python_rss_mb_max"), cost.get("loader_rss_mb_max")
    rss = None if python is None or loader is None else max(python, loader)
    return [target("recorder (default set): < 5% of one core (worst window)",
                   "n/a" if cpu is None else f"{cpu:.2f}%", None if cpu is None else cpu < 5),
            target("recorder (default set): < 100 MB peak RSS (each process)",
                   "n/a" if rss is None else f"python {python:.1f} MB, loader {loader:.1f} MB",
                   None if rss is None else rss < 100)]


def drops_target(results: dict) -> dict:
    entries = results.get("steady", {}).get("windows", []) + results.get("worst", {}).get("scans", [])
    counted = [w["tracer"]["drops"] for w in entries
               if w["arm"] == "default" and "drops" in w.get("tracer", {})]
    total = sum(sum(d.values()) for d in counted)
    return target("default set: zero drops (steady and worst case)",
                  f"{total:g} in {len(counted)} recordings", total == 0 if counted else None)


# --- output --------------------------------------------------------------------------

def machine_info(version: str | None) -> dict:
    with open("/proc/cpuinfo") as f:
        model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "kernel": platform.release(), "nproc": os.cpu_count(), "cpu": model,
            "server": f"{SERVER} ({version})", "sysbench": first_line("sysbench", "--version"),
            "bpftrace": first_line("bpftrace", "--version"),
            "innostall": first_line(INNOSTALL, "--version"),
            "commit": first_line("git", "-C", str(REPO), "describe", "--always", "--dirty")}


def settings() -> dict:
    return {"phases": PHASES, "rounds": ROUNDS, "window_s": WINDOW_S, "settle_s": SETTLE_S,
            "scan_target_s": SCAN_TARGET_S, "max_update_s": MAX_UPDATE_S,
            "record_lead_s": RECORD_LEAD_S, "steady_load": STEADY_LOAD,
            "sysbench_threads": SYSBENCH_THREADS, "rate_share": RATE_SHARE,
            "worst_rows": WORST_ROWS, "hot_rows": HOT_ROWS,
            "update_batch": UPDATE_BATCH, "record_args": RECORD_ARGS,
            "bpftrace_probes": BPFTRACE_PROBES,
            "transactions": "server counters Com_commit + Com_rollback, read with the CPU time",
            "p95": "median of sysbench's per-second p95 lines that fall wholly inside the window",
            "recorder_cpu": "python + loader utime+stime over the measured window, % of one core"}


def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
                     for row in [header] + rows)


def md_table(header: list[str], rows: list[list[str]]) -> str:
    def line(cells):
        return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
    return "\n".join([line(header), "|" + "---|" * len(header)] + [line(r) for r in rows])


RATIO_HEADER = ["phase", "comparison (B/A)", "metric", "median", "min", "max", "pairs", "per pair"]
TARGET_HEADER = ["target", "measured", "result"]


def comparison_rows(results: dict) -> list[list[str]]:
    rows = []
    for section in ("steady", "pfs", "worst"):
        for name, metrics in results.get(section, {}).get("comparisons", {}).items():
            for metric, s in metrics.items():
                rows.append([section, name, metric, fmt(s["median"]), fmt(s["min"]), fmt(s["max"]),
                             str(s["pairs"]), " ".join(fmt(r) for r in s["ratios"])])
    return rows


def target_rows(results: dict) -> list[list[str]]:
    return [[t["target"], t["measured"], t["result"]] for t in results["targets"]]


def window_rows(windows: list[dict]) -> list[list[str]]:
    return [[w["phase"], str(w["round"]), w["arm"], fmt(w.get("seconds"), 1),
             fmt(w.get("server_cpu_s")), str(w.get("transactions", "-")),
             fmt(w.get("cpu_per_trx_us"), 1), fmt(w.get("tps"), 1), fmt(w.get("p95_ms"), 2),
             fmt(w.get("tracer_cpu_percent", {}).get("total"), 2),
             fmt(w.get("machine_busy_cores"), 2), w.get("error", "")] for w in windows]


def recorder_rows(costs: dict) -> list[list[str]]:
    return [[arm, fmt(c["cpu_percent_median"], 2), fmt(c["cpu_percent_max"], 2),
             fmt(c["python_rss_mb_max_window_end"], 1), fmt(c["loader_rss_mb_max_window_end"], 1),
             fmt(c["python_rss_mb_max"], 1), fmt(c["loader_rss_mb_max"], 1),
             fmt(c["drops_total"]), str(c["windows"])] for arm, c in costs.items()]


def governor_text(governor) -> str:
    """Its top-level figures, and the coverage of each probe group that has one."""
    if not isinstance(governor, dict):
        return json.dumps(governor)
    plain = {k: v for k, v in governor.items() if not isinstance(v, dict)}
    groups = governor.get("groups", {})
    coverage = {name: g["coverage"] for name, g in groups.items()
                if isinstance(g, dict) and "coverage" in g}
    return json.dumps(plain) + (f"; coverage {json.dumps(coverage)}" if coverage else "")


def governor_rows(results: dict) -> list[list[str]]:
    entries = results.get("steady", {}).get("windows", []) + results.get("worst", {}).get("scans", [])
    return [[w["phase"], str(w["round"]), w["arm"], governor_text(w["tracer"]["governor"])]
            for w in entries if "governor" in w.get("tracer", {})]


def scan_rows(scans: list[dict]) -> list[list[str]]:
    def drops(s):
        return fmt(sum(s["tracer"].get("drops", {}).values())) if "tracer" in s else "-"
    return [[str(s["round"]), s["arm"], fmt(s.get("scan_s")), drops(s), s.get("error", "")]
            for s in scans]


def md_rate(results: dict) -> str:
    capacity = results.get("capacity", {}).get("steady")
    if not capacity:
        return "flat out"
    return (f"at {capacity['rate']} tps ({100 * RATE_SHARE:g}% of the {capacity['tps']:g} tps the "
            "untraced server did flat out just before)")


def md_intro(results: dict) -> list[str]:
    m = results["machine"]
    return ["# innostall overhead benchmark (`make bench`)", "",
            f"{m['date']}: kernel {m['kernel']}, {m['nproc']} CPUs ({m['cpu']}), {m['server']}, "
            f"{m['sysbench']}, {m['bpftrace']}, {m['innostall']} at {m['commit']}; "
            f"{results['run_minutes']} min.", "",
            f"Settings: rounds {ROUNDS}; steady windows {SETTLE_S:g} s settle + {WINDOW_S:g} s "
            f"measured, sysbench oltp_read_write {SYSBENCH_THREADS} threads (pareto) on "
            f"{STEADY_LOAD[0]} x {STEADY_LOAD[1]} rows, {md_rate(results)}; worst-case scan "
            f"built up to {SCAN_TARGET_S:g} s untraced; record args {RECORD_ARGS or 'none'}; bpftrace script "
            f"for --probes {BPFTRACE_PROBES}.", "",
            "Ratios are B/A per traced window: B against the mean A of the untraced windows "
            "just before and just after it. CPU/trx is the "
            "server's utime+stime per transaction (Com_commit + Com_rollback, read at the same "
            "instants); p95 is the median of sysbench's per-second p95 lines inside the window. "
            "Machine busy cores is what the whole machine ran in a window (server, load, tracer "
            "and anything else): a window far above its neighbours was disturbed.", ""]


def md_recorder(results: dict) -> list[str]:
    if "steady" not in results:
        return []
    header = ["arm", "CPU % of a core (median)", "CPU % (max)", "python peak RSS MB, window end",
              "loader, window end", "python peak RSS MB, at exit", "loader, at exit", "drops",
              "windows"]
    return ["## Recorder cost (steady load, measured windows)", "",
            md_table(header, recorder_rows(results["steady"]["recorder"])), "",
            "Peak RSS is VmHWM, read at the end of the window while recording, and again until "
            "the process exits (after it has written the recording's tables); the RSS target "
            "uses the latter.", ""]


def md_worst(results: dict) -> list[str]:
    if "worst" not in results:
        return []
    w, c = results["worst"], results["worst"]["chains"]
    return ["## Worst case", "",
            f"{WORST_ROWS} rows; {c['versions']} versions over ids 1..{HOT_ROWS} (chains "
            f"{c['chain_depth']} deep) from {c['update_s']} s of updates; the server was quiet "
            f"{c['quiet_wait_s']} s later; warm-up scan "
            f"{c['warmup_scan_s']} s. Updates during the scans: {w['updates_during_scans']}.", "",
            md_table(["round", "arm", "scan s", "drops", "error"], scan_rows(w["scans"])), ""]


def markdown(results: dict) -> str:
    governors = governor_rows(results)
    windows = results.get("steady", {}).get("windows", []) + results.get("pfs", {}).get("windows", [])
    window_header = ["phase", "round", "arm", "s", "server CPU s", "trx", "CPU/trx us", "TPS",
                     "p95 ms", "tracer CPU %", "machine busy cores", "error"]
    parts = md_intro(results) + [
        "## Targets", "", md_table(TARGET_HEADER, target_rows(results)), "",
        "## Ratios", "", md_table(RATIO_HEADER, comparison_rows(results)), "",
        "## Microbenchmark (innostall-loader --calibrate)", "",
        "```", json.dumps(results.get("calibration"), indent=2), "```", ""]
    parts += md_recorder(results) + [
        "## Governor (from `innostall report --json`)", "",
        md_table(["phase", "round", "arm", "governor"], governors) if governors
        else "Not present in the recordings.", "",
        "## Windows", "", md_table(window_header, window_rows(windows)), ""]
    parts += md_worst(results)
    if results["errors"]:
        parts += ["## Errors", ""] + [f"- {e}" for e in results["errors"]] + [""]
    return "\n".join(parts)


def write_results(results: dict) -> None:
    OUT_DIR.mkdir(exist_ok=True)
    (OUT_DIR / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (OUT_DIR / "results.md").write_text(markdown(results))


def print_summary(results: dict) -> None:
    print("\nRatios (B/A per pair)")
    print(text_table(RATIO_HEADER, comparison_rows(results)))
    print("\nTargets")
    print(text_table(TARGET_HEADER, target_rows(results)))
    for error in results["errors"]:
        print(f"error: {error}")
    print(f"\nwrote {OUT_DIR / 'results.json'} and {OUT_DIR / 'results.md'}")


# --- main ----------------------------------------------------------------------------

def exit_on_signal(signum, frame):
    raise KeyboardInterrupt  # SIGTERM and SIGHUP clean up like Ctrl-C


def run_phase(bench: Bench, phase) -> None:
    try:
        phase(bench)
    except (BenchError, pymysql.MySQLError) as e:
        bench.results["errors"].append(f"{phase.__name__}: {e}")
        log(f"{phase.__name__} failed: {e}")
        bench.stop_all()


def main() -> int:
    if os.geteuid() != 0:
        print("bench: needs root (uprobes, BPF and bpftrace)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, exit_on_signal)
    signal.signal(signal.SIGHUP, exit_on_signal)
    bench = Bench()
    started = time.monotonic()
    try:
        log(f"fresh {SERVER} datadir (fixture.sh init)")
        fixture("init")
        for phase in (phase_calibrate, phase_steady, phase_pfs, phase_worst):
            if phase.__name__.removeprefix("phase_") in PHASES:
                run_phase(bench, phase)
    except KeyboardInterrupt:
        log("interrupted: stopping tracers, load and server; results not written")
        return 130
    except BenchError as e:
        log(f"bench: {e}")
        return 1
    finally:
        bench.cleanup()
    results = bench.results
    results.update(machine=machine_info(results.pop("server_version", None)), settings=settings(),
                   run_minutes=round((time.monotonic() - started) / 60, 1))
    results["targets"] = targets(results)
    write_results(results)
    print_summary(results)
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
