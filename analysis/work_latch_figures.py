"""The latches a kind of work waited on (purge's, or a replica applier's), by name, each with
the threads that held it while anyone waited (the holders table, by the same name): what
the latch part of that work's time was spent on, and who was in its way. From the
work_latches table (probes/latch.bpf.c), whole recording."""
from __future__ import annotations

import pandas as pd

from .holders import named_holders

HOLDERS_SHOWN = 2  # a latch's heaviest holders given; latch_holders has them all


def holders_of(rec, name: str) -> list[dict]:
    """The threads whose release of the latch named so woke the most waiting (anyone's: a
    wake does not say whose wait it ended), heaviest first."""
    mine = named_holders(rec.latch_holders, name)
    if mine.empty:
        return []
    by_thread = mine.groupby(["role", "thread"], as_index=False, observed=True)[["waits", "wait_us"]].sum()
    return [{"role": str(h.role), "thread": str(h.thread), "waits": int(h.waits),
             "wait_ms": round(h.wait_us / 1000, 1)}
            for h in by_thread.sort_values(["wait_us", "thread"], ascending=[False, True]).head(HOLDERS_SHOWN)
            .itertuples()]


def heaviest(rows: pd.DataFrame) -> dict | None:
    """{name, wait_s}: the latch of these work_latches rows with the most waiting, None
    when none (the first name on a tie)."""
    if rows.empty:
        return None
    by_name = rows.groupby("name", observed=True)["wait_us"].sum()
    top = by_name[by_name == by_name.max()].index.min()
    return {"name": str(top), "wait_s": round(float(by_name[top]) / 1e6, 6)}


def owned_between(rec, owner: str, from_s: float, to_s: float) -> pd.DataFrame:
    """The owner's work_latches rows of the intervals ending after from_s and by to_s."""
    table = rec.work_latches
    if table is None or table.empty:
        return table
    t = table["t_s"]
    return table[(table["owner"] == owner) & (t > from_s + 1e-6) & (t <= to_s + 1e-6)]


def work_latches(rec, owner: str, shown: int = 5) -> dict:
    """{waits, wait_ms, latches: [{name, kind, waits, wait_ms, holders}]}: every latch wait
    inside that owner's work, and its heaviest latches by waiting time."""
    table = rec.work_latches
    mine = table[table["owner"] == owner] if table is not None and len(table) else pd.DataFrame()
    if mine.empty:
        return {"waits": 0, "wait_ms": 0.0, "latches": []}
    by_name = (mine.groupby(["name", "kind"], as_index=False, observed=True)[["waits", "wait_us"]].sum()
               .sort_values(["wait_us", "name"], ascending=[False, True]))
    return {"waits": int(mine["waits"].sum()), "wait_ms": round(float(mine["wait_us"].sum()) / 1000, 1),
            "latches": [{"name": str(r.name), "kind": str(r.kind), "waits": int(r.waits),
                         "wait_ms": round(r.wait_us / 1000, 1), "holders": holders_of(rec, str(r.name))}
                        for r in by_name.head(shown).itertuples()]}
