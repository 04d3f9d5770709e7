"""work_latches.parquet: the latches that purge's work and a replica's applier waited on,
by name, from the journal's last latch_tables line (probes/latch.bpf.c's work_latches: a
latch wait inside purge's batch or task, or inside an applier's event, summed again under
that work). The report names them beside the latch share of that work's time; their
holders are in latch_holders, by the same names.

    owner          "purge" or "replication applier"
    name, kind     the latch, as latches.parquet names it (a buffer block's by its page)
    mode           the wait's mode (S, X, SX, other)
    waits, wait_us its waits inside that work and their time (whole recording)"""
from __future__ import annotations

from innostall.format.journal import UNNAMED, latch_names_of, latest_latch_tables, lock_site_names, mode_name
from innostall.format.schema import Schema
from innostall.format.writer_tables import APPLIER_ROLE, PURGE_ONLY

WORK_LATCHES = "work_latches.parquet"
WORK_LATCH_COLUMNS = {"owner": "string", "name": "string", "kind": "string", "mode": "string",
                      "waits": "int64", "wait_us": "float64"}
OWNERS = {1: PURGE_ONLY, 2: APPLIER_ROLE}  # probes/innostall.h enum work_owner


def work_latches_table(records: list[dict], schema: Schema):
    """One row per owner, latch name and mode (a latch's pages, or its addresses over a
    restart of its owner, summed under its name)."""
    import pandas as pd
    modes, names = schema.wait_modes, latch_names_of(records, lock_site_names(records))
    rows = []
    for owner, kind, ident, mode, waits, ns in latest_latch_tables(records).get("work_latches", []):
        name, label = names.get((kind, ident), (UNNAMED, "latch"))
        rows.append((OWNERS.get(owner, f"owner {owner}"), name, label, mode_name(modes, mode), waits, ns / 1000))
    df = pd.DataFrame(rows, columns=list(WORK_LATCH_COLUMNS)).astype(WORK_LATCH_COLUMNS)
    if not len(df):
        return df
    return (df.groupby(["owner", "name", "kind", "mode"], as_index=False, observed=True)[["waits", "wait_us"]].sum()
            .astype(WORK_LATCH_COLUMNS))
