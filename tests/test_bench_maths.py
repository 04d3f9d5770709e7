"""make bench's pairing: each traced window is compared with the mean of the untraced
windows either side of it, so a load that drifts steadily over a phase cancels out."""
from __future__ import annotations

from bench import bracketing  # scripts/bench/, on sys.path from conftest


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
                                                "max": None, "pairs": 0}
