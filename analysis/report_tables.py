"""Tables behind the report's sections: small pure functions from a recording's tidy tables
to the DataFrames the HTML, export and diff draw. Generic over counter and histogram names,
so a new measurement shows up without touching the reports."""
from __future__ import annotations

import pandas as pd

from innostall.format.journal import SERVER_STATE
from innostall.format.schema import prose_unit
from innostall.names import leaf_first, path

from .histogram import slot_bounds, stats
from .recording import Recording
from .timeline import interval_lengths, per_interval

PURGE_COUNTERS = ["purge_batches", "purge_empty_batches", "purge_pages"]
PURGE_RATES = {"purge_batches": "batches/s", "purge_empty_batches": "empty batches/s",
               "purge_pages": "undo pages/s"}

LATCH_SECTIONS = ["block_latch", "other_latch"]  # latch wait time, drawn as one group


# A gauge is known from the first interval in which its read count moved; before that it
# holds 0, which is not a level (the history length was not read yet).
GAUGE_READS = {"history_length": "history_reads", "history_length_peak": "history_reads"}


def is_gauge(rec: Recording, name: str) -> bool:
    """A counter that holds a level at each snapshot (the history length): never a rate,
    never a total; so is the server's state read from its memory (server.NAME)."""
    return name in rec.schema.gauges or name.startswith(SERVER_STATE)


def server_levels(rec: Recording, name: str) -> pd.Series:
    """server.NAME, the server's state read from its memory, by snapshot time (t_s): a
    snapshot that did not read it has no row."""
    rows = rec.counters[rec.counters["name"] == f"{SERVER_STATE}{name}"]
    return rows.groupby("t_s")["value"].last()


def gauge_levels(rec: Recording, table: pd.DataFrame) -> pd.DataFrame:
    """The gauge columns of an interval table as nullable levels: NA before each was first
    read (or throughout, if its read count is not in the table)."""
    for name in [c for c in table.columns if is_gauge(rec, c)]:
        if name.startswith(SERVER_STATE):  # a row where it was read, none where it was not
            read_at = server_levels(rec, name.removeprefix(SERVER_STATE)).index
            table[name] = table[name].astype("Int64").where(table.index.isin(read_at))
            continue
        reads = GAUGE_READS.get(name)
        counts = (per_interval(rec, [reads])[reads].reindex(table.index, fill_value=0)
                  if reads else pd.Series(1, index=table.index))
        table[name] = table[name].astype("Int64").where(counts.cumsum() > 0)
    return table


def is_running_max(rec: Recording, name: str) -> bool:
    """A counter that holds a running maximum (version_walk_max_depth): its deltas sum to
    the maximum, but a rate of it means nothing."""
    return rec.schema.kind(name) == "max"


def latch_hists(rec: Recording) -> list[str]:
    return [name for section in LATCH_SECTIONS for name in rec.schema.hists_of(section)]


def counter_names(rec: Recording) -> list[str]:
    return sorted(str(n) for n in rec.counters["name"].unique())


def hist_names(rec: Recording) -> list[str]:
    return sorted(str(n) for n in rec.hists["name"].unique())


def hist_title(rec: Recording, name: str) -> tuple[str, str]:
    """(title, unit) of a histogram, as the recording's schema gives them."""
    return rec.schema.hist_title(name), prose_unit(rec.schema.hist_unit(name))


def interval_table(rec: Recording, names: list[str] | None = None) -> pd.DataFrame:
    """One row per interval (indexed by its end, seconds from attach), one column per
    counter delta, or per gauge its level (NA while unknown); all counters unless names
    are given."""
    return gauge_levels(rec, per_interval(rec, counter_names(rec) if names is None else names))


def per_second(table: pd.DataFrame) -> pd.DataFrame:
    """Counter deltas as rates; an interval of zero length (the final snapshot taken at the
    same instant as the last interval) is dropped rather than divided by."""
    lengths = interval_lengths(table)
    return table.div(lengths, axis=0)[lengths.notna()]


def purge_throughput(rec: Recording) -> pd.DataFrame:
    """Purge batches, empty batches and undo pages per second, per interval."""
    return per_second(interval_table(rec, PURGE_COUNTERS)).rename(columns=PURGE_RATES)


def hist_slots(rec: Recording, names: str | list[str], top: int | None = None) -> pd.DataFrame:
    """A histogram (or several added up) over the whole recording, one row per log2 slot
    from 0 to top (default: the highest non-empty one): slot, low, high, label, count."""
    counts = rec.hist(names)
    if top is None:
        top = int(counts[counts > 0].index.max()) if (counts > 0).any() else 0
    slots = pd.RangeIndex(top + 1, name="slot")
    bounds = [slot_bounds(s) for s in slots]
    return pd.DataFrame({
        "slot": slots,
        "low": [lo for lo, _ in bounds],
        "high": [hi for _, hi in bounds],
        "label": [f"{lo}–{hi}" for lo, hi in bounds],
        "count": counts.reindex(slots, fill_value=0).to_numpy(),
    })


