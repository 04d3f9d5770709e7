"""A sampled count's estimate of the whole (analysis/estimates.py): each interval scaled by
the share of it the group was watched, on a recording whose true counts the test knows.
scripts/bench/sampled_vs_exact.py measures the same against an --exact recording."""
from __future__ import annotations

import pandas as pd

from bench import accuracy  # scripts/bench/, on sys.path from conftest
from innostall.analysis import estimates
from innostall.analysis.wording import estimate_words

GROUP, PROBE = "latch", "block_lock_s"


class Sampled:
    """What the estimate reads of a recording: its counters per interval and the group its
    probe was sampled in."""

    def __init__(self, seen: list[int], share: list[float], length_s: float = 1.0):
        rows = []
        for i, (n, a) in enumerate(zip(seen, share)):
            t = (i + 1) * length_s
            rows += [(i, t, "block_waits_s", n), (i, t, f"governor.attached_ns.{GROUP}", int(a * length_s * 1e9))]
        self.counters = pd.DataFrame(rows, columns=["interval", "t_s", "name", "value"])
        self.duration_s = len(seen) * length_s
        self.meta = {"governor": {"attachments": [{"probes": [PROBE], "group": GROUP}]}}

    def counter_total(self, name: str) -> int:
        return int(self.counters.loc[self.counters["name"] == name, "value"].sum())


def test_each_interval_is_scaled_by_its_own_watched_share():
    # 1,000 events a second throughout; busy intervals were watched briefly, quiet ones long
    share = [0.1, 0.5, 1.0, 0.25]
    rec = Sampled([int(1000 * a) for a in share], share)
    found = estimates.estimated_total(rec, ["block_waits_s"], PROBE)
    assert found["seen"] == 1850 and round(found["estimated"]) == 4000


def test_an_interval_barely_watched_is_taken_at_the_others_rate():
    # the third interval was watched 1% of the time and saw one event: scaled alone it
    # would say 100; at the other intervals' rate it is 1,000
    rec = Sampled([500, 500, 1, 500], [0.5, 0.5, 0.01, 0.5])
    assert round(estimates.estimated_total(rec, ["block_waits_s"], PROBE)["estimated"]) == 4000


def test_a_group_attached_all_along_has_no_estimate_its_count_is_whole():
    assert estimates.estimated_total(Sampled([10, 10], [1.0, 1.0]), ["block_waits_s"], PROBE) is None


def test_the_words_give_each_figure_in_its_unit():
    said = estimate_words.estimate_words({"total_wait_s": 1.62, "waits": 1234.4}, {"total_wait_s": "s", "waits": "waits"})
    assert said == "about 1.620 s (its error not measured), 1,234 waits (its error not measured)"
    errors = {"total_wait_s": {"low": -0.094, "high": 0.033, "runs": 2}, "waits": {"low": -0.755, "high": -0.649, "runs": 2}}
    said = estimate_words.estimate_words({"total_wait_s": 1.62, "waits": 1234.4, "errors": errors},
                                         {"total_wait_s": "s", "waits": "waits"})
    assert said == "about 1.620 s (make bench: 9% low to 3% high), 1,234 waits (make bench: 65–76% low)"


def test_each_estimated_count_has_its_error_from_make_bench_where_it_measures_it():
    # the report's estimated figures and make bench's accuracy rows name the same figures
    kept = estimates.measured_errors()
    assert kept and all(e["low"] <= e["high"] and e["runs"] >= 1 for e in kept.values())
    for (probe, figure), name in estimates.BENCH_FIGURES.items():
        assert name in {f for f, _, _ in accuracy.COUNTS}, name
        if name in kept:
            assert estimates.measured_error(probe, figure) == kept[name]
    assert estimate_words.estimate_words(None, {"waits": "waits"}) == ""
