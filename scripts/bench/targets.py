"""The targets docs/overhead.md states, judged from the medians of the comparisons: PASS, FAIL, UNSURE (the
median passes, but its 90% interval reaches past the limit), or n/a where the phase did not
run or had no pair."""
from __future__ import annotations

import statistics

from . import unsampled
from .settings import SCAN_ARMS, STEADY_ARMS


def median_of(results: dict, section: str, comparison: str, metric: str) -> float | None:
    found = results.get(section, {}).get("comparisons", {}).get(comparison, {})
    return found.get(metric, {}).get("median")


def percent_extra(ratio_median: float | None) -> str:
    return "n/a" if ratio_median is None else f"{(ratio_median - 1) * 100:+.2f}%"


def target(name: str, figure: str, ok: bool | None) -> dict:
    verdict = "n/a" if ok is None else ("PASS" if ok else "FAIL")
    return {"target": name, "measured": figure, "result": verdict}


def unsure(name: str, figure: str) -> dict:
    """A verdict the pairs cannot give: the measured interval lies across the limit."""
    return {**target(name, figure, None), "result": "UNSURE"}


def comparison_of(results: dict, section: str, comparison: str, metric: str) -> dict:
    return results.get(section, {}).get("comparisons", {}).get(comparison, {}).get(metric, {})


def extra_target(name: str, ratio_median: float | None, limit: float,
                 interval: list[float] | None = None) -> dict:
    """Passes when the median ratio is at most 1 + limit. With the median's 90% interval
    (bracketing.median_interval), the verdict is the interval's: PASS wholly within the
    limit, FAIL wholly beyond it, and UNSURE across it, where the pairs cannot tell."""
    ok = None if ratio_median is None else ratio_median - 1 <= limit
    figure = percent_extra(ratio_median)
    if interval and ratio_median is not None:
        low, high = (v - 1 for v in interval)
        figure += f" (90%: {low * 100:+.2f} … {high * 100:+.2f}%)"
        if low <= limit < high:
            return unsure(name, figure)
        ok = high <= limit
    return target(name, figure, ok)


# The steady verdicts read the server's CPU per transaction in yardstick blocks (yardstick.py),
# where a window has it: the machine's own speed swings cancel out of it. Raw CPU/trx is shown beside.
STEADY_VERDICT_METRIC = "cpu_per_trx_blocks"


def steady_cpu(results: dict, arm: str) -> dict:
    """The arm's CPU/trx comparison against untraced: speed-adjusted where measured, else raw."""
    adjusted = comparison_of(results, "steady", f"{arm}/none", STEADY_VERDICT_METRIC)
    return adjusted if adjusted.get("median") is not None else \
        comparison_of(results, "steady", f"{arm}/none", "cpu_per_trx_us")


def raw_note(results: dict, arm: str) -> str:
    raw = comparison_of(results, "steady", f"{arm}/none", "cpu_per_trx_us").get("median")
    adjusted = comparison_of(results, "steady", f"{arm}/none", STEADY_VERDICT_METRIC).get("median")
    return "" if raw is None or adjusted is None else f"; raw CPU/trx {percent_extra(raw)}"


def median_estimate(results: dict, arm: str) -> float | None:
    """The median over the arm's steady windows of the governor's estimated overhead, in %."""
    estimates = [w["tracer"]["governor"]["overhead_pct"]
                 for w in results.get("steady", {}).get("windows", [])
                 if w["arm"] == arm and w.get("tracer", {}).get("governor")]
    return statistics.median(estimates) if estimates else None


def estimate_target(results: dict, arm: str, what: str) -> dict:
    """The governor's estimate within a third of what the server paid: |estimate - paid| <=
    paid/3, that is paid within [3/4, 3/2] of the estimate. PASS when the measured median's
    90% interval lies wholly inside that range, FAIL when wholly outside, UNSURE across it."""
    name = f"{what}: the governor's estimate within a third of the measured (steady)"
    measured, guess = steady_cpu(results, arm), median_estimate(results, arm)
    if measured.get("median") is None or guess is None:
        return target(name, "n/a", None)
    paid = (measured["median"] - 1) * 100
    low, high = 0.75 * guess, 1.5 * guess
    figure = f"estimate {guess:.2f}% (so {low:.2f} … {high:.2f}%), measured {paid:+.2f}%"
    interval = measured.get("median_90")
    if not interval:
        return target(name, figure, low <= paid <= high)
    lo, hi = ((v - 1) * 100 for v in interval)
    figure += f" (90%: {lo:+.2f} … {hi:+.2f}%)"
    if low <= lo and hi <= high:
        return target(name, figure, True)
    if hi < low or lo > high:
        return target(name, figure, False)
    return unsure(name, figure)


