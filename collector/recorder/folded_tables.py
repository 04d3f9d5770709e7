"""The loader's tables with their stacks folded, as the journal keeps them.

The loader prints a table's changed rows only, each with its kernel key's id (a stack's
return addresses are part of that key, but a stack that could not be taken prints none).
Several such stacks may fold to one string (two call sites in one function, two libc
paths), and the journal's reader keeps the last row per folded key
(innostall/format/latch_table_rows.py). So the rows of a table keyed by its stack that fold
alike are summed here, and a changed row gives its folded row's new sum; a stack that is
not part of the key (a redo writer's first) is folded in place. Which columns are the
stack, the row id and the counts, the table schema says (innostall/format/tables.py). Each
stack is folded once: what is kept is one entry per kernel row, bounded by the kernel's
maps."""
from __future__ import annotations

from typing import Callable

from innostall.format.tables import LoaderTable, Tables, format_4


class FoldedTables:
    def __init__(self, fold: Callable[[list[int]], str], tables: Tables | None = None):
        self.fold, self.described = fold, tables or format_4()
        self.folded: dict[tuple[int, ...], str] = {}  # return addresses -> folded stack
        self.counts: dict[tuple, tuple[int, ...]] = {}  # kernel row -> its counts as last printed
        self.sums: dict[tuple, list[int]] = {}  # folded row -> counts summed over its kernel rows

    def folded_stack(self, addresses: list[int]) -> str:
        key = tuple(addresses)
        folded = self.folded.get(key)
        if folded is None:
            folded = self.folded[key] = self.fold(addresses)
        return folded

    @property
    def lines(self) -> set[str]:
        """The lines holding a table with a stack to fold."""
        return {t.line for t in self.described.loader.values() if t.stack is not None}

    def line(self, record: dict) -> None:
        """Every table of a loader's line with its stacks folded, in place."""
        for table in self.described.of_line(record["type"]):
            if table.stack is None or table.field not in record:
                continue
            if table.stack in table.keys:
                record[table.field] = self.table(table, record[table.field])
            else:
                record[table.field] = [self.in_place(table, row) for row in record[table.field]]

    def in_place(self, table: LoaderTable, row: list) -> list:
        """The row with its stack folded ("" when none was taken)."""
        addresses = row[table.stack]
        return [*row[:table.stack], self.folded_stack(addresses) if addresses else "", *row[table.stack + 1:]]

    def table(self, table: LoaderTable | str, rows: list[list]) -> list[list]:
        """A table's changed rows, each as the loader prints it (its stack's addresses, its
        row id last), folded: one per folded key, its counts summed over every kernel row
        that folds to it, without the row id."""
        if isinstance(table, str):
            table = self.described.loader[table]
        names = [i for i in table.keys if i != table.stack]
        changed: dict[tuple, list[int]] = {}
        for row in rows:
            counts = tuple(row[i] for i in table.summed)
            # the loader's row id: stacks it could not take print no frames
            kernel_row = ((table.name, row[table.row_id]) if table.row_id is not None and table.row_id < len(row)
                          else (table.name, tuple(row[i] for i in names), tuple(row[table.stack])))
            before = self.counts.get(kernel_row, (0,) * len(counts))
            self.counts[kernel_row] = counts
            folded = list(row[:table.row_id if table.row_id is not None else len(row)])
            folded[table.stack] = self.folded_stack(row[table.stack])
            folded_row = (table.name, tuple(folded[i] for i in table.keys))
            total = self.sums.setdefault(folded_row, [0] * len(counts))
            for i, (now, was) in enumerate(zip(counts, before)):
                total[i] += now - was
            for i, position in enumerate(table.summed):
                folded[position] = total[i]
            changed[folded_row] = folded
        return list(changed.values())
