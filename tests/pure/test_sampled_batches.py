"""Where the governor detached the purge batches' probe for part of a span, every count of
batches the report gives says the share of the span they were watched, and "no purge batch
ran" is never said of a span they were not watched whole: a count of what was watched is a
floor, not the whole.

The recording: MySQL 8.0.15 at the default budget under the long-snapshot scenario
(tests/live/test_mysql_signals_live.py). Its coordinator, woken at each commit while the
snapshot pins the history, runs empty batches hundreds of times a second, so the
purge_batch group cannot fit its allowance and is sampled."""
from __future__ import annotations

import re

from conftest import REPO
from innostall.analysis import recording, summary
from innostall.analysis.checks import verdict_check
from innostall.analysis.wording import phases as phase_words

PINNED_MYSQL = REPO / "tests" / "data" / "mysql-pin-sampled-batches"


def test_counts_of_batches_say_the_share_watched():
    told = summary.summary(recording.load(str(PINNED_MYSQL)))
    purge = told["purge"]
    assert purge["batches_coverage"] < 0.5
    assert purge["batches_estimated"]["batches"] > purge["batches"]
    said = 0
    for p in purge["phases"]:
        watched = p["figures"]["batches_watched"]
        assert 0 <= watched <= 1
        for found in re.finditer(r"\(in the (\d+)% of its time they were watched\)", p["detail"]):
            said += 1
            assert int(found[1]) == round(100 * watched)
    assert said, [p["detail"] for p in purge["phases"]]


def test_the_checker_catches_a_count_said_as_the_whole(monkeypatch):
    # unaltered, the checker holds it as every stored recording (test_verdict_consistency)
    monkeypatch.setattr(phase_words, "batches_seen", lambda f: "")
    problems = verdict_check.check(str(PINNED_MYSQL))
    assert any("batches" in p for p in problems), problems


def test_no_batch_seen_is_not_no_batch_run():
    unwatched = {"batches": 0, "pages": 0, "batches_watched": 0.12, "levels": None}
    assert phase_words.idle_words(unwatched) == \
        "idle: no purge batch was seen in the 12% of its time they were watched"
    assert phase_words.idle_words({**unwatched, "batches_watched": 1.0}) == "idle: no purge batch ran"
