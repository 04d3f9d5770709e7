"""The per-interval purge table (purge.purge_table) as plain arrays, taken once per table,
and spans of its rows that read like a DataFrame's slice where the phases' figures need
them: `span["purge_pages"].sum()`, `"purge_batch_split_ns" in span`.

Why: an 8-hour recording has thousands of phases, events and runs, and each pandas slice
and sum costs tens of microseconds; over the figures of every phase that was most of a
long report's time (issue 30). A numpy slice is a view, its sum a few microseconds.

The columns summed over spans hold no NaN (counters' deltas, lengths, flags); those that
may (the history) are read through `known`, which skips them as pandas would."""
from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

# transactions: a history this short is no backlog (a server committing thousands a second
# shows a few hundred between two batches while purge keeps up). Here, with the table's
# columns, because the verdicts (phases.py) and the pinning views (pinning.py) read it alike.
BACKLOG_MIN = 1000
# The sleep tracepoint watched this share of purge's time at least (the purge_*_split_ns
# columns against purge_*_ns), or no bound is named: the largest part of a few milliseconds
# watched is no cause. Read by the figures (purge_time.rows_bound) and the words alike.
WATCHED_ENOUGH = 0.5
# Or at least SAMPLED_ENOUGH of it, where the time watched is spread over it: some of it in
# each of SPREAD_PARTS equal parts of the intervals it worked in. The governor opens a
# sampled group's windows by the budget, not by what the threads are doing, so windows
# throughout a stall sample its time as a profiler's ticks do; a few milliseconds at one
# edge do not (and a fifth of the time is a fifth of the intervals' worth at least). At the
# default budget a redo-bound replica's applier costs more than the whole budget while it
# applies: attached 11-41% of each second of the stall, 43-52% of it in all (MariaDB
# 11.4.5, a 1.7 us uprobe hit); purge's 400-ms batches on a slow disk were watched whole
# 27-46% of their time, in 16-22 of 31-34 seconds.
SAMPLED_ENOUGH = 0.2
SPREAD_PARTS = 3


def watched_enough(share: float, watched: Sequence[bool]) -> bool:
    """Whether a span's parts may name its cause: watched `share` of its time, and whether
    each interval it worked in (in time order) had some of it watched."""
    if share >= WATCHED_ENOUGH:
        return True
    flags = np.asarray(watched, dtype=bool)
    return share >= SAMPLED_ENOUGH and len(flags) >= SPREAD_PARTS \
        and all(part.any() for part in np.array_split(flags, SPREAD_PARTS))


class Columns:
    """A table's columns as numpy arrays (numbers) or lists (anything else), each taken on
    first use; `t` is its index (the intervals' end times)."""

    def __init__(self, table: pd.DataFrame):
        self.table = table
        self.t = table.index.to_numpy(dtype="float64")
        self._arrays: dict[str, object] = {}
        self._known: dict[str, np.ndarray] = {}
        self._running: dict[str, list] = {}

    def __getitem__(self, name: str):
        if name not in self._arrays:
            column = self.table[name]
            # objects (the views' fields) as Python values, as iterating the table gives them
            self._arrays[name] = column.tolist() if column.dtype == object else column.to_numpy()
        return self._arrays[name]

    def __contains__(self, name: str) -> bool:
        return name in self.table.columns

    def known(self, name: str) -> np.ndarray:
        """The rows where a float column is not NaN, in order."""
        if name not in self._known:
            self._known[name] = np.flatnonzero(~np.isnan(self[name].astype("float64")))
        return self._known[name]

    def known_in(self, name: str, a: int, b: int) -> np.ndarray:
        """The rows from a to b (b included) where the column is known."""
        rows = self.known(name)
        return rows[np.searchsorted(rows, a):np.searchsorted(rows, b, side="right")]

    def last_known_before(self, name: str, a: int) -> int | None:
        rows = self.known(name)
        at = np.searchsorted(rows, a)
        return int(rows[at - 1]) if at else None

    def first_known_after(self, name: str, b: int) -> int | None:
        rows = self.known(name)
        at = np.searchsorted(rows, b, side="right")
        return int(rows[at]) if at < len(rows) else None

    def total(self, name: str, a: int, b: int):
        """The column's sum over rows a..b. Whole numbers (counts, flags) from running sums
        kept as Python integers, exact at any size and one subtraction a span; others summed."""
        values = self[name]
        if not (isinstance(values, np.ndarray) and values.dtype.kind in "iub"):
            return values[a:b + 1].sum()
        if name not in self._running:
            self._running[name] = [0, *itertools.accumulate(values.tolist())]
        running = self._running[name]
        return running[b + 1] - running[a]

    def span(self, a: int, b: int) -> Span:
        return Span(self, a, b)


class Span:
    """Rows a..b (b included) of a table: each column's slice by name, and len()."""

    def __init__(self, columns: Columns, a: int, b: int):
        self.columns, self.a, self.b = columns, a, b

    def __getitem__(self, name: str):
        return self.columns[name][self.a:self.b + 1]

    def __contains__(self, name: str) -> bool:
        return name in self.columns

    def __len__(self) -> int:
        return self.b - self.a + 1

    def total(self, name: str):
        return self.columns.total(name, self.a, self.b)


def total(rows, name: str):
    """A column's sum over some rows: a Span's, or a DataFrame's."""
    return rows.total(name) if isinstance(rows, Span) else rows[name].sum()


_last: Columns | None = None


def columns(table: pd.DataFrame) -> Columns:
    """The columns of table, taken once: the phases of one table are cut and told one after
    another, so the last table's are kept (its columns are not changed once it is built)."""
    global _last
    if _last is None or _last.table is not table:
        _last = Columns(table)
    return _last


def span_max(values: np.ndarray) -> float:
    """The largest known value (NaN when none is), as pandas' max."""
    known = values[~np.isnan(values)]
    return float(known.max()) if len(known) else float("nan")
