"""A long journal is rolled into xz segments (innostall/format/journal_files.py): read back,
it is the same journal, whatever moment a roll was cut at; the recorder compresses its
segments off its path and counts them on disk as they are; redact keeps them so."""
from __future__ import annotations

import json
import lzma
import os
from pathlib import Path

import pandas as pd
import pytest

from innostall.analysis import recording, redact
from innostall.collector.recorder import store
from innostall.collector.recorder.directory import Journal
from innostall.format import journal as fmt, journal_files

from recordings import synthetic, synthetic_journal


def lines_of(records: list[dict]) -> list[str]:
    return [json.dumps(r, separators=(",", ":")) + "\n" for r in records]


def rolled(directory: Path, records: list[dict], segment_bytes: int, compress=lambda number: True) -> Path:
    """The journal written as the recorder writes it, rolled every segment_bytes at an
    interval's end; compress(number) says which rolled segments are compressed."""
    directory.mkdir(exist_ok=True)
    writer = journal_files.JournalWriter(str(directory), segment_bytes)
    for record, line in zip(records, lines_of(records)):
        writer.write(line)
        if record["type"] == "interval" and (number := writer.roll()) is not None and compress(number):
            journal_files.compress_segment(str(directory), number)
    writer.close()
    return directory


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    return synthetic(tmp_path_factory.mktemp("plain"), intervals=40)


def test_a_rolled_journal_reads_as_the_plain_one(source, tmp_path):
    plain = fmt.read_journal_lines(str(source))
    records = [json.loads(line) for line in journal_files.every_line(str(source))]
    directory = rolled(tmp_path / "rolled", records, segment_bytes=2000, compress=lambda n: n % 3 != 0)
    names = sorted(os.listdir(directory))
    assert any(n.endswith(".jsonl.xz") for n in names) and any(journal_files.SEGMENT.match(n) and
                                                              not n.endswith(".xz") for n in names), names
    again = fmt.read_journal_lines(str(directory))
    assert again.records == plain.records and not again.damaged


def test_a_segment_cut_between_its_two_forms_is_read_once(source, tmp_path):
    records = [json.loads(line) for line in journal_files.every_line(str(source))]
    directory = rolled(tmp_path / "rolled", records, segment_bytes=2000, compress=lambda n: False)
    # cut after the .xz was renamed into place, before the plain segment went
    plain = directory / journal_files.segment_name(1)
    text = plain.read_bytes()
    journal_files.compress_segment(str(directory), 1)
    plain.write_bytes(text)
    assert fmt.read_journal_lines(str(directory)).records == fmt.read_journal_lines(str(source)).records


def _first_segment_text(records: list[dict], segment_bytes: int) -> bytes:
    """What the first segment held: the lines up to the interval that passed segment_bytes."""
    text, size = [], 0
    for record, line in zip(records, lines_of(records)):
        text.append(line)
        size += len(line)
        if record["type"] == "interval" and size >= segment_bytes:
            break
    return "".join(text).encode()


