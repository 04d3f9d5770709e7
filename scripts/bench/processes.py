"""Ending the process groups the bench starts, and asking tools for their versions."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from .settings import STOP_TIMEOUT_S


def signal_group(proc: subprocess.Popen, sig: int) -> None:
    """Every process started with start_new_session=True shares the group of its pid."""
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


def first_line(*cmd: str) -> str:
    """The first line a command prints (stdout, else stderr): a version, for the results."""
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except OSError as e:
        return f"unavailable: {e}"
    lines = (result.stdout or result.stderr).strip().splitlines()
    return lines[0] if lines else ""