def one_percent_target(results: dict) -> dict:
    """Issue 29's: the median at most 1% extra CPU/trx, and its 90% interval's upper end at
    most 2% (two noisy cores cannot pin 1% closer than that)."""
    name = "default set: <= 1% extra server CPU/trx, 90% upper end <= 2% (steady)"
    measured = steady_cpu(results, "default")
    median, interval = measured.get("median"), measured.get("median_90")
    if median is None:
        return target(name, "n/a", None)
    figure = percent_extra(median) + raw_note(results, "default")
    if not interval:
        return target(name, figure, median - 1 <= 0.01)
    figure += f" (90%: {(interval[0] - 1) * 100:+.2f} … {(interval[1] - 1) * 100:+.2f}%)"
    return target(name, figure, median - 1 <= 0.01 and interval[1] - 1 <= 0.02)


def default_windows(results: dict, with_scans: bool = False) -> list[dict]:
    """The governor's account of each default-set recording in the steady phase (and the
    worst case's scans)."""
    entries = results.get("steady", {}).get("windows", []) + (
        results.get("worst", {}).get("scans", []) if with_scans else [])
    return [w["tracer"]["governor"] for w in entries
            if w["arm"] == "default" and isinstance(w.get("tracer", {}).get("governor"), dict)]


def coverage_target(results: dict) -> dict:
    """Every group of the default set attached >= 90% of the time, the median over the
    steady recordings; what is read from the server's memory instead needs no group."""
    name = "default set: every group attached >= 90% of the time (steady; read views from memory)"
    windows = default_windows(results)
    shares: dict[str, list[float]] = {}
    for governor in windows:
        for group, g in governor.get("groups", {}).items():
            if g.get("coverage") is not None:
                shares.setdefault(group, []).append(g["coverage"])
    if not shares:
        return target(name, "n/a", None)
    medians = {group: statistics.median(v) for group, v in shares.items()}
    short = sorted((share, group) for group, share in medians.items() if share < 0.9)
    figure = (", ".join(f"{group} {100 * share:.0f}%" for share, group in short) + " below"
              if short else f"all {len(medians)} at or above 90%") + f" ({len(windows)} recordings)"
    return target(name, figure, not short)


def budget_target(results: dict) -> dict:
    """No default-set recording estimated over its budget (ms against ms)."""
    windows = default_windows(results, with_scans=True)
    over = [g for g in windows if g.get("overhead_ms", 0) > g.get("budget_ms", float("inf"))]
    spent = [g["overhead_ms"] / g["budget_ms"] for g in windows if g.get("budget_ms")]
    figure = f"{len(over)} of {len(windows)} over" + (f" (at most {max(spent):.2f} of it spent)" if spent else "")
    return target("default set: no recording's estimate over its budget (steady, worst case)", figure,
                  not over if windows else None)


def unsampled_target(results: dict) -> dict:
    """No probe outside the sampled groups above a tenth of the budget in any default-set
    recording (its traps, unsampled.py), the worst one named."""
    windows = default_windows(results, with_scans=True)
    worst = max(((share, probe) for g in windows for probe, share in unsampled.shares(g).items()), default=None)
    over = sum(1 for g in windows if unsampled.over_limit(g))
    figure = f"{over} of {len(windows)} recordings with one" + (
        f" (at most {worst[1]} {100 * worst[0]:.0f}%)" if worst else "")
    return target("default set: no probe outside a sampled group above 10% of the budget (its traps; steady, "
                  "worst case)", figure, not over if windows else None)