def test_a_damaged_segment_keeps_what_came_before_it_and_says_so(source, tmp_path):
    records = [json.loads(line) for line in journal_files.every_line(str(source))]
    directory = rolled(tmp_path / "rolled", records, segment_bytes=2000)
    packed = directory / journal_files.segment_name(2, compressed=True)
    packed.write_bytes(packed.read_bytes()[:len(packed.read_bytes()) // 2])
    read = fmt.read_journal_lines(str(directory))
    assert read.damaged >= 1 and "journal.000002.jsonl.xz" in read.first_fault
    first = [json.loads(line) for line in _first_segment_text(records, 2000).splitlines()]
    assert read.records[:len(first) - 1] == [r for r in first if r["type"] != "latch_tables"][:len(first) - 1]


def test_the_report_of_a_rolled_recording_is_the_plain_ones(source, tmp_path):
    records = [json.loads(line) for line in journal_files.every_line(str(source))]
    directory = rolled(tmp_path / "rolled", records, segment_bytes=2000)
    (directory / fmt.META).write_text((source / fmt.META).read_text())
    store.write_tables(str(directory))
    whole, parts = recording.load(str(source)), recording.load(str(directory))
    pd.testing.assert_frame_equal(whole.counters, parts.counters)
    pd.testing.assert_frame_equal(whole.hists, parts.hists)
    pd.testing.assert_frame_equal(whole.latch_timeline, parts.latch_timeline)


@pytest.mark.heavy  # writes a journal of many segments and compresses them with xz: ~2.6 s of CPU
def test_the_recorders_journal_compresses_off_its_path_and_counts_what_is_on_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(journal_files, "SEGMENT_BYTES", 4000)
    records = synthetic_journal(60, walks=True, latches=True)
    with Journal(str(tmp_path)) as journal:
        for record, line in zip(records, lines_of(records)):
            assert journal.write(line, record)
    # the thread has compressed every rolled segment by the time the journal is closed
    names = sorted(os.listdir(tmp_path))
    assert [n for n in names if journal_files.SEGMENT.match(n)] == [
        journal_files.segment_name(n, compressed=True) for n in range(1, len(names))], names
    assert journal.written == journal_files.disk_bytes(str(tmp_path))
    assert journal.written < sum(map(len, lines_of(records))) / 2
    read = fmt.read_journal_lines(str(tmp_path))
    assert len(read.records) == len([r for r in records if r["type"] != "latch_tables"]) + 1


@pytest.mark.heavy  # writes a journal of many segments and compresses them with xz
def test_redact_rolls_a_long_journal_as_the_recorder_does(source, tmp_path, monkeypatch):
    monkeypatch.setattr(journal_files, "SEGMENT_BYTES", 2000)
    records = [json.loads(line) for line in journal_files.every_line(str(source))]
    directory = rolled(tmp_path / "rolled", records, segment_bytes=2000)
    (directory / fmt.META).write_text((source / fmt.META).read_text())
    store.write_tables(str(directory))
    redact.redact(str(directory), str(tmp_path / "shared"))
    copied = sorted(os.listdir(tmp_path / "shared"))
    assert any(n.endswith(".jsonl.xz") for n in copied), copied
    meta = json.loads((tmp_path / "shared" / fmt.META).read_text())
    assert meta["redacted"]["left_out"] == []
    assert len(fmt.read_journal_lines(str(tmp_path / "shared")).records) == len(
        fmt.read_journal_lines(str(directory)).records)


def test_a_segment_that_is_not_xz_is_one_damaged_part_and_the_rest_reads(source, tmp_path):
    records = [json.loads(line) for line in journal_files.every_line(str(source))]
    directory = rolled(tmp_path / "rolled", records, segment_bytes=2000)
    (directory / journal_files.segment_name(1, compressed=True)).write_bytes(b"{\"type\": \"not xz\"}\n" * 50)
    read = fmt.read_journal_lines(str(directory))
    assert read.damaged == 1 and "not a readable xz segment" in read.first_fault
    assert read.records and read.records[-1]["type"] == "latch_tables"


def test_long_lines_in_a_segment_are_cut_at_the_readers_limit(tmp_path):
    lines = [b"x" * 5000 + b"\n", b"short\n", b"y" * 3000]
    (tmp_path / journal_files.segment_name(1, compressed=True)).write_bytes(lzma.compress(b"".join(lines)))
    f, reader = journal_files.opened_lines(str(tmp_path / journal_files.segment_name(1, compressed=True)))
    with f:
        got = [reader.readline(2048) for _ in range(7)]
    assert got[:3] == [b"x" * 2048] * 2 + [b"x" * 904 + b"\n"] and got[3] == b"short\n"
    assert b"".join(got[4:]) == b"y" * 3000 and not reader.fault
