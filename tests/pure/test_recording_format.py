"""The recording format: deltas from cumulative snapshots, torn journals, bad directories."""
import json
import subprocess

import pytest

from conftest import INNOSTALL, innostall
from innostall.format import journal as fmt
from innostall.analysis import recording
from innostall.collector.loader import loader
from innostall.collector.recorder import store
from innostall.errors import UserError


def snapshot(kind, t, batches, slots):
    return {"type": kind, "mono_ns": int(t * 1e9), "real_ns": 0,
            "counters": {"purge_batches": batches}, "hists": {"purge_batch_latency": slots}}


SNAPSHOTS = [
    {"type": "attached", "mono_ns": 0, "real_ns": 0, "programs": []},
    snapshot("interval", 1, 3, [0, 3, 0]),
    snapshot("interval", 2, 5, [0, 4, 1]),
    snapshot("final", 2.5, 5, [0, 4, 1]),
]


def test_journal_becomes_per_interval_deltas():
    counters, hists = fmt.journal_to_tables(SNAPSHOTS)
    assert counters["value"].tolist() == [3, 2, 0]
    assert counters["t_s"].tolist() == [1.0, 2.0, 2.5]
    assert hists[["interval", "slot", "count"]].values.tolist() == [[0, 1, 3], [1, 1, 1], [1, 2, 1]]


def write_recording(directory, lines, complete=False, **meta):
    store.write_meta(str(directory), {"complete": complete, "interval_s": 1, "probes": [],
                                      "target": {}, "schema": loader.schema().raw, **meta})
    (directory / fmt.JOURNAL).write_text("".join(lines))


def test_torn_last_line_is_dropped(tmp_path):
    lines = [json.dumps(s) + "\n" for s in SNAPSHOTS[:3]]
    write_recording(tmp_path, lines + ['{"type": "interval", "mono_'])
    rec = recording.load(str(tmp_path))
    assert rec.counter_total("purge_batches") == 5


@pytest.mark.parametrize("damage, message", [
    (lambda d: None, "no meta.json"),
    (lambda d: (d / fmt.META).write_text("{not json"), "damaged metadata"),
    (lambda d: (d / fmt.META).write_text('{"format": "other"}'), "not an innostall recording"),
    (lambda d: (d / fmt.META).write_text(json.dumps({"format": fmt.FORMAT, "version": 99})),
     "newer than this innostall reads"),
])
def test_bad_recordings_give_one_line(tmp_path, damage, message):
    damage(tmp_path)
    with pytest.raises(UserError, match=message):
        recording.load(str(tmp_path))


def test_truncated_parquet_is_read_from_the_journal_or_is_one_line(tmp_path):
    """A damaged table is rebuilt from the journal, and the report says so; without a
    journal, it is one line."""
    write_recording(tmp_path, [json.dumps(s) + "\n" for s in SNAPSHOTS], complete=True)
    store.write_tables(str(tmp_path))
    table = tmp_path / fmt.COUNTERS
    table.write_bytes(table.read_bytes()[:100])
    result = innostall("report", tmp_path)
    assert result.returncode == 0 and result.stderr == ""
    assert "damaged table" in result.stdout and "rebuilt from the journal" in result.stdout
    (tmp_path / fmt.JOURNAL).unlink()
    result = innostall("report", tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("innostall: ") and "damaged table" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.mark.heavy  # runs the CLI as its own process on purpose (its exit code): ~1 s of CPU
def test_missing_directory_from_the_cli(tmp_path):
    result = subprocess.run(INNOSTALL + ["report", str(tmp_path / "nope")],
                            capture_output=True, text=True)
    assert result.returncode == 1 and result.stderr.strip() == \
        f"innostall: {tmp_path / 'nope'}: no such recording directory"


def test_latch_ids_past_2_63_stay_whole_and_apart(tmp_path):
    """A block latch's id is its space << 32 | its page, and undo tablespaces' ids are near
    2^32: two undo pages' latches are ids past 2^63, and must stay two latches. Clamped to
    2^63 - 1 as counts are, they became one, and its timeline went negative (MySQL 8.0.15)."""
    ids = (0xFFFFFFEE << 32 | 348, 0xFFFFFFEE << 32 | 342)

    def latches(waits: int) -> dict:
        return {"type": "latches", "latches": [[1, ids[0], 0, waits, 1000 * waits, 0, 1, [0, waits], "a", "block"],
                                               [1, ids[1], 0, 2 * waits, 500 * waits, 0, 2, [0, waits], "b", "block"]]}
    lines = [{"type": "attached", "mono_ns": 0, "real_ns": 0, "programs": []},
             latches(1), {"type": "interval", "mono_ns": 10**9, "counters": {}, "hists": {}},
             latches(3), {"type": "interval", "mono_ns": 2 * 10**9, "counters": {}, "hists": {}}]
    path = tmp_path / fmt.JOURNAL
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    read = fmt.read_journal_lines(str(tmp_path))
    assert read.records[1]["latches"][0][1] == ids[0] and not read.damaged
    timeline = fmt.latch_timeline_table(read.records)
    assert (timeline["wait_us"] >= 0).all() and len(timeline) == 4, timeline
