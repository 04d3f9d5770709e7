"""The loader's latch tables with their stacks folded, as the journal keeps them.

The loader prints a table's changed rows only, each with its kernel key's id (a stack's
return addresses are part of that key, but a stack that could not be taken prints none). Several such stacks may fold to one string (two call sites in
one function, two libc paths), and the journal's reader keeps the last row per folded key
(innostall/format/latch_table_rows.py). So the rows that fold alike are summed here, and a
changed row gives its folded row's new sum. Each stack is folded once: what is kept is one
entry per kernel row, bounded by the kernel's maps."""
from __future__ import annotations

from typing import Callable

from innostall.format.latch_table_rows import STACK_TABLES


class FoldedTables:
    def __init__(self, fold: Callable[[list[int]], str]):
        self.fold = fold
        self.folded: dict[tuple[int, ...], str] = {}  # return addresses -> folded stack
        self.counts: dict[tuple, tuple[int, int]] = {}  # kernel row -> its waits, ns as last printed
        self.sums: dict[tuple, list[int]] = {}  # folded row -> waits, ns summed over its kernel rows

    def folded_stack(self, addresses: list[int]) -> str:
        key = tuple(addresses)
        folded = self.folded.get(key)
        if folded is None:
            folded = self.folded[key] = self.fold(addresses)
        return folded

    def table(self, name: str, rows: list[list]) -> list[list]:
        """A stack table's changed rows ([*names, waits, ns, [addresses], row id] each, as the
        loader prints them) folded: [*names, waits, ns, folded], one per folded key, its
        counts summed over every kernel row that folds to it."""
        columns = STACK_TABLES[name]
        changed: dict[tuple, list[int]] = {}
        for row in rows:
            names, (waits, ns), addresses = tuple(row[:columns]), row[columns:columns + 2], row[columns + 2]
            # the loader's row id after the stack: stacks it could not take print no frames
            kernel_row = (name, row[columns + 3]) if len(row) > columns + 3 else (name, names, tuple(addresses))
            before_waits, before_ns = self.counts.get(kernel_row, (0, 0))
            self.counts[kernel_row] = (waits, ns)
            folded_row = (name, names, self.folded_stack(addresses))
            total = self.sums.setdefault(folded_row, [0, 0])
            total[0] += waits - before_waits
            total[1] += ns - before_ns
            changed[folded_row] = total
        return [[*names, *total, folded] for (_, names, folded), total in changed.items()]

    def redo_writers(self, rows: list[list]) -> list[list]:
        """One row per thread: only its stack is folded (none until it writes outside purge)."""
        return [[tid, thread, written, by_purge, writes, self.folded_stack(stack) if stack else ""]
                for tid, thread, written, by_purge, writes, stack in rows]
