"""Per-interval series of a recording, and a one-line terminal view of them."""
from __future__ import annotations

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


def every_counter_per_interval(counters: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each counter's sum per interval (0 where it has no row), and where it has a row: one
    groupby for the dozens of name lists a report asks for (each its own groupby cost 10 ms)."""
    grouped = counters.groupby(["t_s", "name"], observed=True)["value"]
    return grouped.sum().unstack("name", fill_value=0), grouped.size().unstack("name", fill_value=0) > 0


def picked_per_interval(every: tuple[pd.DataFrame, pd.DataFrame], counters: pd.DataFrame,
                        names: list[str]) -> pd.DataFrame:
    """summed_per_interval(counters, names), cut from every_counter_per_interval's tables:
    the intervals where one of the names has a row, a cell without a row NaN until filled
    (as unstack leaves it, through float64 where there is one)."""
    sums, seen = every
    present = [name for name in dict.fromkeys(names) if name in sums.columns]
    if not present:
        return summed_per_interval(counters, names)
    held = seen[present].to_numpy()
    rows = held.any(axis=1)
    table = sums[present] if rows.all() else sums.loc[rows, present]
    if not held[rows].all():  # a cell without a row: NaN, as unstack leaves it (pandas' where costs ms)
        table = table.where(seen.loc[rows, present])
    # reindex also makes the columns a plain Index, as summed_per_interval's are
    return table.reindex(columns=names, fill_value=0).fillna(0).astype("int64")


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
