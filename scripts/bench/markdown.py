"""bench/results/latest.md: the run's settings, targets, ratios, and every window and scan."""
from __future__ import annotations

import json

from . import accuracy, unsampled
from .stall_costs import summary
from .settings import (BPFTRACE_PROBES, HOT_ROWS, RATE_SHARE, RECORD_ARGS, ROUNDS, SCAN_TARGET_S,
                       SETTLE_S, STEADY_LOAD, SYSBENCH_THREADS, WINDOW_S, WORST_ROWS)
from .tables import RATIO_HEADER, TARGET_HEADER, comparison_rows, fmt, md_table, target_rows

WINDOW_HEADER = ["phase", "round", "arm", "s", "server CPU s", "trx", "CPU/trx us",
                 "yardstick block us", "CPU/trx in blocks", "TPS", "p95 ms", "tracer CPU %",
                 "machine busy cores", "error"]
RECORDER_HEADER = ["arm", "CPU % of a core (median)", "CPU % (max)", "python peak RSS MB, window end",
                   "loader, window end", "python peak RSS MB, at exit", "loader, at exit", "drops",
                   "windows"]


def window_rows(windows: list[dict]) -> list[list[str]]:
    return [[w["phase"], str(w["round"]), w["arm"], fmt(w.get("seconds"), 1),
             fmt(w.get("server_cpu_s")), str(w.get("transactions", "-")),
             fmt(w.get("cpu_per_trx_us"), 1), fmt(w.get("yardstick_block_us"), 1),
             fmt(w.get("cpu_per_trx_blocks"), 3), fmt(w.get("tps"), 1), fmt(w.get("p95_ms"), 2),
             fmt(w.get("tracer_cpu_percent", {}).get("total"), 2),
             fmt(w.get("machine_busy_cores"), 2), w.get("error", "")] for w in windows]


def recorder_rows(costs: dict) -> list[list[str]]:
    return [[arm, fmt(c["cpu_percent_median"], 2), fmt(c["cpu_percent_max"], 2),
             fmt(c["python_rss_mb_max_window_end"], 1), fmt(c["loader_rss_mb_max_window_end"], 1),
             fmt(c["python_rss_mb_max"], 1), fmt(c["loader_rss_mb_max"], 1),
             fmt(c["drops_total"]), str(c["windows"])] for arm, c in costs.items()]


def governor_rows(results: dict) -> list[list[str]]:
    entries = results.get("steady", {}).get("windows", []) + results.get("worst", {}).get("scans", [])
    return [[w["phase"], str(w["round"]), w["arm"], unsampled.governor_text(w["tracer"]["governor"])]
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
            "instants); CPU/trx in blocks is the same divided by the yardstick's CPU time per block "
            "over the window (scripts/bench/yardstick.c, a fixed piece of work timed beside the "
            "server), which takes the machine's own speed swings out; the steady targets read it. "
            "p95 is the median of sysbench's per-second p95 lines inside the window. "
            "Machine busy cores is what the whole machine ran in a window (server, load, tracer "
            "and anything else): a window far above its neighbours was disturbed.", ""]


def md_recorder(results: dict) -> list[str]:
    if "steady" not in results:
        return []
    return ["## Recorder cost (steady load, measured windows)", "",
            md_table(RECORDER_HEADER, recorder_rows(results["steady"]["recorder"])), "",
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


def md_startup(results: dict) -> list[str]:
    if "startup" not in results:
        return []
    rows = [[str(r["round"]), fmt(r.get("untraced_tps"), 1),
             *[fmt(r[s]["ratio"]) + f" ({r[s]['seconds']} s)" if s in r else "-"
               for s in ("launch", "attached", "stop")],
             json.dumps(r.get("recorder", {}).get("governor", {}).get("hit_cost_ns", {})),
             fmt(r.get("recorder", {}).get("governor", {}).get("overhead_pct")), r.get("error", "")]
            for r in results["startup"]["rounds"]]
    return ["## Start and finish under a flat-out load", "",
            "TPS of each stretch against the mean of the untraced stretches before the launch "
            "and after the exit; launch runs to the attach (calibration included), attached is "
            "the first seconds traced, stop runs from SIGINT to the exit (tables written).", "",
            md_table(["round", "untraced TPS", "launch", "attached", "stop", "hit cost ns",
                      "estimated %", "error"], rows), ""]


def md_governor(results: dict) -> list[str]:
    governors = governor_rows(results)
    return ["## Governor (from `innostall report --json`)", "",
            md_table(["phase", "round", "arm", "governor"], governors) if governors
            else "Not present in the recordings.", ""]


def md_windows(results: dict) -> list[str]:
    windows = results.get("steady", {}).get("windows", []) + results.get("pfs", {}).get("windows", [])
    return ["## Windows", "", md_table(WINDOW_HEADER, window_rows(windows)), ""]


def md_stall(results: dict) -> list[str]:
    """The hot-row stall phase: each recording's watch of the stall, bank and signals."""
    found = results.get("stall", {}).get("recordings", [])
    if not found:
        return []
    return (["## Hot-row stall mid-recording (issue 44)", ""] +
            [f"- round {r['round']} {r['arm']}: {summary(r)}" for r in found] + [""])


def md_accuracy(results: dict) -> list[str]:
    found = results.get("accuracy")
    if not found:
        return []
    return ["## Accuracy: the default's figures against --exact at the same moments (issue 44)", "",
            f"Steady load at {found['rate_tps']} tps, {found['seconds']} s. A figure off by more than 15% "
            "is an estimate with that error.", "", *accuracy.lines(found["rows"]), ""]


def md_budgets(results: dict) -> list[str]:
    return (["## Each recording's estimate against its budget", ""] +
            [f"- {line}" for line in unsampled.budget_lines(unsampled.bench_recordings(results))] + [""])


def md_errors(results: dict) -> list[str]:
    if not results["errors"]:
        return []
    return ["## Errors", ""] + [f"- {e}" for e in results["errors"]] + [""]


def markdown(results: dict) -> str:
    parts = md_intro(results) + [
        "## Targets", "", md_table(TARGET_HEADER, target_rows(results)), "",
        "## Ratios", "", md_table(RATIO_HEADER, comparison_rows(results)), "",
        "## Microbenchmark (innostall-loader --calibrate)", "",
        "```", json.dumps(results.get("calibration"), indent=2), "```", ""]
    parts += md_startup(results) + md_recorder(results) + md_governor(results) + md_windows(results)
    parts += md_worst(results) + md_stall(results) + md_accuracy(results) + md_budgets(results) + md_errors(results)
    return "\n".join(parts)
