"""innostall diff of windows (--from/--to for both sides, --a-from ... for one): two parts of
one recording compared as two recordings are, without the figures a window cannot tell."""
from __future__ import annotations

import dataclasses
import json

import pytest

import recordings
from conftest import innostall
from innostall.analysis import metrics, recording
from innostall.analysis.summary import summary
from innostall.analysis.window import WHOLE_ONLY

# what the halves recording doubles in its second half: the purge counters, per interval
DOUBLED = {"counter.purge_batches.per_s", "counter.purge_pages.per_s", "purge.batches", "purge.pages",
           "hist.purge_batch_latency.count"}


def halves(directory):
    """8 intervals of 1 s: 10 purge batches of 10 undo pages each a second for 4 s, then
    twice as many; the history stays at 500."""
    steps = [{"history": 500, "purge_batches": 10 * k, "purge_pages": 100 * k} for k in (1,) * 4 + (2,) * 4]
    return recordings.write(directory, recordings.purge_journal(steps))


def diff_json(*args) -> dict:
    done = innostall("diff", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_second_half_against_the_first_doubles_the_purge_counters_and_nothing_else(tmp_path):
    rec = halves(tmp_path / "rec")
    doc = diff_json(rec, rec, "--a-to", "4", "--b-from", "4")
    assert doc["a"]["window"] == {"from_s": 0.0, "to_s": 4.0, "recording_s": 8.0}
    assert doc["b"]["window"] == {"from_s": 4.0, "to_s": 8.0, "recording_s": 8.0}
    ratios = {m["metric"]: m["ratio"] for m in doc["metrics"]}
    assert {name for name, ratio in ratios.items() if ratio == 2.0} == DOUBLED
    assert {ratio for name, ratio in ratios.items() if name not in DOUBLED} == {1.0}
    assert (ratios["duration_s"], [m["a"] for m in doc["metrics"] if m["metric"] == "purge.pages"]) == (1.0, [400.0])
    lines = innostall("diff", rec, rec, "--a-to", "4", "--b-from", "4").stdout.splitlines()
    assert lines[1] == f"  A  {rec}: MariaDB 11.4.5, 0.0–4.0 s of 8.0 s"
    assert lines[2] == f"  B  {rec}: MariaDB 11.4.5, 4.0–8.0 s of 8.0 s"


def test_a_sides_own_bounds_override_the_shared_ones(tmp_path):
    rec = halves(tmp_path / "rec")
    doc = diff_json(rec, rec, "--from", "2", "--to", "6", "--b-from", "4", "--b-to", "8")
    assert (doc["a"]["window"]["from_s"], doc["a"]["window"]["to_s"]) == (2.0, 6.0)
    assert (doc["b"]["window"]["from_s"], doc["b"]["window"]["to_s"]) == (4.0, 8.0)
    pages = next(m for m in doc["metrics"] if m["metric"] == "purge.pages")
    assert (pages["a"], pages["b"]) == (600.0, 800.0)  # 2 s at 100 a second and 2 at 200; 4 s at 200


def test_the_same_window_on_both_sides_changes_nothing(tmp_path):
    rec = recordings.synthetic(tmp_path / "rec")
    doc = diff_json(rec, rec, "--from", "2", "--to", "5")
    assert doc["a"]["window"] == doc["b"]["window"] == {"from_s": 2.0, "to_s": 5.0, "recording_s": 6.0}
    assert doc["metrics"] and {m["change"] for m in doc["metrics"]} == {"x1"}
    assert {m["ratio"] for m in doc["metrics"]} == {1.0}


def test_a_windowed_diff_leaves_out_the_figures_of_the_tables_kept_whole(tmp_path):
    rec = recordings.synthetic(tmp_path / "rec")
    kept_whole = {"block_lock.top_page_pct", "latches.wait_ms", "latches.named_pct"}
    whole = diff_json(rec, rec)
    assert kept_whole <= {m["metric"] for m in whole["metrics"]} and whole["left_out"] == []
    assert whole["a"]["window"] is None
    assert "left out" not in innostall("diff", rec, rec).stdout
    for one_side in (["--a-to", "3"], ["--b-from", "3"], ["--from", "1"]):
        doc = diff_json(rec, rec, *one_side)
        assert sorted(doc["left_out"]) == sorted(kept_whole)
        assert not kept_whole & {m["metric"] for m in doc["metrics"]}
    told = innostall("diff", rec, rec, "--a-to", "3").stdout.splitlines()[3]
    assert told == ("  left out: block_lock.top_page_pct, latches.named_pct, latches.wait_ms "
                    "(read from the tables kept for the whole recording only, which a window does not cut)")


def with_every_whole_table(directory):
    """The synthetic recording with the redo and flush-wait probes attached and counted, and
    rows in every table kept whole that the summary reads: pages, latches, stacks, holders,
    redo writers, flush waits."""
    journal = recordings.synthetic_journal(6, walks=True, latches=True)
    for record in journal:
        if "counters" in record:
            i = (record["mono_ns"] - 10**9) // 10**9
            record["counters"].update(redo_bytes=9000 * i, redo_writes=30 * i, redo_bytes_purge_coordinator=1000 * i,
                                      log_room_waits=2 * i, log_room_wait_ns=5_000_000 * i,
                                      free_page_waits=i, free_page_wait_ns=1_000_000 * i)
        if record["type"] == "latch_tables":
            record["redo_writers"] = [[701, "mariadbd", 40000, 0, 150, recordings.UPDATE_STACK],
                                      [702, "page_cleaner", 8000, 0, 20, "buf_flush_page_cleaner"]]
            record["flush_waits"] = [[0, "mariadbd", 12, 30_000_000, recordings.UPDATE_STACK],
                                     [1, "mariadbd", 6, 6_000_000, recordings.SELECT_STACK]]
    probes = recordings.meta(walks=True, latches=True)["probes"] + [
        {"name": name, "attached": True, "fallback": False, "symbol": name, "offset": 9, "reason": None}
        for name in ("redo_write", "log_room_wait", "free_page_wait")]
    return recordings.write(directory, journal, probes=probes)


def test_the_left_out_figures_are_every_figure_the_tables_kept_whole_move(tmp_path):
    """Emptying the tables kept whole changes only the figures a windowed diff leaves out,
    and each name listed as kept whole is one of them: none is stale, none is missing."""
    rec = recording.load(str(with_every_whole_table(tmp_path / "rec")))
    assert all(len(getattr(rec, table)) for table in WHOLE_ONLY if table != "appliers")
    emptied = dataclasses.replace(rec, **{table: getattr(rec, table).iloc[0:0] for table in WHOLE_ONLY})
    before, after = metrics.numeric_metrics(rec, summary(rec)), metrics.numeric_metrics(emptied, summary(emptied))
    names = before.index.union(after.index)
    moved = {n for n in names if n not in before or n not in after or before[n] != after[n]}
    assert moved and moved <= set(metrics.whole_only(names))
    for prefix in metrics.WHOLE_ONLY_METRICS:
        assert any(n.startswith(prefix) for n in moved), prefix


@pytest.mark.parametrize("args, said", [
    (["--a-from", "soon"], "A ({rec}): --a-from 'soon': give seconds from the recording's start (3600, 90m, 2h) "
                           "or a UTC time of day (14:05, 14:05:30)"),
    (["--from", "99"], "A ({rec}): --from 99.0 s: the recording lasted 8.0 s"),
    (["--b-from", "3", "--b-to", "2"], "B ({rec}): --b-to (2.0 s) must be after --b-from (3.0 s)"),
    (["--to", "25:61"], "A ({rec}): --to 25:61: not a time of day"),
    (["--b-from", "3.2", "--b-to", "3.4"], "B ({rec}): no interval ended between 3.2 and 3.4 s (intervals of 1 s)"),
])
def test_a_bad_time_is_one_line_naming_the_side_and_the_option(tmp_path, args, said):
    rec = halves(tmp_path / "rec")
    done = innostall("diff", rec, rec, *args)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"innostall: {said.format(rec=rec)}\n"
