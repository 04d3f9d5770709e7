"""Phase: a recorder's start and finish under load, and what each start calibrates.

The load runs flat out: a saturated server shows what a start takes from it in throughput,
where a fixed rate would absorb it. Each round marks instants on the server's own
transaction counter (Com_commit + Com_rollback, read with the clock): an untraced
stretch, the recorder's launch, its attach, the first seconds traced, its stop (SIGINT,
then the tables written) and an untraced stretch after. Each stretch's TPS is compared
with the mean of the untraced stretches either side, as the steady phase brackets its
windows. Every recording's calibration (per-hit cost, the rounds' spread, whether it was
floored) and its estimated overhead against the budget are kept: the budget holds only if
no start under load misjudges what a hit costs."""
from __future__ import annotations

import statistics
import time

from ..errors import BenchError
from ..harness import Bench
from ..load import steady_load
from ..log import log
from ..server import fixture
from ..settings import ATTACH_TIMEOUT_S, STARTUP_ROUNDS, STARTUP_STRETCH_S, STEADY_LOAD
from ..tracers import Recorder

STRETCHES = ("launch", "attached", "stop")  # each against the untraced stretches either side


def phase_startup(bench: Bench) -> None:
    log(f"phase: start and finish, {STARTUP_ROUNDS} recordings under a flat-out load")
    bench.start_server()
    fixture("load", *STEADY_LOAD)
    bench.load = steady_load(int(STARTUP_ROUNDS * (per_round_cap() + 60) + 60))
    rounds = []
    try:
        time.sleep(STARTUP_STRETCH_S)  # sysbench's own start is no baseline
        for rnd in range(1, STARTUP_ROUNDS + 1):
            rounds.append(one_round(bench, rnd))
    finally:  # what was measured is kept if the phase fails
        bench.results["startup"] = {"rounds": rounds, "summary": summarise(rounds)}
    bench.stop_all()


def one_round(bench: Bench, rnd: int) -> dict:
    """Untraced, launch (calibration and attach inside it), attached, stop, untraced."""
    server, load = bench.server, bench.load
    marks = {"before": mark(server)}
    time.sleep(STARTUP_STRETCH_S)
    recorder = Recorder(bench.workdir, server.pid, "default", per_round_cap(), f"startup-{rnd}")
    entry = {"round": rnd}
    try:
        marks["launch"] = mark(server)
        recorder.start()
        recorder.wait_attached()
        marks["attached"] = mark(server)
        time.sleep(STARTUP_STRETCH_S)
        marks["traced"] = mark(server)
        recorder.finish()
        marks["stopped"] = mark(server)
        recorder.summarise()
        time.sleep(STARTUP_STRETCH_S)
        marks["after"] = mark(server)
        load.check()
    except BenchError as e:
        entry["error"] = str(e)
        log(f"  round {rnd}: {e}")
    finally:
        recorder.kill()
    entry.update(stretches(marks), recorder=recorder.result)
    show_round(entry)
    return entry


def per_round_cap() -> float:
    return 4 * STARTUP_STRETCH_S + ATTACH_TIMEOUT_S


def mark(server) -> tuple[float, int]:
    return time.monotonic(), server.transactions()


def tps(a: tuple[float, int], b: tuple[float, int]) -> float:
    return (b[1] - a[1]) / (b[0] - a[0])


def stretches(marks: dict) -> dict:
    """TPS of each stretch, and its ratio to the untraced stretches either side."""
    if "after" not in marks:
        return {}
    base = statistics.mean([tps(marks["before"], marks["launch"]),
                            tps(marks["stopped"], marks["after"])])
    spans = {"launch": (marks["launch"], marks["attached"]),
             "attached": (marks["attached"], marks["traced"]),
             "stop": (marks["traced"], marks["stopped"])}
    out = {"untraced_tps": round(base, 1)}
    for name, (a, b) in spans.items():
        out[name] = {"seconds": round(b[0] - a[0], 2), "tps": round(tps(a, b), 1),
                     "ratio": round(tps(a, b) / base, 4) if base else None}
    return out


def calibration_of(entry: dict) -> dict:
    governor = entry.get("recorder", {}).get("governor", {})
    return {"cost": governor.get("hit_cost_ns", {}), "overhead_pct": governor.get("overhead_pct"),
            "overhead_ms": governor.get("overhead_ms"), "budget_ms": governor.get("budget_ms")}


def summarise(rounds: list[dict]) -> dict:
    """Per stretch the median ratio and its range; the calibrations' ranges; how many
    recordings estimated an overhead above their budget."""
    done = [r for r in rounds if "error" not in r and "launch" in r]
    out = {"recordings": len(done)}
    for name in STRETCHES:
        ratios = [r[name]["ratio"] for r in done if r[name]["ratio"] is not None]
        out[name] = {"median": round(statistics.median(ratios), 4) if ratios else None,
                     "min": min(ratios, default=None), "max": max(ratios, default=None),
                     "seconds_median": round(statistics.median(r[name]["seconds"] for r in done), 2)
                     if done else None}
    calibrations = [calibration_of(r) for r in done]
    for side in ("entry", "return"):
        costs = [c["cost"][side] for c in calibrations if side in c["cost"]]
        out[f"{side}_ns"] = {"min": min(costs, default=None), "max": max(costs, default=None),
                             "median": statistics.median(costs) if costs else None}
    out["floored"] = sum(1 for c in calibrations if c["cost"].get("floored"))
    estimated = [c for c in calibrations if c["overhead_ms"] is not None and c["budget_ms"]]
    out["overhead_pct_max"] = max((c["overhead_pct"] for c in estimated), default=None)
    out["spent_of_budget_max"] = max((round(c["overhead_ms"] / c["budget_ms"], 3) for c in estimated),
                                     default=None)
    out["over_budget"] = sum(1 for c in estimated if c["overhead_ms"] > c["budget_ms"])
    return out


def show_round(entry: dict) -> None:
    if "launch" not in entry:
        return
    cost = calibration_of(entry)["cost"]
    log(f"  round {entry['round']}: untraced {entry['untraced_tps']} tps; launch "
        f"{entry['launch']['ratio']} ({entry['launch']['seconds']} s), attached "
        f"{entry['attached']['ratio']}, stop {entry['stop']['ratio']} "
        f"({entry['stop']['seconds']} s); hit {cost.get('entry')}/{cost.get('return')} ns")
