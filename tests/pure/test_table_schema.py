"""A table described by the schema alone reaches every reader: a throwaway loader table and
its recording tables are added to the loader's own schema (as probes/innostall_tables.h
would), and their rows go from journal lines through the recorder's folding, the table
writer, the Parquet reader, the journal's rebuild, DuckDB's views and the frames, with no
code of their own (innostall/format/tables.py)."""
from __future__ import annotations

import copy
import json
import shutil

import pytest

import recordings
from innostall import analysis
from innostall.analysis import query, recording
from innostall.collector.loader import loader
from innostall.collector.recorder.folded_tables import FoldedTables
from innostall.errors import UserError
from innostall.format import journal as fmt, table_builders
from innostall.format.schema import Schema
from innostall.format.tables import tables_of

# A per-interval table on a line of its own: each thread's sleeps by wait mode, cumulative
SLEEPS = {"name": "sleeps", "line": "sleeps", "field": "rows", "scope": "interval", "columns": [
    {"name": "tid", "kind": "tid", "role": "key"}, {"name": "mode", "kind": "mode", "role": "key"},
    {"name": "waits", "kind": "count", "role": "value"}, {"name": "ns", "kind": "count", "role": "value"}]}
# A whole-recording table in the latch_tables line, keyed by a stack the recorder folds
SLEEPERS = {"name": "sleepers", "line": "latch_tables", "field": "sleepers", "scope": "recording", "columns": [
    {"name": "thread", "kind": "text", "role": "key"}, {"name": "waits", "kind": "count", "role": "value"},
    {"name": "ns", "kind": "count", "role": "value"}, {"name": "stack", "kind": "stack", "role": "key"},
    {"name": "row", "kind": "row_id", "role": "key"}]}
RECORDING_TABLES = [
    {"name": "sleeps", "from": "sleeps", "scope": "interval", "columns": [
        {"name": "interval", "type": "int32", "role": "key"}, {"name": "t_s", "type": "time", "role": "key"},
        {"name": "tid", "type": "int32", "role": "key"}, {"name": "mode", "type": "string", "role": "key"},
        {"name": "waits", "type": "int64", "role": "value"}, {"name": "ns", "type": "int64", "role": "value"}]},
    {"name": "sleepers", "from": "sleepers", "scope": "recording", "columns": [
        {"name": "thread", "type": "string", "role": "key"}, {"name": "stack", "type": "string", "role": "key"},
        {"name": "waits", "type": "int64", "role": "value"}, {"name": "ns", "type": "int64", "role": "value"}]}]
FOLDED = {(1, 2): "start_thread;os_thread_sleep", (3,): "start_thread;os_thread_sleep"}  # two stacks fold alike


def extended_schema() -> dict:
    raw = copy.deepcopy(loader.schema().raw)
    raw["tables"] += [SLEEPS, SLEEPERS]
    raw["recording_tables"] += RECORDING_TABLES
    return raw


def journal(schema: dict) -> list[dict]:
    """Three intervals of the synthetic recording, a sleeps line before each snapshot (the
    rows cumulative), and the sleepers folded by the recorder into the last latch_tables line."""
    records = [r for r in recordings.synthetic_journal(3, walks=False, latches=True)]
    snapshots = [i for i, r in enumerate(records) if r["type"] in ("interval", "final")]
    cumulative = [[[7, 1, 2, 2000], [8, 3, 1, 500]], [[7, 1, 5, 9000], [8, 3, 1, 500]], [[7, 1, 6, 9100]]]
    for at, rows in reversed(list(zip(snapshots, cumulative))):
        records.insert(at, {"type": "sleeps", "mono_ns": records[at]["mono_ns"], "rows": rows})
    folding = FoldedTables(lambda addresses: FOLDED[tuple(addresses)], Schema.parse(schema).tables)
    line = {"type": "latch_tables",
            "sleepers": [["purge", 4, 400, [1, 2], 11], ["purge", 6, 600, [3], 12]]}
    folding.line(line)
    tables = [r for r in records if r["type"] == "latch_tables"]
    if tables:
        tables[-1]["sleepers"] = line["sleepers"]
    else:
        records.insert(snapshots[-1], line)
    return records


@pytest.fixture
def written(tmp_path):
    schema = extended_schema()
    return recordings.write(tmp_path / "rec", journal(schema), schema=schema)


def test_the_recorder_folds_a_described_table_by_its_key_stack():
    schema = extended_schema()
    line = {"type": "latch_tables", "sleepers": [["purge", 4, 400, [1, 2], 11], ["purge", 6, 600, [3], 12]]}
    FoldedTables(lambda addresses: FOLDED[tuple(addresses)], Schema.parse(schema).tables).line(line)
    assert line["sleepers"] == [["purge", 10, 1000, "start_thread;os_thread_sleep"]]


