"""The latch tables travel as changed rows (format 4): the loader prints a table's rows that
changed since its last line, the recorder folds their stacks and sums the rows that fold
alike (collector/recorder/folded_tables.py), and the reader keeps the last row per key
(innostall/format/latch_table_rows.py). Read back, the tables are what a whole dump would
have said, whatever mix of lines a journal holds."""
from __future__ import annotations

import json

from innostall.collector.recorder import watch
from innostall.collector.recorder.folded_tables import FoldedTables
from innostall.format import journal as fmt
from innostall.format.latch_table_rows import MergedTables, holds_changed_rows

from recordings import meta, purge_journal
from watch_children import children_in_this_process


def tables_line(mono_ns: int, changed: bool, **tables) -> dict:
    return {"type": "latch_tables", "mono_ns": mono_ns, **({"rows": "changed"} if changed else {}), **tables}


def write_journal(directory, records: list[dict]) -> None:
    with open(directory / fmt.JOURNAL, "w") as f:
        f.writelines(json.dumps(r, separators=(",", ":")) + "\n" for r in records)


def test_changed_rows_replace_their_keys_and_a_whole_line_replaces_everything():
    tables = MergedTables()
    assert tables.record() is None
    tables.add(tables_line(1, True, pages=[[8, 4, 2, 100], [8, 5, 1, 50]], stacks=[[1, 3, 30, "a;b"]]))
    tables.add(tables_line(2, True, pages=[[8, 4, 7, 900]], stacks=[[2, 1, 5, "a;b"]]))
    merged = tables.record()
    assert merged["mono_ns"] == 2
    assert sorted(merged["pages"]) == [[8, 4, 7, 900], [8, 5, 1, 50]]
    assert sorted(merged["stacks"]) == [[1, 3, 30, "a;b"], [2, 1, 5, "a;b"]]  # the mode is part of the key
    tables.add(tables_line(3, False, pages=[[9, 1, 1, 10]]))  # a whole dump: nothing before it stays
    assert tables.record()["pages"] == [[9, 1, 1, 10]] and tables.record()["stacks"] == []


def test_a_line_of_changed_rows_is_told_by_its_first_bytes_as_written():
    assert holds_changed_rows(b'{"type":"latch_tables","mono_ns":5,"rows":"changed","pages":[]}\n')
    assert not holds_changed_rows(b'{"type":"latch_tables","mono_ns":5,"pages":[]}\n')


def test_the_reader_merges_changed_lines_after_the_last_whole_one(tmp_path):
    records = purge_journal([{"history": 10}] * 4)
    end = records.pop()
    records += [tables_line(1, False, pages=[[1, 1, 1, 1]]),  # superseded by the next whole line
                tables_line(2, False, pages=[[2, 2, 2, 2]], appliers=[[77, "sql", 5, 500]]),
                tables_line(3, True, pages=[[3, 3, 3, 3]], appliers=[[77, "sql", 9, 900]]),
                tables_line(4, True, pages=[[2, 2, 6, 60]]), end]
    write_journal(tmp_path, records)
    read = fmt.read_journal_lines(str(tmp_path))
    assert read.damaged == 0
    merged = [r for r in read.records if r["type"] == "latch_tables"]
    assert len(merged) == 1 and read.records[-1] is merged[0]  # one, after every other record
    assert sorted(merged[0]["pages"]) == [[2, 2, 6, 60], [3, 3, 3, 3]]
    assert merged[0]["appliers"] == [[77, "sql", 9, 900]]
    assert fmt.latest_latch_tables(read.records)["mono_ns"] == 4


def test_a_journal_of_whole_dumps_reads_its_last_one(tmp_path):
    records = purge_journal([{"history": 10}] * 3)
    end = records.pop()
    records += [tables_line(1, False, pages=[[1, 1, 1, 1]]), tables_line(2, False, pages=[[2, 2, 2, 2]]), end]
    write_journal(tmp_path, records)
    merged = fmt.read_journal_lines(str(tmp_path)).records[-1]
    assert merged["pages"] == [[2, 2, 2, 2]]


def test_stacks_that_fold_alike_are_summed_and_each_changed_row_moves_its_sum():
    folds = []

    def fold(addresses: list[int]) -> str:
        folds.append(tuple(addresses))
        return "mysqld;row_purge" if addresses and addresses[0] < 200 else "mysqld;other"

    tables = FoldedTables(fold)
    # two call sites of one function (100, 150) fold alike: one row, their counts summed
    first = tables.table("stacks", [[1, 4, 400, [100, 7], 11], [1, 6, 600, [150, 7], 12], [1, 1, 10, [300], 13]])
    assert sorted(first) == [[1, 1, 10, "mysqld;other"], [1, 10, 1000, "mysqld;row_purge"]]
    # later, one of the two changed: its folded row says the new sum, not that row's count
    assert tables.table("stacks", [[1, 9, 900, [150, 7], 12]]) == [[1, 13, 1300, "mysqld;row_purge"]]
    assert len(folds) == 3  # each stack folded once
    # stacks the kernel could not take print no frames: their row ids keep them apart
    holders = tables.table("holders", [[0xabc, 2, "purge", 3, 30, [], 21], [0xabc, 2, "purge", 2, 20, [], 22]])
    assert holders == [[0xabc, 2, "purge", 5, 50, "mysqld;other"]]


def test_a_watch_saves_the_tables_merged_since_its_attach(tmp_path, monkeypatch):
    monkeypatch.setattr(watch.idle, "run_idle", children_in_this_process)  # the save's tables
    records = purge_journal([{"history": 100 + 800 * i} for i in range(12)])
    end = records.pop()
    at = [r["mono_ns"] for r in records if r["type"] == "interval"]
    records.insert(3, tables_line(at[1] + 1, True, pages=[[8, 4, 2, 100]]))  # before the kept minutes
    records.insert(-2, tables_line(at[-2] + 1, True, pages=[[8, 5, 1, 50]]))
    records.append(end)
    described = meta(walks=False)
    with watch.WatchJournal(str(tmp_path), watch.Triggers(history_above=3000, before_s=3, after_s=30),
                            described) as journal:
        for record in records:
            assert journal.write(json.dumps(record) + "\n", record)
    said = watch.finish_watch(journal, described)
    saved = tmp_path / said["watch"]["saved"][0]["directory"]
    tables = fmt.read_journal_lines(str(saved)).records[-1]
    assert sorted(tables["pages"]) == [[8, 4, 2, 100], [8, 5, 1, 50]]
