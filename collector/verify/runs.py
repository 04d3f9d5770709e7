"""One run of verify: the load, recorded from just before it starts to just after it ends.
The recorder is innostall's own `record` in a child process, so a run is an ordinary
recording, reported, diffed and checked like any other."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from innostall.errors import UserError

ATTACH_TIMEOUT_S = 120  # discovery and calibration take 5-10 s; a cold DWARF cache longer
END_TIMEOUT_S = 300  # the recorder writes its tables after the load: minutes for an hour's recording


def attached(journal: str) -> bool:
    try:
        with open(journal, "rb") as f:
            return b'"type":"attached"' in f.read(1 << 20)
    except FileNotFoundError:
        return False


def wait_attached(recorder: subprocess.Popen, journal: str, log: str) -> None:
    deadline = time.monotonic() + ATTACH_TIMEOUT_S
    while not attached(journal):
        if recorder.poll() is not None or time.monotonic() > deadline:
            recorder.kill()
            recorder.wait()
            raise UserError(f"verify: the recording did not start: {last_line(log)}")
        time.sleep(0.1)


def last_line(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return "(no log)"
    return lines[-1] if lines else "(no output)"


def recorded_run(pid: int, load: str, out_dir: str, record_args: list[str]) -> str:
    """Records the server while the load runs (a shell command); the recording's directory.
    A load that fails makes the run worthless: one line, with its log."""
    log = out_dir + ".log"
    with open(log, "w") as log_file:
        recorder = subprocess.Popen([sys.executable, "-m", "innostall", "record", "--pid", str(pid), "-o", out_dir,
                                     *record_args], stdout=log_file, stderr=subprocess.STDOUT)
        try:
            wait_attached(recorder, os.path.join(out_dir, "journal.jsonl"), log)
            with open(out_dir + ".load.log", "w") as load_log:
                ran = subprocess.run(["bash", "-c", load], stdout=load_log, stderr=subprocess.STDOUT)
        finally:
            if recorder.poll() is None:
                recorder.send_signal(signal.SIGINT)
            try:
                recorder.wait(timeout=END_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                recorder.kill()
                recorder.wait()
    if ran.returncode != 0:
        raise UserError(f"verify: the load failed (exit {ran.returncode}): {last_line(out_dir + '.load.log')}")
    if recorder.returncode != 0:
        raise UserError(f"verify: the recording failed (exit {recorder.returncode}): {last_line(log)}")
    return out_dir
