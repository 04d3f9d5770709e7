"""A purge phase names where its time went (CPU-, I/O-, latch-bound) only where the sleep
tracepoint watched half of that time or more, or a fifth in windows throughout it
(interval_columns.watched_enough); else it says how much was watched, and no bound. At the
default budget the tracepoint is sampled, and the largest part of a tenth of the time
watched is no cause."""
from __future__ import annotations

import pandas as pd

from conftest import REPO
from innostall.analysis import interval_columns, phase_figures, purge_time, recording, summary
from innostall.analysis.checks import verdict_check
from innostall.analysis.wording import phases

# MariaDB 11.4.5 at the default budget: the catch-up after a 20-s snapshot, its batches'
# time watched 11% by the sleep tracepoint (purge_sleeps sampled)
CATCH_UP = REPO / "tests" / "data" / "catch-up-server-reading"


def test_a_phase_watched_a_tenth_names_no_bound():
    told = summary.summary(recording.load(str(CATCH_UP)))
    seen = []
    for p in told["purge"]["phases"]:
        watched = p["figures"]["split_watched"]
        if watched is not None and watched < interval_columns.SAMPLED_ENOUGH and p["figures"]["batches"]:
            seen.append(p["verdict"])
            assert p["figures"]["bound"] is None and "-bound" not in p["detail"]
            if p["verdict"] in ("catching_up", "falling_behind"):  # the verdicts whose words say a bound
                assert f"purge's time was watched {100 * watched:.0f}% of it, too little to say where it went" \
                    in p["detail"]
    assert "catching_up" in seen


def test_the_checker_catches_a_bound_named_from_unwatched_time(monkeypatch):
    # unaltered, the checker holds it as every stored recording (test_verdict_consistency)
    # the words' bound as it was before the rule: from whatever the tracepoint watched
    monkeypatch.setattr(phase_figures, "rows_bound", lambda rows: purge_time.bound(
        purge_time.purge_split(purge_time.coordinator_split(rows), purge_time.worker_split(rows))))
    problems = verdict_check.check(str(CATCH_UP))
    assert any("catching_up" in p and "bound is" in p for p in problems), problems


def rows(**ns) -> pd.DataFrame:
    return pd.DataFrame([ns])


def test_io_is_the_page_reads_or_the_sleeps_on_io_whichever_is_more():
    # a slow disk at the default budget: the page-read probe attached a tenth of the time
    # the sleep tracepoint watched, so most reads' time would read as 'other'
    sampled = dict(purge_batch_split_ns=3_000, purge_batch_cpu_ns=100, purge_batch_io_ns=400,
                   purge_batch_latch_ns=150)
    assert purge_time.coordinator_split(rows(**sampled))["io"] == 400  # a recording before the sleeps were kept
    split = purge_time.coordinator_split(rows(**sampled, purge_batch_io_asleep_ns=2_000))
    assert split == {"cpu": 100, "io": 2_000, "latch": 150, "other": 750}
    assert purge_time.bound(split)[0] == "io"
    # every read watched: its time (its CPU inside the read too) is more than its sleeps
    assert purge_time.coordinator_split(rows(**{**sampled, "purge_batch_io_ns": 2_200},
                                             purge_batch_io_asleep_ns=2_000))["io"] == 2_200


def purge_rows(watched: list[float]) -> pd.DataFrame:
    """Intervals of 800 ms of purge batches, each watched whole the given share, all I/O."""
    return pd.DataFrame({"purge_batch_ns": [800.0] * len(watched), "purge_worker_ns": 0.0,
                         "purge_batch_split_ns": [800.0 * w for w in watched],
                         "purge_batch_io_asleep_ns": [600.0 * w for w in watched],
                         "purge_batch_cpu_ns": [40.0 * w for w in watched], "purge_batch_io_ns": 0.0,
                         "purge_batch_latch_ns": 0.0,
                         **{f"purge_worker_{part}_ns": 0.0 for part in ("split", "cpu", "io", "latch")}})


def test_a_sample_spread_over_the_phase_names_its_bound_a_few_edge_intervals_do_not():
    # a slow disk's purge at the default budget (test_verify_purge_threads_live): 400-ms
    # batches, the tracepoint's windows in 22 of 31 seconds, 46% of the time watched whole
    spread = purge_rows([0.5, 1.0, 0.0, 0.5, 0.0, 1.0, 0.5, 0.0, 0.5, 0.5] * 3 + [0.0])
    assert 0.4 < purge_time.split_watched(spread) < 0.5
    assert purge_time.rows_bound(spread) == ("io", 0.75)
    # as much watched, all of it in the phase's first two seconds: no cause
    edge = purge_rows([1.0] * 7 + [0.0] * 24)
    assert 0.2 < purge_time.split_watched(edge) < 0.5 and purge_time.rows_bound(edge) is None
    # a tenth, spread over every second: too little
    assert purge_time.rows_bound(purge_rows([0.1] * 31)) is None
    assert interval_columns.watched_enough(0.5, [True] + [False] * 30)  # half is enough wherever it fell
    # 16 of 34 seconds, some in each third (test_verify_purge_threads_live's run with the change)
    assert interval_columns.watched_enough(0.27, [False] * 6 + [True, False] * 14)
    assert not interval_columns.watched_enough(0.27, [True, False] * 9 + [False] * 16)  # none in its last third


def test_a_bound_named_from_a_sample_says_how_much_was_watched():
    sampled = {"bound": {"part": "io", "share": 0.68}, "split_watched": 0.36, "batches": 80}
    assert phases.bound_words(sampled) == "; I/O-bound (68% of batch time waiting on I/O, of the 36% of it watched)"
    assert phases.bound_words({**sampled, "split_watched": 0.8}) == "; I/O-bound (68% of batch time waiting on I/O)"
