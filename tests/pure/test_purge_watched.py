"""A purge phase names where its time went (CPU-, I/O-, latch-bound) only where the sleep
tracepoint watched half of that time or more; else it says how much was watched, and no
bound. At the default budget the tracepoint is sampled, and the largest part of a tenth of
the time watched is no cause."""
from __future__ import annotations

from conftest import REPO
from innostall.analysis import phase_figures, purge_time, recording, summary
from innostall.analysis.checks import verdict_check

# MariaDB 11.4.5 at the default budget: the catch-up after a 20-s snapshot, its batches'
# time watched 11% by the sleep tracepoint (purge_sleeps sampled)
CATCH_UP = REPO / "tests" / "data" / "catch-up-server-reading"


def test_a_phase_watched_less_than_half_names_no_bound():
    told = summary.summary(recording.load(str(CATCH_UP)))
    seen = []
    for p in told["purge"]["phases"]:
        watched = p["figures"]["split_watched"]
        if watched is not None and watched < purge_time.WATCHED_ENOUGH and p["figures"]["batches"]:
            seen.append(p["verdict"])
            assert p["figures"]["bound"] is None and "-bound" not in p["detail"]
            if p["verdict"] in ("catching_up", "falling_behind"):  # the verdicts whose words say a bound
                assert f"purge's time was watched {100 * watched:.0f}% of it, too little to say where it went" \
                    in p["detail"]
    assert "catching_up" in seen


def test_the_checker_catches_a_bound_named_from_unwatched_time(monkeypatch):
    assert verdict_check.check(str(CATCH_UP)) == []
    # the words' bound as it was before the rule: from whatever the tracepoint watched
    monkeypatch.setattr(phase_figures, "rows_bound", lambda rows: purge_time.bound(
        purge_time.purge_split(purge_time.coordinator_split(rows), purge_time.worker_split(rows))))
    problems = verdict_check.check(str(CATCH_UP))
    assert any("catching_up" in p and "bound is" in p for p in problems), problems
