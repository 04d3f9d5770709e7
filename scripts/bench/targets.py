"""The README's targets, judged from the medians of the comparisons: PASS, FAIL, UNSURE (the
median passes, but its 90% interval reaches past the limit), or n/a where the phase did not
run or had no pair."""
from __future__ import annotations

import statistics

from .settings import SCAN_ARMS, STEADY_ARMS


def median_of(results: dict, section: str, comparison: str, metric: str) -> float | None:
    found = results.get(section, {}).get("comparisons", {}).get(comparison, {})
    return found.get(metric, {}).get("median")


def percent_extra(ratio_median: float | None) -> str:
    return "n/a" if ratio_median is None else f"{(ratio_median - 1) * 100:+.2f}%"


def target(name: str, figure: str, ok: bool | None) -> dict:
    verdict = "n/a" if ok is None else ("PASS" if ok else "FAIL")
    return {"target": name, "measured": figure, "result": verdict}


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
            return {**target(name, figure, None), "result": "UNSURE"}
        ok = high <= limit
    return target(name, figure, ok)


def estimate_target(results: dict) -> dict:
    """The governor's estimate within a third of what the server paid, on the default set:
    the median of the windows' estimates against the median measured extra CPU/trx."""
    name = "default set: the governor's estimate within a third of the measured (steady)"
    measured = comparison_of(results, "steady", "default/none", "cpu_per_trx_us").get("median")
    estimates = sorted(w["tracer"]["governor"]["overhead_pct"]
                       for w in results.get("steady", {}).get("windows", [])
                       if w["arm"] == "default" and w.get("tracer", {}).get("governor"))
    if measured is None or not estimates:
        return target(name, "n/a", None)
    paid, guess = (measured - 1) * 100, statistics.median(estimates)
    return target(name, f"estimate {guess:.2f}%, measured {paid:+.2f}%",
                  abs(guess - paid) <= abs(paid) / 3)


def targets(results: dict) -> list[dict]:
    cpu = {arm: median_of(results, "steady", f"{arm}/none", "cpu_per_trx_us") for arm in STEADY_ARMS}
    scan = {arm: median_of(results, "worst", f"{arm}/untraced", "scan_s") for arm in SCAN_ARMS}
    default = comparison_of(results, "steady", "default/none", "cpu_per_trx_us")
    return [extra_target("default set: <= 1% extra server CPU/trx (steady)", cpu.get("default"), 0.01,
                         default.get("median_90")),
            estimate_target(results),
            extra_target("worst-case scan: <= 5% slower with the default set", scan.get("default"), 0.05),
            extra_target("full set: <= 5% extra server CPU/trx (steady)", cpu.get("full"), 0.05),
            bpftrace_target("CPU/trx, steady", cpu.get("default"), cpu.get("bpftrace")),
            bpftrace_target("worst-case scan time", scan.get("default"), scan.get("bpftrace")),
            *recorder_targets(results),
            *startup_targets(results),
            drops_target(results)]


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
