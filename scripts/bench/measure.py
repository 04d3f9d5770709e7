"""One measured window: what the server spent per transaction while a tracer (or none) was
attached, read from /proc and the server's own counters at both ends of the window."""
from __future__ import annotations

import os
import time

from .errors import BenchError
from .load import Load
from .procfs import cpu_seconds, machine_ticks
from .server import BenchServer
from .settings import SETTLE_S, WINDOW_S
from .tracers import Tracer
from .yardstick import Yardstick


def snapshot(server: BenchServer, tracer: Tracer | None) -> dict:
    return {"t": time.monotonic(), "server_cpu_s": cpu_seconds(server.pid),
            "transactions": server.transactions(), "tracer_cpu_s": tracer.cpu() if tracer else {},
            "machine_ticks": machine_ticks()}


def tracer_cpu_percent(before: dict, after: dict, seconds: float) -> dict[str, float]:
    """Per tracer process, and in total, its CPU over the window in % of one core."""
    shares = {name: (after["tracer_cpu_s"][name] - cpu) / seconds * 100
              for name, cpu in before["tracer_cpu_s"].items() if name in after["tracer_cpu_s"]}
    if shares:
        shares["total"] = sum(shares.values())
    return {name: round(share, 2) for name, share in shares.items()}


def per_block(cpu_per_trx_us: float | None, block_us: float | None) -> float | None:
    """The server's CPU per transaction in yardstick blocks: the same work costs the same
    number of blocks when the machine as a whole runs faster or slower."""
    return round(cpu_per_trx_us / block_us, 5) if cpu_per_trx_us and block_us else None


def window_numbers(before: dict, after: dict, load: Load, yardstick: Yardstick | None) -> dict:
    seconds = after["t"] - before["t"]
    cpu = after["server_cpu_s"] - before["server_cpu_s"]
    trx = after["transactions"] - before["transactions"]
    p95, p95_seconds = load.p95_within(before["t"], after["t"])
    busy, ticks = (a - b for a, b in zip(after["machine_ticks"], before["machine_ticks"]))
    cpu_per_trx = round(cpu / trx * 1e6, 2) if trx else None
    block = yardstick.block_us(before["t"], after["t"]) if yardstick else None
    return {"seconds": round(seconds, 3), "server_cpu_s": round(cpu, 3), "transactions": trx,
            "cpu_per_trx_us": cpu_per_trx, "yardstick_block_us": block,
            "cpu_per_trx_blocks": per_block(cpu_per_trx, block),
            "tps": round(trx / seconds, 1), "p95_ms": p95, "p95_seconds_used": p95_seconds,
            "tracer_cpu_percent": tracer_cpu_percent(before, after, seconds),
            "machine_busy_cores": round(busy / ticks * os.cpu_count(), 2) if ticks else None}


def measure(server: BenchServer, load: Load, tracer: Tracer | None,
            yardstick: Yardstick | None = None) -> dict:
    """SETTLE_S for the arm switch to pass, then a window of WINDOW_S. A window in which the
    load or the tracer ended is no measurement of the arm, and raises."""
    time.sleep(SETTLE_S)
    before = snapshot(server, tracer)
    time.sleep(WINDOW_S)
    after = snapshot(server, tracer)
    load.check()
    if tracer and tracer.proc.poll() is not None:
        raise BenchError(f"{tracer.describe()} ended during the window: {tracer.log_tail()}")
    if tracer:  # the steady-state peak, before shutdown writes the recording's tables
        tracer.result["window_end_rss_mb"] = tracer.peaks()
    return window_numbers(before, after, load, yardstick)
