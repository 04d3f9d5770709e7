"""Phase 2, steady load: one sysbench run at a fixed rate while the arms take turns, each
traced window between two untraced ones; the recorder's own CPU and memory on the side."""
from __future__ import annotations

import statistics

from ..bracketing import comparisons, run_bracketed
from ..harness import Bench
from ..load import phase_seconds
from ..log import log
from ..server import fixture
from ..settings import BPFTRACE_PROBES, ROUNDS, STEADY_ARMS, STEADY_LOAD

# CPU per transaction is the verdict, in yardstick blocks (the machine's speed taken out) and
# raw; TPS and p95 show the load held its rate and latency.
STEADY_METRICS = ("cpu_per_trx_blocks", "cpu_per_trx_us", "tps", "p95_ms")


def phase_steady(bench: Bench) -> None:
    log("phase 2: steady load, arms none/default/full/bpftrace")
    bench.start_server()
    fixture("load", *STEADY_LOAD)
    bench.write_bpftrace_script(BPFTRACE_PROBES)
    traced = ROUNDS * len(STEADY_ARMS)
    bench.start_steady_load("steady", phase_seconds(2 * traced + 1, traced))
    windows = []
    try:
        run_bracketed(windows, STEADY_ARMS, "none",
                      lambda rnd, arm: bench.window("steady", rnd, arm))
    finally:  # what was measured is kept if the phase fails
        bench.results["steady"] = {
            "windows": windows,
            "comparisons": comparisons(windows, "none", STEADY_ARMS, STEADY_METRICS),
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
