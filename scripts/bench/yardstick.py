"""The machine's speed over a window, from the yardstick (yardstick.c) running beside the
server: its median CPU time per block. The steady phase divides the server's CPU per
transaction by it, so that the cores' own speed swings cancel out of a traced/untraced ratio."""
from __future__ import annotations

import signal
import statistics
import subprocess
import threading

from .errors import BenchError
from .processes import end_process
from .settings import YARDSTICK

NS_PER_US = 1000


class Yardstick:
    """The yardstick process, its blocks (monotonic end, CPU µs) collected as it prints them."""

    def __init__(self):
        try:
            self.proc = subprocess.Popen([YARDSTICK], stdout=subprocess.PIPE, text=True,
                                         start_new_session=True)
        except OSError as e:
            raise BenchError(f"cannot run the yardstick {YARDSTICK}: {e}") from e
        self.blocks: list[tuple[float, float]] = []
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self) -> None:
        for line in self.proc.stdout:
            ended_ns, cpu_ns = map(int, line.split())
            self.blocks.append((ended_ns / 1e9, cpu_ns / NS_PER_US))

    def block_us(self, start: float, end: float) -> float | None:
        """The median CPU µs of the blocks that ended in [start, end] (time.monotonic)."""
        inside = [cpu for ended, cpu in self.blocks if start <= ended <= end]
        return round(statistics.median(inside), 2) if inside else None

    def stop(self) -> None:
        end_process(self.proc, signal.SIGTERM)
