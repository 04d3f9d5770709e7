"""The replica applier's counters as the recording has them: per interval, each time
counter with its events in progress added, and their totals over the recording. What the
counters are and how their time splits is replica_time.py's; this module reads them."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .replica_time import COUNTERS, OPEN
from .timeline import per_interval


def applier_deltas(rec) -> pd.DataFrame:
    """Per interval (index t_s, every snapshot of the recording): the applier's counters'
    deltas, each time counter with its events in progress added (OPEN: its gauge's level
    at the interval's end less the level at the one before; for a window's first, the
    level at the window's start). Derived once per recording (the replica's figures, words
    and checks ask for it a dozen times), a copy each time."""
    table = rec.derived(("applier_deltas",), (rec.counters, rec.gauges_before), lambda: derive_applier_deltas(rec))
    return table.copy()


def derive_applier_deltas(rec) -> pd.DataFrame:
    ends = pd.Index(sorted(rec.counters["t_s"].unique()), name="t_s", dtype="float64")
    table = per_interval(rec, [*COUNTERS, *OPEN.values()]).reindex(ends, fill_value=0)
    before = rec.gauges_before  # a window's: the level at its start
    # as arrays: a dozen Series operations per counter cost 18 ms a recording, most of its summary's
    columns = {name: table[name].to_numpy() for name in COUNTERS}
    for name, gauge in OPEN.items():
        level = table[gauge].to_numpy()
        previous = np.concatenate(([before.get(gauge, 0)], level))[:len(level)]
        # An event in progress whose probes were detached before it ended leaves the gauge
        # and never reaches the counter: its time so far drops out, and the interval's delta
        # would go below 0 (busy -62767 µs of 3.0 s). What was seen of that interval is 0.
        columns[name] = np.maximum(columns[name] + level - previous, 0)
    deltas = pd.DataFrame(columns, index=table.index)
    deltas.columns.name = table.columns.name
    return deltas


def applier_totals(rec) -> dict[str, int]:
    """The counters over the recording, the events still being applied at its end so far."""
    table = applier_deltas(rec)
    return {name: int(table[name].sum()) for name in COUNTERS}
