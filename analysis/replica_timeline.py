"""A replica's rows of the report's timeline: the lag it reported at each snapshot, and its
applier's time per second, busy and split by part (of the events watched whole), so that
where the lag grew and what the applier did then read on the same time axis as purge.
The applier's per-interval table is replica.applier_table's, which the page hands in:
imported here, it would set this module, and the page above it, a floor higher
(scripts/import_floors.py)."""
from __future__ import annotations

import pandas as pd

from .recording import Recording
from .replica_time import BUSY, DOING, LAG, MEASURED, WATCHED

PART_COLORS = {"on_cpu": "#1f77b4", "latch": "#ff7f0e", "row_lock": "#d62728", "io": "#8c564b",
               "redo": "#17becf", "commit_order": "#9467bd", "other": "#7f7f7f"}
LAG_COLUMN, BUSY_COLUMN = "replica lag s", "applier busy ms/s"


def replica_series(rec: Recording, applier: pd.DataFrame, index: pd.Index) -> tuple[pd.DataFrame, list[tuple]]:
    """(columns by interval end on index, rows as charts.TIMELINE_ROWS gives them): the lag
    where it was read, the applier's busy time and each part of its watched time that was
    ever above 0, in ms per second. applier: replica.applier_table(rec)."""
    table = applier.reindex(index)
    lag = rec.counters[rec.counters["name"] == LAG].groupby("t_s")["value"].last()
    per_s = table["length_s"]
    series = {LAG_COLUMN: lag.astype("float64").reindex(index), BUSY_COLUMN: table[BUSY] / 1e6 / per_s}
    measured = sum(table[name] for name in MEASURED.values())
    parts = {**{part: table[name] for part, name in MEASURED.items()},
             "other": (table[WATCHED] - measured).clip(lower=0)}
    shown = [part for part, ns in parts.items() if ns.fillna(0).sum() > 0]
    for part in shown:
        series[f"{DOING[part]} ms/s"] = parts[part] / 1e6 / per_s
    rows = [("Replica lag (s, as the replica reported it)", [LAG_COLUMN], ["#d62728"]),
            ("Replica applier, ms/s: busy, and its watched time by part",
             [BUSY_COLUMN, *(f"{DOING[p]} ms/s" for p in shown)], ["#1d2330", *(PART_COLORS[p] for p in shown)])]
    return pd.DataFrame(series, index=index), rows
