"""Reading journal.jsonl as data that may come from anywhere: streamed line by line within
stated limits, each line checked against its type's shape (shapes.py) and skipped, counted
and said when it is damaged; a torn last line (the recorder was killed) is no damage."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from innostall.format import files, shapes
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


@dataclass
class JournalLines:
    """The records of a journal that have the shape the reader needs (shapes.py), in order,
    and what was read around."""
    records: list[dict] = field(default_factory=list)
    damaged: int = 0  # lines skipped: not JSON, or not of their type's shape
    first_fault: str = ""  # the first one's line number and what was wrong with it
    clamped: int = 0  # counts above 2^63 - 1, clamped there
    unread_bytes: int = 0  # past MAX_JOURNAL_BYTES

    def notes(self) -> list[str]:
        notes = [f"{self.damaged} damaged journal line(s) skipped (the first, {self.first_fault}): the "
                 "intervals around them are merged, nothing else is lost"] if self.damaged else []
        if self.clamped:
            notes.append(f"{self.clamped} count(s) above 2^63 - 1 in the journal read as 2^63 - 1")
        if self.unread_bytes:
            notes.append(f"only the first {MAX_JOURNAL_BYTES >> 30} GiB of the journal read (the reader's "
                         f"limit): its last {self.unread_bytes / 1e6:,.0f} MB left out")
        return notes


def read_records(path: str) -> list[dict]:
    """Every journal line in order; a torn last line (the recorder was killed) is dropped."""
    return read_journal_lines(path).records


def read_journal_lines(path: str) -> JournalLines:
    """Every journal line that parses and has its type's shape, in order, and how many did
    not. A torn last line (the recorder was killed, the disk filled: no newline at its end)
    is the normal end of a recording cut short and not counted. Only the last latch_tables
    line is kept: each holds the whole recording's tables so far."""
    read, reading = JournalLines(), shapes.Reading()
    tables_at, number, last_snapshot = None, 0, -1
    with files.open_regular(path) as f:
        while f.tell() < MAX_JOURNAL_BYTES and (line := f.readline(MAX_LINE_BYTES + 1)):
            number += 1
            if len(line) > MAX_LINE_BYTES:
                while line and not line.endswith(b"\n"):  # the rest of it, never held whole
                    line = f.readline(2**20)
                fault = f"longer than {MAX_LINE_BYTES >> 20} MiB"
            else:
                try:
                    record = json.loads(line.decode("utf-8", "replace"))
                    if ESCAPED_SURROGATE.search(line):  # rare: cleaned only where it may be
                        record = without_surrogates(record)
                    record = shapes.checked(record, reading)
                    if record["type"] in SNAPSHOT_TYPES:  # intervals are told apart by their times
                        if record["mono_ns"] <= last_snapshot:
                            raise shapes.Fault("a snapshot not taken after the one before it")
                        last_snapshot = record["mono_ns"]
                except (ValueError, RecursionError) as e:  # not JSON, a number too long, nested too deep
                    fault = str(e) if isinstance(e, shapes.Fault) else "not JSON"
                else:
                    if record.get("type") == "latch_tables":
                        if tables_at is not None:
                            read.records[tables_at] = None
                        tables_at = len(read.records)
                    read.records.append(record)
                    continue
            if line.endswith(b"\n"):  # without one, it is the last line, torn
                read.damaged += 1
                read.first_fault = read.first_fault or f"line {number}: {fault}"
        read.unread_bytes = max(0, os.fstat(f.fileno()).st_size - f.tell())
    read.records = [r for r in read.records if r is not None]
    read.clamped = reading.clamped
    return read
