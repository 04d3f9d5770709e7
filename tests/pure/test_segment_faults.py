"""A rolled journal's segments under faults (issue 49): a segment deleted is named in a
warning, wherever it was (the first, one in the middle); a segment twice is named and read
once; an xz segment expanding far past its size is read only as far as its size justifies,
so the report's time is bounded by the recording's real size."""
from __future__ import annotations

import json
import lzma
import shutil
import time

import pytest

from innostall.analysis import recording, recording_facts
from innostall.format import journal as fmt, journal_files

from recordings import synthetic
from test_journal_segments import rolled


@pytest.fixture(scope="module")
def segmented(tmp_path_factory):
    """A synthetic recording whose journal is rolled into four compressed segments and the
    live file, its tables removed (the report reads the journal)."""
    source = synthetic(tmp_path_factory.mktemp("plain"), intervals=40)
    records = [json.loads(line) for line in journal_files.every_line(str(source))]
    directory = tmp_path_factory.mktemp("segmented")
    shutil.copy(source / fmt.META, directory / fmt.META)
    rolled(directory, records, segment_bytes=len(json.dumps(records)) // 5)
    assert [n for n, _ in journal_files.segments(str(directory))] == [1, 2, 3, 4]
    return directory


def test_a_whole_segmented_journal_reads_without_a_warning(segmented):
    rec = recording.load(str(segmented))
    assert not rec.warnings, rec.warnings


@pytest.mark.parametrize("number", [1, 2, 4])
def test_a_deleted_segment_is_named(segmented, tmp_path, number):
    rec_dir = shutil.copytree(segmented, tmp_path / "rec")
    whole = recording.load(str(segmented))
    (rec_dir / journal_files.segment_name(number, compressed=True)).unlink()
    rec = recording.load(str(rec_dir))
    named = [w for w in rec.warnings if w.startswith("journal segment(s) missing")]
    assert named and journal_files.segment_name(number) in named[0], rec.warnings
    assert rec.counters["interval"].nunique() < whole.counters["interval"].nunique()
    if number != 1:  # the gap is said to be the segment's, not the recorder's falling behind
        gap = [w for w in recording_facts.warnings(rec) if w.startswith("one interval lasted")]
        assert gap and "a journal segment is missing" in gap[0] and "fell behind" not in gap[0], gap


@pytest.mark.parametrize("copied", [1, 2])
def test_a_segment_twice_is_named_and_read_once(segmented, tmp_path, copied):
    rec_dir = shutil.copytree(segmented, tmp_path / "rec")
    shutil.copy(rec_dir / journal_files.segment_name(copied, compressed=True),
                rec_dir / journal_files.segment_name(9, compressed=True))
    rec = recording.load(str(rec_dir))
    assert any(w.startswith("extra journal file(s) left out: journal.000009.jsonl.xz") for w in rec.warnings)
    assert rec.counters.equals(recording.load(str(segmented)).counters)


@pytest.mark.heavy  # compresses 5 million journal lines with xz: ~3 s of CPU
def test_a_small_segment_expanding_to_many_lines_is_read_only_as_far_as_its_size(segmented, tmp_path, monkeypatch):
    monkeypatch.setattr(journal_files, "MIN_XZ_LINES", 1000)
    rec_dir = shutil.copytree(segmented, tmp_path / "rec")
    packed = rec_dir / journal_files.segment_name(2, compressed=True)
    kept = lzma.decompress(packed.read_bytes())
    packed.write_bytes(lzma.compress(kept + b'{"type":"interval"}\n' * 5_000_000, format=lzma.FORMAT_XZ))
    size = packed.stat().st_size
    began = time.monotonic()
    rec = recording.load(str(rec_dir))
    took = time.monotonic() - began
    damaged = fmt.read_journal_lines(str(rec_dir)).damaged
    assert damaged <= max(size, journal_files.MIN_XZ_LINES), (damaged, size)  # not 5,000,000
    assert rec.warnings and "damaged journal line" in rec.warnings[0]
    # the intervals of every segment are read, the bomb's own lines but for its last bytes
    assert rec.counters["interval"].nunique() >= recording.load(str(segmented)).counters["interval"].nunique() - 1
    assert took < 20, took
