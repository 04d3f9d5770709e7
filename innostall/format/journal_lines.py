"""Reading the journal (journal_files.py) as data that may come from anywhere: streamed line by line within
stated limits, each line checked against its type's shape (shapes.py) and skipped, counted
and said when it is damaged; a torn last line (the recorder was killed) is no damage."""
from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import dataclass, field
from typing import Iterator

from innostall.format import journal_files, shapes
from innostall.format.latch_table_rows import CHANGED, MergedTables, holds_changed_rows
from innostall.format.tables import Tables, format_4
from innostall.format.safe_text import without_surrogates

# How much of a journal is read. A line may be long: a latch_tables line holds up to 16384
# stacks (the kernel's stack map) in each of its three tables, ~240 MB at 96 frames of 50
# bytes in the worst case; one line parsed takes a few times its size in memory. A
# snapshot line is ~4 KB, so 2 GiB is about six days of 1 s intervals; the records read
# take about twice that in memory (superseded latch tables are dropped as they are read).
MAX_LINE_BYTES = 256 * 2**20
MAX_JOURNAL_BYTES = 2 * 2**30
SNAPSHOT_TYPES = ("attached", "interval", "final")  # snapshots of the counters; journal.py's too
# a \uD800-\uDFFF escape: a lone surrogate once parsed, unless it is half of a pair
ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
# how the recorder begins a latch_tables line. One that holds every row supersedes those
# before it and is parsed only if no line comes after it (journals of format 3 and before:
# 80% of a busy server's journal); one of changed rows is merged (latch_table_rows.py).
LATCH_TABLES = b'{"type":"latch_tables",'


@dataclass
class JournalLines:
    """The records of a journal that have the shape the reader needs (shapes.py), in order,
    and what was read around."""
    records: list[dict] = field(default_factory=list)
    damaged: int = 0  # lines skipped: not JSON, or not of their type's shape
    first_fault: str = ""  # the first one's line number and what was wrong with it
    clamped: int = 0  # counts above 2^63 - 1, clamped there
    unread_bytes: int = 0  # past MAX_JOURNAL_BYTES
    missing_segments: list[int] = field(default_factory=list)  # numbers no file holds
    extra_parts: list[str] = field(default_factory=list)  # files holding a segment already read, left out

    def notes(self) -> list[str]:
        notes = [f"{self.damaged} damaged journal line(s) skipped (the first, {self.first_fault}): the "
                 "intervals around them are merged, nothing else is lost"] if self.damaged else []
        notes += segment_notes(self.missing_segments, self.extra_parts)
        if self.clamped:
            notes.append(f"{self.clamped} count(s) above 2^63 - 1 in the journal read as 2^63 - 1")
        if self.unread_bytes:
            notes.append(f"only the first {MAX_JOURNAL_BYTES >> 30} GiB of the journal read (the reader's "
                         f"limit): its last {self.unread_bytes / 1e6:,.0f} MB left out")
        return notes


MISSING_SEGMENTS = "journal segment(s) missing"  # how its warning begins (analysis/summary.py)


def segment_notes(missing: list[int], extra: list[str]) -> list[str]:
    notes = []
    if missing:
        names = ", ".join(journal_files.segment_name(n) + "[.xz]" for n in missing[:5])
        notes.append(f"{MISSING_SEGMENTS}: {names}{' ...' if len(missing) > 5 else ''} "
                     f"({len(missing)}): the intervals they held are lost, the report joins those around them")
    if extra:
        notes.append(f"extra journal file(s) left out: {', '.join(extra[:5])}{' ...' if len(extra) > 5 else ''} "
                     "(each holds a segment read already, or one out of order)")
    return notes


class SegmentOrder:
    """The journal's files against the segment each names in its first line
    (journal_files.segment_line): which numbers are missing, which files are extra. A
    journal none of whose files names its segment (one never rolled, or from before these
    lines) is not checked."""

    def __init__(self, read: JournalLines):
        self.read, self.expected = read, 1  # the number the next file should name
        self.named = False  # a file named its segment: the journal is checked

    def part_begins(self, path: str, first: dict | None) -> bool:
        """Whether the file at path, whose first record is `first`, is read."""
        number = first.get("number") if first and first.get("type") == "segment" else None
        if number is None:
            if self.expected == 1:  # the first segment names none
                self.expected = 2
            elif self.named:  # a copy of the first segment after others
                self.read.extra_parts.append(os.path.basename(path))
                return False
            return True
        self.named = True
        if number < self.expected:
            self.read.extra_parts.append(os.path.basename(path))
            return False
        self.read.missing_segments += range(self.expected, number)
        self.expected = number + 1
        return True


def segment_record(line: bytes, reading: shapes.Reading) -> dict | None:
    """The line as a segment's first line (journal_files.segment_line), or None."""
    if not line.startswith(b'{"type":"segment",'):
        return None
    try:
        return parsed(line, reading)
    except (ValueError, RecursionError):
        return None


