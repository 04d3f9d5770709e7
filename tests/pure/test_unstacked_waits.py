"""Latch waits shorter than the recording's stack threshold keep no stack: every view says how
many and how much of the time waited they hold, from the recording's own counters, so the
stack tables are never read as all the waiting. (The kernel side on a real server:
test_latch_holders' mutex waits and test_block_lock's waiters.)"""
from __future__ import annotations

import pytest

import recordings
from innostall.analysis import recording, views
from innostall.analysis.summary import summary
from innostall.collector.recorder.plan import check_settings
from innostall.errors import UserError

SHORT_WAITS, SHORT_NS = 37, 296_000  # 8 µs each: under the default threshold of 16


def with_short_waits(directory, threshold_us: int | None):
    records = recordings.synthetic_journal(6, walks=False, latches=True)
    for r in records:
        if r.get("type") in ("interval", "final"):  # counters are totals so far: the last ones hold
            r["counters"].update(latch_waits_unstacked=SHORT_WAITS, latch_unstacked_ns=SHORT_NS)
    settings = {"deep_walk_threshold": 100, **({"latch_stack_threshold_us": threshold_us} if threshold_us else {})}
    return recording.load(str(recordings.write(directory, records, settings=settings)))


def test_every_view_tells_the_waits_without_a_stack(tmp_path):
    rec = with_short_waits(tmp_path / "rec", 16)
    told = summary(rec)["latches"]["unstacked"]
    waited_ns = rec.counter_total("block_wait_ns") + rec.counter_total("other_latch_wait_ns")
    assert told == {"threshold_us": 16, "waits": SHORT_WAITS, "wait_ms": 0.3,
                    "wait_pct": round(100 * SHORT_NS / waited_ns, 1)}
    words = (f"waits of 16 µs or more: {SHORT_WAITS} shorter waits, 0.3 ms, "
             f"{told['wait_pct']:.1f}% of the time waited")
    assert words in views.text_report(rec)
    page = tmp_path / "report.html"
    views.write_html_report(rec, str(page))
    assert f"Stacks of waits of 16 µs or more: {SHORT_WAITS} shorter waits (0.3 ms, {told['wait_pct']:.1f}%" \
        in page.read_text()


def test_a_recording_that_kept_every_stack_says_nothing_of_it(tmp_path):
    rec = with_short_waits(tmp_path / "rec", None)  # older recordings, and --latch-stack-threshold 0
    assert summary(rec)["latches"]["unstacked"] is None
    assert "shorter waits" not in views.text_report(rec)


def test_a_negative_threshold_is_refused():
    with pytest.raises(UserError, match="--latch-stack-threshold"):
        check_settings({"latch_stack_threshold_us": -1})
    assert check_settings({})["latch_stack_threshold_us"] == 16
