"""make bench's pairing: each traced window is compared with the mean of the untraced
windows either side of it, so a load that drifts steadily over a phase cancels out."""
from __future__ import annotations

from bench import bracketing, targets  # scripts/bench/, on sys.path from conftest


def windows(arms: list[str], cost: dict[str, float], drift: float) -> list[dict]:
    """CPU/trx that grows by `drift` per window, times the arm's own cost."""
    return [{"arm": arm, "cpu_per_trx_us": (1000 + drift * i) * cost[arm]}
            for i, arm in enumerate(arms)]


def test_a_steady_drift_cancels_out():
    arms = ["none", "default", "none", "full", "none", "default", "none", "full", "none"]
    sequence = windows(arms, {"none": 1.0, "default": 1.01, "full": 1.05}, drift=30)
    pairs = bracketing.bracketed_pairs(sequence, "none", ("cpu_per_trx_us",))
    ratios = {arm: bracketing.compare(p, ("cpu_per_trx_us",))["cpu_per_trx_us"] for arm, p in pairs.items()}
    assert ratios["default"]["ratios"] == [1.01, 1.01] and ratios["full"]["ratios"] == [1.05, 1.05]
    # paired with the window before it only, the drift would read as cost
    before_only = bracketing.compare([(sequence[0], sequence[1])], ("cpu_per_trx_us",))
    assert before_only["cpu_per_trx_us"]["median"] > 1.04


def test_failed_windows_and_a_missing_side():
    sequence = [{"arm": "none", "cpu_per_trx_us": 100.0}, {"arm": "full", "cpu_per_trx_us": 110.0},
                {"arm": "none", "error": "sysbench ended"}, {"arm": "full", "error": "no attach"},
                {"arm": "none", "cpu_per_trx_us": 120.0}, {"arm": "full", "cpu_per_trx_us": 126.0}]
    pairs = bracketing.bracketed_pairs(sequence, "none", ("cpu_per_trx_us",))
    # the first against its one good side, the failed one skipped, the last against the window before it
    assert [(a["cpu_per_trx_us"], b["cpu_per_trx_us"]) for a, b in pairs["full"]] == \
        [(100.0, 110.0), (120.0, 126.0)]


def test_every_traced_window_lies_between_two_base_ones():
    measured = []
    bracketing.run_bracketed(measured, ("default", "full"), "none", lambda rnd, arm: (rnd, arm),
                             rounds=2)
    assert measured == [(1, "none"), (1, "default"), (1, "none"), (1, "full"),
                        (2, "none"), (2, "default"), (2, "none"), (2, "full"), (2, "none")]


def test_comparisons_are_named_traced_over_base_and_empty_without_pairs():
    sequence = [{"arm": "untraced", "scan_s": 10.0}, {"arm": "default", "scan_s": 11.0},
                {"arm": "untraced", "scan_s": 12.0}, {"arm": "full", "error": "no attach"},
                {"arm": "untraced", "scan_s": 12.0}]
    found = bracketing.comparisons(sequence, "untraced", ("default", "full"), ("scan_s",))
    assert list(found) == ["default/untraced", "full/untraced"]
    assert found["default/untraced"]["scan_s"]["ratios"] == [1.0]
    assert found["full/untraced"]["scan_s"] == {"ratios": [], "median": None, "min": None,
                                                "max": None, "pairs": 0, "median_90": None}


def test_the_median_interval_is_the_widest_binomial_ranks_that_keep_90_percent():
    # 5 values: only min..max covers the median with >= 90% (1 - 2/32 = 93.75%)
    assert bracketing.median_interval([5, 1, 4, 2, 3]) == (1, 5)
    # 9 values: the 2nd..8th cover it with 96.1%, the 3rd..7th with only 82.0%
    assert bracketing.median_interval(list(range(1, 10))) == (2, 8)
    # 4 values reach 87.5% at best: no 90% interval
    assert bracketing.median_interval([1, 2, 3, 4]) is None
    assert bracketing.median_interval([1, 2, 3, 4], confidence=0.8) == (1, 4)


def test_an_overhead_target_is_judged_by_the_medians_interval():
    limit = 0.01
    inside = targets.extra_target("t", 1.004, limit, [0.998, 1.009])
    across = targets.extra_target("t", 1.004, limit, [0.990, 1.030])
    beyond = targets.extra_target("t", 1.040, limit, [1.020, 1.060])
    across_from_above = targets.extra_target("t", 1.049, limit, [0.985, 1.062])
    assert [t["result"] for t in (inside, across, beyond, across_from_above)] == \
        ["PASS", "UNSURE", "FAIL", "UNSURE"]
    assert across["measured"] == "+0.40% (90%: -1.00 … +3.00%)"
    assert targets.extra_target("t", 1.004, limit)["result"] == "PASS"  # no interval: the median's