def hist_over_time(rec: Recording, names: str | list[str]) -> pd.DataFrame:
    """Counts per interval (rows, every interval by its end time) and log2 slot (columns,
    0 to the highest non-empty), of one histogram or several added up."""
    rows = rec.hists[rec.hists["name"].isin([names] if isinstance(names, str) else names)]
    # pivot_table's sum, in a third of its time (a page draws one of these per histogram)
    table = rows.groupby(["t_s", "slot"], observed=True)["count"].sum().unstack("slot", fill_value=0)
    ends = pd.Index(sorted(rec.counters["t_s"].unique()), name="t_s")
    slots = pd.RangeIndex(int(table.columns.max()) + 1 if len(table.columns) else 1, name="slot")
    return table.reindex(index=ends, columns=slots, fill_value=0).astype("int64")


def hist_stats(rec: Recording, name: str) -> dict:
    """Event count and estimated percentiles of one histogram; max is the top of the highest
    non-empty slot (an upper bound)."""
    counts = rec.hist(name)
    return {"count": int(counts.sum()), **stats(counts)}


def counter_overview(rec: Recording, names: list[str] | None = None) -> pd.DataFrame:
    """Per counter: total, mean rate, the busiest interval and how many intervals saw any.
    Running maxima get a total (the maximum) and no rates. Gauges are levels, neither
    totals nor rates: they are left out (see gauge_overview)."""
    names = [n for n in (counter_names(rec) if names is None else names) if not is_gauge(rec, n)]
    table = interval_table(rec, names)
    rated = [c for c in table.columns if not is_running_max(rec, c)]
    rates = per_second(table[rated])
    moved = rates.columns[rates.max() > 0] if len(rates) else []
    duration = rec.duration_s
    return pd.DataFrame({
        "total": table.sum(),
        "per_s": (table[rated].sum() / duration) if duration else pd.Series(float("nan"), index=rated),
        "peak_per_s": rates[moved].max(),
        "peak_at_s": rates[moved].idxmax(),
        "active_intervals": (table > 0).sum(),
    }, index=table.columns).rename_axis("counter")


def gauge_overview(rec: Recording) -> pd.DataFrame:
    """Per gauge that was ever read: its first, last, mean and highest level."""
    names = [n for n in counter_names(rec) if is_gauge(rec, n)]
    levels = interval_table(rec, names).astype("float64") if names else pd.DataFrame()
    rows = {n: {"first": levels[n].dropna().iloc[0], "last": levels[n].dropna().iloc[-1],
                "mean": levels[n].mean(), "max": levels[n].max()}
            for n in names if levels[n].notna().any()}
    return pd.DataFrame.from_dict(rows, orient="index", columns=["first", "last", "mean", "max"]
                                  ).rename_axis("gauge")


def with_frames(rows: pd.DataFrame, shown: int = 4) -> pd.DataFrame:
    """Rows with their folded stack split leaf first ('frames'), and a one-line 'path' of
    the first few frames without their argument lists."""
    rows = rows.copy()
    rows["frames"] = [leaf_first(s) for s in rows["stack"]]
    rows["path"] = [path(frames, shown) for frames in rows["frames"]]
    return rows.reset_index(drop=True)


def deepest_walks(walks: pd.DataFrame, top: int = 10) -> pd.DataFrame:
    """The deepest walks, stacks leaf first (the frame doing the walk)."""
    return with_frames(walks.nlargest(top, "depth"))


def table_of(rec: Recording, name: str) -> pd.DataFrame | None:
    """One of the recording's event tables (walks, pages, wait_stacks), or None when it has
    no rows: older recordings, probes not attached, or nothing happened."""
    table = getattr(rec, name, None)  # older analysis code has fewer tables
    return table if table is not None and len(table) else None


def top_wait_stacks(stacks: pd.DataFrame, top: int = 10) -> pd.DataFrame:
    """The stacks that waited longest on latches, split leaf first."""
    return with_frames(stacks.nlargest(top, "wait_us"), shown=5)


def story_series(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the report's timeline, from purge.purge_table: the history (its pinned
    and purgeable parts; NaN where unknown) and, per second, purge's undo pages, the DML
    delay (ms), deep version walks and the block-lock and other latch wait time (ms)."""
    per_s = table["length_s"]
    return pd.DataFrame({
        "history": table["history"], "pinned": table["pinned"], "purgeable": table["purgeable"],
        "purge pages/s": table["purge_pages"] / per_s,
        "DML delay ms/s": table["dml_delay_us"] / 1e3 / per_s,
        "deep walks/s": table["deep_walks"] / per_s,
        "block-lock wait ms/s": table["block_wait_ns"] / 1e6 / per_s,
        "other latch wait ms/s": table["other_latch_wait_ns"] / 1e6 / per_s,
    }, index=table.index)
