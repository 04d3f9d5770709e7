"""innostall watch (collector/recorder/watch.py), fed a journal as the recorder feeds it: the
minutes kept in memory, what fires a trigger and what does not, the saved recording (its
window, what triggered it, its verdict), the cool-down and the cap. The live test, with a
real pinning snapshot, is in test_watch_live.py."""
from __future__ import annotations

import json
import os
import signal

import pytest

from innostall.analysis import recording, summary, views, window
from innostall.collector.recorder import watch
from innostall.errors import UserError

from recordings import meta, purge_journal, view
from watch_children import children_in_this_process

SNAPSHOT = view(4321, 20.5, 100, connection_id=17, user="app", statement="SELECT SUM(k) FROM sbtest1")


def story(quiet: int = 20, pinned: int = 12, after: int = 10) -> list[dict]:
    """Quiet intervals at a history of 100, then a snapshot (opened at 20.5 s) pins purge
    while updates add 800 a second; it commits and purge drains the history."""
    steps = [{"history": 100, "purge_batches": 1, "purge_empty_batches": 1} for _ in range(quiet)]
    steps += [{"history": 100 + 800 * i, "purge_batches": 1, "purge_empty_batches": 1, "views": [SNAPSHOT]}
              for i in range(1, pinned + 1)]
    steps += [{"history": 0, "purge_batches": 60, "purge_pages": 60 * 127}] * 2
    steps += [{"history": 0, "purge_batches": 1, "purge_empty_batches": 1} for _ in range(after)]
    return purge_journal(steps)


def watched(tmp_path, records: list[dict], triggers: watch.Triggers, on_line=None) -> dict:
    """The records through a WatchJournal as the recorder's follow() passes them; the
    watch's meta at the end."""
    described = meta(walks=False)
    tmp_path.mkdir(exist_ok=True)  # as the recorder makes it
    with watch.WatchJournal(str(tmp_path), triggers, described) as journal:
        for record in records:
            if on_line:
                on_line(record, journal)
            assert journal.write(json.dumps(record) + "\n", record)
            if journal.done:
                break
    return watch.finish_watch(journal, described)


@pytest.mark.heavy  # the save's tables are written by the watch's child process on purpose (a Python importing pandas): ~1.4 s of CPU
def test_a_history_trigger_saves_the_minutes_around_it_and_the_verdict_names_the_snapshot(tmp_path):
    said = watched(tmp_path, story(), watch.Triggers(history_above=3000, before_s=10, after_s=8))
    saved = said["watch"]["saved"]
    assert [s["kind"] for s in saved] == ["history"], saved
    first = saved[0]
    assert first["at_s"] == 24.0 and first["value"] == 3300  # the first snapshot past 3,000
    assert first["from_s"] == 14.0  # the snapshot the 10 s kept begin after: their base
    rec = recording.load(str(tmp_path / first["directory"]))
    assert rec.meta["complete"] and rec.meta["end_reason"] == "saved 8 s after its trigger"
    cut = window.saved_window(rec)
    assert cut.window["from_s"] == 14.0 and cut.window["to_s"] == 32.0
    story_told = summary.summary(cut)
    pinned = [p for p in story_told["purge"]["phases"] if p["verdict"] == "pinned"]
    assert pinned and "thread 4321" in pinned[0]["detail"], story_told["purge"]["phases"]
    assert story_told["trigger"] == "saved by innostall watch: history 3,300 above 3,000, at 24 s of the watch"
    assert "  trigger   saved by innostall watch: history 3,300 above 3,000" in views.text_report(cut)
    # the base interval's growth (from the watch's attach) is outside the window
    assert cut.counters["interval"].min() == 0 and cut.counter_total("purge_batches") == 18


def test_nothing_fires_below_the_thresholds_and_nothing_is_saved(tmp_path):
    said = watched(tmp_path, story(), watch.Triggers(history_above=10_000))
    assert said["watch"]["saved"] == [] and sorted(os.listdir(tmp_path)) == ["meta.json"]
    with pytest.raises(UserError, match="is a watch's directory, not a recording: nothing triggered"):
        recording.load(str(tmp_path))


