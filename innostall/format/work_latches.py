"""work_latches.parquet: the latches that purge's work and a replica's applier waited on, by
name and interval, from the journal's work_latches lines (probes/latch.bpf.c's
work_latches: a latch wait inside purge's batch or task, or inside an applier's event,
summed again under that work; the loader prints the entries that changed, cumulative,
just before each snapshot, which owns them). The report names the latches of each phase
and of the whole recording; their holders are in latch_holders, by the same names.

    interval, t_s  the interval (its end, seconds from the attach)
    owner          "purge" or "replication applier"
    name, kind     the latch, as latches.parquet names it (a buffer block's by its page)
    mode           the wait's mode (S, X, SX, other)
    waits, wait_us its waits inside that work in the interval, and their time"""
from __future__ import annotations

from innostall.format.journal import UNNAMED, interval_growth, latch_names_of, lock_site_names, mode_name
from innostall.format.schema import Schema
from innostall.format.tables import dtypes, format_4
from innostall.format.writer_tables import APPLIER_ROLE, PURGE_ONLY

WORK_LATCH_COLUMNS = dtypes("work_latches")
OWNERS = {1: PURGE_ONLY, 2: APPLIER_ROLE}  # probes/innostall.h enum work_owner
KEY = format_4().recording["work_latches"].keys


def work_latches_table(records: list[dict], schema: Schema):
    """One row per interval, owner, latch name and mode with waits in it: the deltas of
    the cumulative rows (a latch's pages, or its addresses, summed under its name)."""
    import pandas as pd
    modes, names = schema.wait_modes, latch_names_of(records, lock_site_names(records))

    def rows_of(line: dict):
        return (((owner, kind, ident, mode), None, waits, ns)
                for owner, kind, ident, mode, waits, ns in line.get("latches", []))
    rows = []
    for interval, t, (owner, kind, ident, mode), _, waits, ns in interval_growth(records, "work_latches", rows_of):
        name, label = names.get((kind, ident), (UNNAMED, "latch"))
        rows.append((interval, t, OWNERS.get(owner, f"owner {owner}"), name, label, mode_name(modes, mode),
                     waits, ns / 1000))
    df = pd.DataFrame(rows, columns=list(WORK_LATCH_COLUMNS)).astype(WORK_LATCH_COLUMNS)
    if not len(df):
        return df
    return df.groupby(KEY, as_index=False, observed=True)[["waits", "wait_us"]].sum().astype(WORK_LATCH_COLUMNS)
