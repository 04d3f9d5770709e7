"""The latch tables of a recording, merged from its journal's latch_tables lines.

The loader prints, every tenth interval and at the end, only the rows that changed since its
last such line ("rows": "changed"), each row's counts cumulative since the attach; the
recorder folds their stacks and sums the rows that fold alike. A table is therefore the last
row seen for each key. A line without "rows" (journals of format 2 and before, and the
tables a watch saves) holds every row, and replaces what came before it."""
from __future__ import annotations

import re

CHANGED = "changed"
# The tables whose rows end in a stack (shapes.py gives each row's layout): how many columns
# before its two counts (waits, ns) name the row; the stack follows the counts.
STACK_TABLES = {
    "stacks": 1,  # mode
    "latch_stacks": 3,  # latch kind, latch, mode
    "holders": 3,  # latch, mode, releasing thread's name
    "flush_waits": 2,  # kind of wait, thread name
}
# the columns that tell a row from the others of its table: a stack table's names and stack
KEYS = {
    "pages": (0, 1),  # space, page
    **{table: (*range(names), names + 2) for table, names in STACK_TABLES.items()},
    "redo_writers": (0,),  # thread id
    "appliers": (0,),  # thread id
}
# how a line of changed rows begins, before its tables, as the loader and the recorder write it
CHANGED_ROWS = re.compile(rb'^\{"type":"latch_tables"(,"mono_ns":\d+)?,"rows":"changed"')


def holds_changed_rows(line: bytes) -> bool:
    """Whether a journal line (as written, not parsed) holds changed rows only."""
    return CHANGED_ROWS.match(line) is not None


class MergedTables:
    """The latch tables as of the last line added."""

    def __init__(self):
        self.rows: dict[str, dict[tuple, list]] = {table: {} for table in KEYS}
        self.mono_ns: int | None = None
        self.lines = 0

    def add(self, record: dict) -> None:
        if record.get("rows") != CHANGED:
            for rows in self.rows.values():
                rows.clear()
        for table, columns in KEYS.items():
            rows = self.rows[table]
            for row in record.get(table, ()):
                rows[tuple(row[c] if c < len(row) else None for c in columns)] = row
        self.mono_ns = record.get("mono_ns", self.mono_ns)
        self.lines += 1

    def record(self) -> dict | None:
        """One latch_tables record holding every row, or None when no line was added."""
        if not self.lines:
            return None
        merged = {"type": "latch_tables"}
        if self.mono_ns is not None:
            merged["mono_ns"] = self.mono_ns
        merged.update((table, list(rows.values())) for table, rows in self.rows.items())
        return merged