def test_a_table_described_by_the_schema_alone_reaches_every_reader(written):
    assert (written / "sleeps.parquet").exists() and (written / "sleepers.parquet").exists()
    rec = recording.load(str(written))
    # per interval: each key's growth, the mode named by the schema's wait modes
    assert rec.sleeps[["interval", "tid", "mode", "waits", "ns"]].values.tolist() == [
        [0, 7, "X", 2, 2000], [0, 8, "other", 1, 500], [1, 7, "X", 3, 7000], [2, 7, "X", 1, 100]]
    assert rec.sleepers.values.tolist() == [["purge", "start_thread;os_thread_sleep", 10, 1000]]
    con = query.connect([str(written)])
    assert con.execute("SELECT recording, sum(waits), sum(ns) FROM sleeps GROUP BY ALL").fetchall() == [
        ("rec", 7, 9600)]
    assert con.execute("SELECT stack FROM sleepers").fetchall() == [("start_thread;os_thread_sleep",)]
    frames = analysis.load_frames(str(written))
    assert frames["sleeps"].equals(rec.sleeps) and frames["sleepers"].equals(rec.sleepers)


def test_a_described_table_is_rebuilt_from_the_journal_and_its_damaged_lines_skipped(written, tmp_path):
    rebuilt = tmp_path / "cut"
    shutil.copytree(written, rebuilt)
    for table in rebuilt.glob("*.parquet"):
        table.unlink()
    lines = (rebuilt / fmt.JOURNAL).read_text().splitlines()
    damaged = json.loads(lines[-3]) if json.loads(lines[-3])["type"] == "sleeps" else None
    at = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "sleeps")
    lines[at] = json.dumps({"type": "sleeps", "mono_ns": 1, "rows": [[7, "X", 2, 2000]]})  # a mode not a number
    (rebuilt / fmt.JOURNAL).write_text("\n".join(lines) + "\n")
    rec = recording.load(str(rebuilt))
    assert damaged is None or damaged["type"] == "sleeps"
    assert any("damaged journal line" in w for w in rec.warnings)
    # the first interval's rows are lost with their line: the second's growth is counted from 0
    assert rec.sleeps[["interval", "tid", "waits"]].values.tolist() == [[1, 7, 5], [1, 8, 1], [2, 7, 1]]
    assert rec.sleepers["waits"].tolist() == [10]


def test_an_empty_described_table_has_its_columns_and_a_view(tmp_path):
    schema = extended_schema()
    directory = recordings.write(tmp_path / "rec", recordings.synthetic_journal(2, walks=False, latches=False),
                                 schema=schema)
    empty = table_builders.empty("sleeps", Schema.parse(schema))
    assert list(empty.columns) == ["interval", "t_s", "tid", "mode", "waits", "ns"] and not len(empty)
    assert query.connect([str(directory)]).execute("SELECT count(*) FROM sleeps").fetchall() == [(0,)]


@pytest.mark.parametrize("change, said", [
    (lambda raw: raw["tables"][0].update(scope="sometimes"), "unknown scope 'sometimes'"),
    (lambda raw: raw["recording_tables"][0]["columns"][0].update(type="decimal"), "of unknown kind, type or role"),
    (lambda raw: raw["tables"][0].update(name="pages; DROP"), "is not a name"),
])
def test_a_damaged_table_schema_is_one_line(change, said):
    raw = extended_schema()
    change(raw)
    with pytest.raises(UserError, match="damaged table schema") as refused:
        tables_of(raw)
    assert said in str(refused.value) and "\n" not in str(refused.value)


def test_recordings_written_before_the_schema_held_tables_read_the_same_tables():
    """format 4's frozen description is the loader's for the tables it had"""
    now, before = loader.schema().tables, tables_of({})
    assert {name: now.recording[name] for name in before.recording} == before.recording
    assert {name: now.loader[name] for name in before.loader} == before.loader


def test_a_table_the_schema_cannot_build_is_one_line(tmp_path):
    """a recording table without a builder whose columns are not its loader table's"""
    raw = extended_schema()
    raw["recording_tables"][-1]["columns"].append({"name": "share", "type": "float64", "role": "value"})
    with pytest.raises(UserError, match=r"^table sleepers: no builder of its own, and its columns are not its "
                                        r"loader table's \(share\)$"):
        table_builders.empty("sleepers", Schema.parse(raw))