def stall_targets(results: dict) -> list[dict]:
    """Issue 44's latch stall: the latch group attached >= 90% of the stall's time (its
    attached time over the stall's intervals; also said: the intervals it was attached in at
    all), and no stall recording over its budget, as calibrated and with traps emulated dearer."""
    found = results.get("stall", {}).get("recordings", [])
    if not found:
        return [target("hot-row stall: latch group attached >= 90% of the stall's time (default budget)", "n/a", None),
                target("hot-row stall: no recording's estimate over its budget (traps as calibrated and x3, "
                       "emulated)", "n/a", None)]
    shares = [r["watch"]["time"] for r in found]
    some = sum(sum(a > 0 for a in r["watch"]["intervals"]) for r in found)
    intervals = sum(len(r["watch"]["intervals"]) for r in found)
    spent = [r["estimate_ms"] / r["budget_ms"] for r in found if r["budget_ms"]]
    return [target("hot-row stall: latch group attached >= 90% of the stall's time (default budget)",
                   f"{100 * min(shares):.0f}-{100 * max(shares):.0f}% of its time over {len(found)} recordings; "
                   f"attached at all in {some} of {intervals} intervals", min(shares) >= 0.9),
            target("hot-row stall: no recording's estimate over its budget (traps as calibrated and x3, emulated)",
                   f"{sum(s > 1 for s in spent)} of {len(spent)} over (at most {max(spent):.2f} of it)",
                   all(s <= 1 for s in spent))]


def accuracy_target(results: dict) -> dict:
    """Every figure the report gives from a sampled group within 15% of --exact's."""
    rows = [r for r in results.get("accuracy", {}).get("rows", []) if r["within"] is not None]
    name = "default set: each sampled figure within 15% of --exact (same moments, fixed-rate steady load)"
    if not rows:
        return target(name, "n/a", None)
    off = [f"{r['figure']} {100 * r['error']:+.0f}%" for r in rows if not r["within"]]
    return target(name, f"{len(rows) - len(off)} of {len(rows)} within" + (f"; off: {', '.join(off)}" if off else ""),
                  not off)


def targets(results: dict) -> list[dict]:
    cpu = {arm: steady_cpu(results, arm).get("median") for arm in STEADY_ARMS}
    scan = {arm: median_of(results, "worst", f"{arm}/untraced", "scan_s") for arm in SCAN_ARMS}
    return [one_percent_target(results),
            coverage_target(results),
            budget_target(results),
            unsampled_target(results),
            estimate_target(results, "default", "default set"),
            estimate_target(results, "exact", "default set unbudgeted (--exact)"),
            extra_target("worst-case scan: <= 3% slower with the default set", scan.get("default"), 0.03),
            extra_target("full set: <= 5% extra server CPU/trx (steady)", cpu.get("full"), 0.05),
            bpftrace_target("CPU/trx, steady", cpu.get("default"), cpu.get("bpftrace")),
            bpftrace_target("worst-case scan time", scan.get("default"), scan.get("bpftrace")),
            *recorder_targets(results),
            *startup_targets(results),
            drops_target(results),
            *stall_targets(results),
            accuracy_target(results)]


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


def startup_targets(results: dict) -> list[dict]:
    """A start and a finish that cost the server little, and calibrations under load the
    governor can trust: none floored, no recording estimated over its budget."""
    found = results.get("startup", {}).get("summary")
    if not found or not found["recordings"]:
        return [target(name, "n/a", None) for name in (
            "start: >= 95% of untraced TPS from launch to attach (flat out)",
            "first 5 s attached: >= 95% of untraced TPS (flat out)",
            "finish: >= 95% of untraced TPS from SIGINT to exit (flat out)",
            "starts under load: no calibration floored, no estimate over the budget")]
    rows = [("start: >= 95% of untraced TPS from launch to attach (flat out)", found["launch"]),
            ("first 5 s attached: >= 95% of untraced TPS (flat out)", found["attached"]),
            ("finish: >= 95% of untraced TPS from SIGINT to exit (flat out)", found["stop"])]
    out = [target(name, f"{s['median']:.3f} ({s['min']:.3f}-{s['max']:.3f})",
                  s["median"] >= 0.95) for name, s in rows if s["median"] is not None]
    entry, ret = found["entry_ns"], found["return_ns"]
    out.append(target("starts under load: no calibration floored, no estimate over the budget",
                      f"{found['recordings']} recordings: entry {entry['min']}-{entry['max']} ns, "
                      f"return {ret['min']}-{ret['max']} ns, {found['floored']} floored, "
                      f"{found['over_budget']} over budget (at most {found['spent_of_budget_max']} "
                      f"of it spent; {found['overhead_pct_max']}% of the server's CPU)",
                      found["floored"] == 0 and found["over_budget"] == 0))
    return out