def steady_results(arm: str, estimates: list[float], median: float, interval: list[float],
                   metric: str = "cpu_per_trx_blocks") -> dict:
    """What the steady phase leaves for one arm: its windows' estimates and its comparison."""
    windows = [{"arm": arm, "tracer": {"governor": {"overhead_pct": e}}} for e in estimates]
    comparison = {metric: {"median": median, "median_90": interval}}
    return {"steady": {"windows": windows, "comparisons": {f"{arm}/none": comparison}}}


def test_the_estimate_is_judged_against_the_measured_interval():
    """Within a third means paid in [3/4, 3/2] of the estimate: the whole interval inside
    passes, wholly outside fails, across either edge cannot tell."""
    def verdict(median, interval):
        found = steady_results("exact", [5.9, 6.0, 6.1], median, interval)
        return targets.estimate_target(found, "exact", "t")["result"]
    assert verdict(1.06, [1.050, 1.080]) == "PASS"
    assert verdict(1.06, [1.030, 1.080]) == "UNSURE"  # 3% < 4.5%, the lower edge
    assert verdict(1.08, [1.050, 1.100]) == "UNSURE"  # 10% > 9%, the upper edge
    assert verdict(1.12, [1.100, 1.140]) == "FAIL"    # wholly above 9%
    assert verdict(1.01, [0.990, 1.030]) == "FAIL"    # wholly below 4.5%


def test_the_steady_verdicts_read_the_speed_adjusted_cpu_where_there_is_one():
    adjusted = steady_results("default", [0.9], 1.004, [0.99, 1.02])
    adjusted["steady"]["comparisons"]["default/none"]["cpu_per_trx_us"] = \
        {"median": 1.05, "median_90": [1.0, 1.1]}
    assert targets.steady_cpu(adjusted, "default")["median"] == 1.004
    raw_only = steady_results("default", [0.9], 1.05, [1.0, 1.1], metric="cpu_per_trx_us")
    assert targets.steady_cpu(raw_only, "default")["median"] == 1.05
    assert targets.raw_note(adjusted, "default") == "; raw CPU/trx +5.00%"
    assert targets.raw_note(raw_only, "default") == ""


def test_a_never_sampled_probe_over_a_tenth_of_the_budget_is_named():
    """Issue 44, item 4, on a kept run (bench/results/2026-11-27/fit-checks.json): libc's
    pthread_cond_timedwait, then free_page_wait's probe, took a tenth of the budget in one
    steady recording, outside any sampled group; the run after it stayed under."""
    import json
    from bench import unsampled
    from conftest import REPO
    run = json.loads((REPO / "bench/results/2026-11-27/fit-checks.json").read_text())
    verdict = targets.unsampled_target(run)
    assert verdict["result"] == "FAIL" and "free_page_wait" in verdict["measured"], verdict
    named = [unsampled.text(g) for g in targets.default_windows(run, with_scans=True) if unsampled.over_limit(g)]
    assert named and all("free_page_wait" in line for line in named)
    lines = unsampled.recording_lines(run)
    assert len(lines) == len(named) and all(" default: free_page_wait " in line for line in lines), lines
    later = json.loads((REPO / "bench/results/2026-11-27/final-checks.json").read_text())
    assert targets.unsampled_target(later)["result"] == "PASS"
    none, = unsampled.recording_lines(later)
    assert none.startswith("none in ")


def test_the_stall_and_accuracy_phases_are_judged_from_the_kept_run():
    """Issue 44, items 1, 4 and 5, on the kept run bench/results/2026-11-29/stall-accuracy.json:
    the latch group's watch of the stall against 90% of its time, each stall recording's
    estimate against its budget (the emulated ones said so), and each sampled figure's error
    against 15%."""
    import json
    from bench import unsampled
    from conftest import REPO
    run = json.loads((REPO / "bench/results/2026-11-29/stall-accuracy.json").read_text())
    watch, budget = targets.stall_targets(run)
    shares = [r["watch"]["time"] for r in run["stall"]["recordings"]]
    assert watch["result"] == ("PASS" if min(shares) >= 0.9 else "FAIL"), watch
    spent = [r["estimate_ms"] / r["budget_ms"] for r in run["stall"]["recordings"]]
    assert budget["result"] == ("PASS" if max(spent) <= 1 else "FAIL"), budget
    lines = unsampled.budget_lines(unsampled.bench_recordings(run))
    assert len(lines) == len(run["stall"]["recordings"])
    assert sum("emulated" in line for line in lines) == sum(r["hit_cost_scale"] != 1 for r in run["stall"]["recordings"])
    rows = [r for r in run["accuracy"]["rows"] if r["within"] is not None]
    accuracy = targets.accuracy_target(run)
    assert accuracy["measured"].startswith(f"{sum(r['within'] for r in rows)} of {len(rows)} within"), accuracy
    assert accuracy["result"] == ("PASS" if all(r["within"] for r in rows) else "FAIL")
    # a recording over its budget is said to be
    over = {**run["stall"]["recordings"][0], "tracer": {"governor": {"overhead_ms": 2.0, "budget_ms": 1.0}}}
    said, = unsampled.budget_lines([over])
    assert "(2.00 of the budget, OVER)" in said
