"""The load: one sysbench run per phase, read line by line as it runs."""
from __future__ import annotations

import re
import signal
import statistics
import subprocess
import threading
import time

from fixture_servers import sysbench_command

from .errors import BenchError, LoadFailed
from .processes import end_process
from .settings import (ATTACH_TIMEOUT_S, CAPACITY_S, CAPACITY_WARMUP_S, SERVER, SETTLE_S,
                       SYSBENCH_THREADS, WINDOW_S)

REPORT_LINE = re.compile(r"^\[ *(\d+)s \].*tps: ([\d.]+).*lat \(ms,95%\): ([\d.]+)")


class Load:
    """One sysbench run for a whole phase. Its per-second lines are stamped with our clock
    on arrival, so a window can pick the seconds that lie inside it."""

    def __init__(self, test: str, seconds: int, *extra: str):
        self.proc = subprocess.Popen(
            sysbench_command(SERVER, test, seconds, *extra),
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


def capacity_tps() -> float:
    """What the untraced server does flat out: the median of the per-second TPS lines after
    the warm-up of a short unbounded run."""
    load = steady_load(CAPACITY_S + 5)
    try:
        time.sleep(CAPACITY_S)
        load.check()
        tps = [t for arrived, t, _ in load.seconds[CAPACITY_WARMUP_S:]]
    finally:
        load.stop()
    if not tps:
        raise BenchError("the capacity run printed no per-second lines")
    return statistics.median(tps)


def phase_seconds(windows: int, slow_windows: int) -> int:
    """A generous sysbench --time for a phase: it is stopped when the phase ends. Slow
    windows are those a tracer has to attach in first."""
    return int(windows * (SETTLE_S + WINDOW_S) + slow_windows * (ATTACH_TIMEOUT_S + 30) + 600)
