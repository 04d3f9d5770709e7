"""The BPF loader process (collector/loader/loader.c): find it, start it, read its snapshots."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from functools import cache

from innostall import resources
from innostall.errors import UserError
from innostall.format.schema import Schema


def loader_path() -> str:
    candidates = [os.environ.get("INNOSTALL_LOADER"), str(resources.loader()),
                  shutil.which("innostall-loader")]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    raise UserError(resources.how_to_get("innostall-loader") + " (or set INNOSTALL_LOADER)")


@cache
def schema() -> Schema:
    """The measurement schema the loader's BPF programs produce (innostall.h); asked once
    per process, as the loader does not change under it."""
    done = subprocess.run([loader_path(), "--schema"], capture_output=True, text=True)
    if done.returncode:
        raise UserError(f"innostall-loader --schema failed: {done.stderr.strip() or done.returncode}")
    return Schema.parse(json.loads(done.stdout))


def start(binary: str, pid: int | None, attach: list[str], interval_s: float,
          duration_s: float | None, stderr, settings: dict[str, int] | None = None,
          layout: list[str] | None = None, budget_ppm: int = 0,
          extra: list[str] | None = None, fed: bool = False) -> subprocess.Popen:
    """settings: `const volatile` globals of the BPF programs, e.g. deep_walk_threshold.
    layout: MEMBER=VALUE of the server's struct layout the latch programs read.
    budget_ppm: what the probes may cost, in millionths of the server's CPU; 0: no limit.
    fed: a signal is fed on its standard input (a pipe then, proc.stdin; state_signals.h)."""
    cmd = [loader_path(), "--binary", binary, "--interval-ms", str(int(interval_s * 1000)),
           "--budget-ppm", str(budget_ppm)]
    if pid:
        cmd += ["--pid", str(pid)]
    if duration_s:
        cmd += ["--duration-ms", str(int(duration_s * 1000))]
    for spec in attach:
        cmd += ["--attach", spec]
    for name, value in (settings or {}).items():
        cmd += ["--set", f"{name}={int(value)}"]
    for member in layout or []:
        cmd += ["--layout", member]
    cmd += extra or []
    # Its own session: a terminal's Ctrl-C reaches only us, and we end it cleanly.
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True,
                            stdin=subprocess.PIPE if fed else None, start_new_session=True)


def snapshots(proc: subprocess.Popen):
    """Yield (raw line, parsed record) until the loader closes its output: snapshots, and
    events such as deep walks between them."""
    for line in proc.stdout:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # the loader was killed in the middle of a line
            continue
        yield line, record


def end_reason(proc: subprocess.Popen) -> str:
    """Why the loader ended when it printed no end line: killed, or exited on its own."""
    if proc.returncode is not None and proc.returncode < 0:
        return f"loader killed by {signal.Signals(-proc.returncode).name}"
    return f"loader exited with status {proc.returncode}"


def failure(proc: subprocess.Popen, log_path: str) -> str:
    """The loader's last error line (it logs to log_path), or its exit status."""
    with open(log_path) as log:
        lines = [line.strip() for line in log if line.strip()]
    return lines[-1] if lines else f"innostall-loader exited with status {proc.returncode}"
