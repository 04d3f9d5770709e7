"""Per-interval series of a recording, and a one-line terminal view of them."""
from __future__ import annotations

import numpy as np
import pandas as pd

BLOCKS = " ▁▂▃▄▅▆▇█"


def per_interval(rec, names: list[str]) -> pd.DataFrame:
    """One row per interval, one column per counter (its delta), indexed by end time. A copy
    of the one derived once per recording: its callers add columns to theirs. rec is a
    Recording (analysis/recording.py), or a stand-in with its counters alone (tests/pure/
    test_estimates.py), which has no cache of derived tables: told apart by that, not by
    its class, so that this module, under every figure, imports nothing of the analysis."""
    names = list(names)
    if not hasattr(rec, "derived"):
        return summed_per_interval(rec.counters, names)
    table = rec.derived(("per_interval", *names), (rec.counters,), lambda: picked_per_interval(
        rec.derived(("per_interval",), (rec.counters,), lambda: every_counter_per_interval(rec.counters)),
        rec.counters, names))
    return table.copy()


def interval_lengths(table: pd.DataFrame) -> pd.Series:
    """Seconds each interval lasted (table indexed by interval end): the first one starts at
    the attach (t = 0)."""
    ends = table.index.to_series()
    return ends.diff().fillna(ends).where(lambda s: s > 0)


class EveryCounter:
    """Each counter's sum per interval (0 where it has no row) and where it has a row, as
    arrays: one groupby for the dozens of name lists a report asks for (each its own groupby
    cost 10 ms, and a column picked from a frame of 200 named columns a millisecond)."""

    def __init__(self, counters: pd.DataFrame):
        grouped = counters.groupby(["t_s", "name"], observed=True)["value"]
        sums = grouped.sum().unstack("name", fill_value=0)
        self.index = sums.index
        self.sums = sums.to_numpy()
        self.seen = (grouped.size().unstack("name", fill_value=0) > 0).to_numpy()
        self.column = {name: i for i, name in enumerate(sums.columns)}
        self.whole = self.sums.dtype == np.int64  # else summed_per_interval's own way


def every_counter_per_interval(counters: pd.DataFrame) -> EveryCounter:
    return EveryCounter(counters)


def picked_per_interval(every: EveryCounter, counters: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """summed_per_interval(counters, names), cut from every counter's sums: the intervals
    where one of the names has a row; when a cell has none, every value goes through float64
    and the cell is 0, as unstack's NaN and the fill leave them."""
    present = [name for name in dict.fromkeys(names) if name in every.column]
    if not present:  # no row of any: no interval (a recording of no replica asks for its applier's)
        return pd.DataFrame(np.zeros((0, len(names)), dtype="int64"), columns=pd.Index(names, name="name"),
                            index=pd.Index([], dtype=counters["t_s"].dtype, name="t_s"))
    if not every.whole:
        return summed_per_interval(counters, names)
    picked = [every.column[name] for name in present]
    held = every.seen[:, picked]
    rows = held.any(axis=1)
    held, sums = held[rows], every.sums[rows][:, picked]
    if not held.all():
        sums = np.where(held, sums.astype("float64"), 0.0)
    at = {name: i for i, name in enumerate(present)}
    values = np.zeros((len(sums), len(names)), dtype=sums.dtype)
    for i, name in enumerate(names):
        if name in at:
            values[:, i] = sums[:, at[name]]
    table = pd.DataFrame(values, index=every.index[rows], columns=pd.Index(names, name="name"))
    return table.astype("int64")


def summed_per_interval(counters: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    rows = counters[counters["name"].isin(names)]
    # pivot_table's sum, in a third of its time (the views ask for a dozen of these)
    table = rows.groupby(["t_s", "name"], observed=True)["value"].sum().unstack("name")
    return table.reindex(columns=names, fill_value=0).fillna(0).astype("int64")


def sparkline(values: pd.Series, width: int = 100) -> str:
    """One character per interval; longer series are cut into `width` buckets, each shown
    by its peak so short bursts stay visible."""
    if len(values) > width:
        buckets = pd.Series(range(len(values))) * width // len(values)
        values = pd.Series(values.to_numpy()).groupby(buckets.to_numpy()).max()
    peak = values.max()
    if not peak:
        return BLOCKS[0] * len(values)
    return "".join(BLOCKS[round(v * (len(BLOCKS) - 1) / peak)] if v else BLOCKS[0]
                   for v in values)