def test_the_cool_down_and_the_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(watch.idle, "run_idle", children_in_this_process)
    records = story() + [{**r, "mono_ns": r["mono_ns"] + 40 * 10**9} for r in story()[1:]]
    said = watched(tmp_path, records, watch.Triggers(history_above=3000, before_s=5, after_s=3, cooldown_s=2, keep=2))
    assert [s["at_s"] for s in said["watch"]["saved"]] == [24.0, 29.0]  # saved to 27, quiet to 29, still pinned
    assert len(os.listdir(tmp_path)) == 3  # two recordings and meta.json: the cap ended the watch
    said = watched(tmp_path / "long", records, watch.Triggers(history_above=3000, before_s=5, after_s=3,
                                                                cooldown_s=60, keep=5))
    assert [s["at_s"] for s in said["watch"]["saved"]] == [24.0] and said["watch"]["ignored"] > 0
    with pytest.raises(UserError, match=r"its recordings are .*001-.*-history"):
        recording.load(str(tmp_path / "long"))


def test_sigusr1_saves_at_the_next_snapshot(tmp_path, monkeypatch):
    monkeypatch.setattr(watch.idle, "run_idle", children_in_this_process)
    def signal_at(record, journal):
        if record["type"] == "interval" and record["mono_ns"] == 9 * 10**9:
            os.kill(os.getpid(), signal.SIGUSR1)

    said = watched(tmp_path, story(), watch.Triggers(before_s=3, after_s=2), on_line=signal_at)
    assert [(s["kind"], s["at_s"]) for s in said["watch"]["saved"]] == [("signal", 8.0)]
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL  # given back at the watch's end


def test_a_latch_wait_longer_than_the_trigger_fires_once(tmp_path, monkeypatch):
    monkeypatch.setattr(watch.idle, "run_idle", children_in_this_process)
    def latches(longest_ns: int, t_ns: int) -> dict:
        return {"type": "latches", "mono_ns": t_ns - 500,
                "latches": [[1, 77, 1, 5, 9_000_000, longest_ns, 0, [0, 5], "block 8:4 sbtest/sbtest1 PRIMARY", "block"]]}
    records = []
    for record in story(quiet=12, pinned=0, after=0):
        if record["type"] in ("interval", "final"):
            records.append(latches(40_000_000 if record["mono_ns"] >= 6 * 10**9 else 1_000_000, record["mono_ns"]))
        records.append(record)
    said = watched(tmp_path, records, watch.Triggers(latch_wait_above_ms=30, before_s=3, after_s=2, cooldown_s=0))
    assert [(s["kind"], s["at_s"]) for s in said["watch"]["saved"]] == [("latch-wait", 5.0)]
    assert said["watch"]["saved"][0]["words"] == ("a wait of 40.0 ms on block 8:4 sbtest/sbtest1 PRIMARY, "
                                                  "above 30 ms")


def test_purge_pinned_by_the_verdict_of_the_kept_minutes(tmp_path, monkeypatch):
    def answered(record, journal):  # as if each report came back before the next snapshot
        if journal.verdict and journal.verdict.thread:
            journal.verdict.thread.join()

    monkeypatch.setattr(watch.idle, "run_idle", children_in_this_process)
    said = watched(tmp_path, story(), watch.Triggers(verdict="pinned", verdict_every_s=4, before_s=10, after_s=3),
                   on_line=answered)
    saved = said["watch"]["saved"]
    assert [s["kind"] for s in saved] == ["verdict"] and saved[0]["words"].startswith("purge pinned by connection 17")
    assert not os.path.exists(tmp_path / ".verdict")  # the kept minutes' copy, gone
    cut = window.saved_window(recording.load(str(tmp_path / saved[0]["directory"])))
    assert any(p["verdict"] == "pinned" for p in summary.summary(cut)["purge"]["phases"])


def test_the_command_lines_verdicts_are_purges():
    from innostall.analysis.phases import VERDICTS
    from innostall.cli_record import VERDICTS as offered
    assert set(offered) == set(VERDICTS) - {"not_recorded"}
