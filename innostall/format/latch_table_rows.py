"""The latch tables of a recording, merged from its journal's latch_tables lines.

The loader prints, every tenth interval and at the end, only the rows that changed since its
last such line ("rows": "changed"), each row's counts cumulative since the attach; the
recorder folds their stacks and sums the rows that fold alike. A table is therefore the last
row seen for each key. A line without "rows" (journals of format 2 and before, and the
tables a watch saves) holds every row, and replaces what came before it."""
from __future__ import annotations

import re

CHANGED = "changed"
# how a line of changed rows begins, before its tables, as the loader and the recorder write it
CHANGED_ROWS = re.compile(rb'^\{"type":"latch_tables"(,"mono_ns":\d+)?,"rows":"changed"')


def holds_changed_rows(line: bytes) -> bool:
    """Whether a journal line (as written, not parsed) holds changed rows only."""
    return CHANGED_ROWS.match(line) is not None


class MergedTables:
    """The latch tables as of the last line added; keys: each table's field -> the positions
    of the columns that tell its rows apart (tables.Tables.merged_keys; format_4's when
    not given)."""

    def __init__(self, keys: dict[str, tuple[int, ...]] | None = None):
        if keys is None:
            from innostall.format.tables import format_4
            keys = format_4().merged_keys
        self.keys = keys
        self.rows: dict[str, dict[tuple, list]] = {table: {} for table in keys}
        self.mono_ns: int | None = None
        self.lines = 0

    def add(self, record: dict) -> None:
        if record.get("rows") != CHANGED:
            for rows in self.rows.values():
                rows.clear()
        for table, columns in self.keys.items():
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