def parsed(line: bytes, reading: shapes.Reading, tables: Tables | None = None) -> dict:
    """One line as a record of its type's shape (a table line's from the table schema);
    ValueError (shapes.Fault among them) or RecursionError when it is not."""
    record = json.loads(line.decode("utf-8", "replace"))
    if ESCAPED_SURROGATE.search(line):  # rare: cleaned only where it may be
        record = without_surrogates(record)
    return shapes.checked(record, reading, (tables or format_4()).line_shapes)


def read_records(directory: str, tables: Tables | None = None) -> list[dict]:
    """Every journal line in order; a torn last line (the recorder was killed) is dropped."""
    return read_journal_lines(directory, tables).records


def read_journal_lines(directory: str, tables: Tables | None = None) -> JournalLines:
    """Every line of the recording's journal that parses and has its type's shape, in
    order (the latch tables, merged, last), and how many did not: records() held in a
    list."""
    read = JournalLines()
    read.records = list(records(directory, read, tables))
    return read


def records(directory: str, read: JournalLines, tables: Tables | None = None) -> Iterator[dict]:
    """The journal's records as they are read from its files (its segments, then
    journal.jsonl: journal_files.py), each line that parses and has its type's shape; what
    was skipped is counted in `read`. A torn last line (the recorder was killed, the disk
    filled: no newline at its end) is the normal end of a recording cut short and not
    counted. The latch_tables lines are given as one record, merged (latch_table_rows.py),
    after every other record. The table lines are read as `tables` describes them (the
    recording's schema; tables.format_4 when not given). FileNotFoundError when there is
    no journal."""
    paths = journal_files.parts(directory)
    if not paths:
        raise FileNotFoundError(errno.ENOENT, "No journal", os.path.join(directory, journal_files.LIVE))
    reading, described = shapes.Reading(), tables or format_4()
    tables, whole_tables, number, last_snapshot, total = MergedTables(described.merged_keys), None, 0, -1, 0
    order = SegmentOrder(read)
    for index, path in enumerate(paths):
        final_part, begun = index == len(paths) - 1, False
        f, lines = journal_files.opened_lines(path)
        with f:
            while total < MAX_JOURNAL_BYTES and (line := lines.readline(MAX_LINE_BYTES + 1)):
                number += 1
                total += len(line)
                if not begun:  # the file's first line: the segment it is, or an older journal's line
                    begun, first = True, segment_record(line, reading)
                    if not order.part_begins(path, first):
                        break
                    if first:
                        continue
                if len(line) > MAX_LINE_BYTES:
                    while line and not line.endswith(b"\n"):  # the rest of it, never held whole
                        line = lines.readline(2**20)
                    fault = f"longer than {MAX_LINE_BYTES >> 20} MiB"
                elif (line.startswith(LATCH_TABLES) and line.endswith(b"\n")
                      and not holds_changed_rows(line)):
                    whole_tables = (number, line)  # parsed only if no line of tables follows
                    continue
                else:
                    try:
                        record = parsed(line, reading, described)
                        if record["type"] in SNAPSHOT_TYPES:  # intervals are told apart by their times
                            if record["mono_ns"] <= last_snapshot:
                                raise shapes.Fault("a snapshot not taken after the one before it")
                            last_snapshot = record["mono_ns"]
                    except (ValueError, RecursionError) as e:  # not JSON, a number too long, nested too deep
                        fault = str(e) if isinstance(e, shapes.Fault) else "not JSON"
                    else:
                        if record["type"] == "latch_tables":
                            if whole_tables and record.get("rows") == CHANGED:
                                merge_tables(tables, whole_tables, reading, read, described)
                            whole_tables = None
                            tables.add(record)
                        else:
                            yield record
                        continue
                # without a newline, the journal's last line, torn; a segment's lines are
                # whole, unless the segment itself is damaged (said once, below)
                if line.endswith(b"\n") or not (final_part or getattr(lines, "fault", "")):
                    read.damaged += 1
                    read.first_fault = read.first_fault or f"line {number}: {fault}"
            if getattr(lines, "fault", ""):
                read.damaged += 1
                read.first_fault = read.first_fault or f"{os.path.basename(path)}: {lines.fault}"
            if total >= MAX_JOURNAL_BYTES:  # what is left, as it lies on disk
                read.unread_bytes = max(0, os.fstat(f.fileno()).st_size - f.tell()) + sum(
                    os.lstat(later).st_size for later in paths[index + 1:])
                break
    if whole_tables:
        merge_tables(tables, whole_tables, reading, read, described)
    if merged := tables.record():
        yield merged
    read.clamped = reading.clamped


def merge_tables(tables: MergedTables, numbered_line: tuple[int, bytes], reading: shapes.Reading,
                 read: JournalLines, described: Tables | None = None) -> None:
    """A latch_tables line left unparsed, parsed and added to the tables (a damaged one
    counted)."""
    number, line = numbered_line
    try:
        tables.add(parsed(line, reading, described))
    except (ValueError, RecursionError) as e:
        read.damaged += 1
        read.first_fault = read.first_fault or f"line {number}: {e if isinstance(e, shapes.Fault) else 'not JSON'}"
