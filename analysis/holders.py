"""Latch holders: the threads whose release of a latch woke its waiters (probes/wakeup.bpf.c),
by latch, weighted by the wait time they caused, with the role each one plays (its `role`
column, written with the recording: innostall/format/roles.py)."""
from __future__ import annotations

import pandas as pd

def named_holders(holders: pd.DataFrame | None, name: str) -> pd.DataFrame:
    """The holders' rows of the latch named so; none for `unknown`, which may be several
    latches, and none where no holder was recorded (record --holders)."""
    if name == "unknown" or holders is None or not len(holders) or "name" not in holders:
        return pd.DataFrame(columns=["latch", "name", "mode", "thread", "role", "stack", "waits", "wait_us"])
    return holders[holders["name"] == name]


def top_holders(holders: pd.DataFrame, latches: int = 5, per_latch: int = 3) -> list[dict]:
    """The latches whose holders caused the most waiting, each with its top holders
    (role, thread name, stack, waits, ms of waiting caused), heaviest first."""
    if holders is None or not len(holders):
        return []
    by_latch = holders.groupby("latch")["wait_us"].sum().sort_values(ascending=False)
    out = []
    for latch, total_us in by_latch.head(latches).items():
        rows = holders[holders["latch"] == latch].nlargest(per_latch, "wait_us")
        named = rows["name"].iloc[0] if "name" in rows else None
        out.append({"latch": f"{int(latch):#x}", "name": named or "unknown",
                    "wait_ms": round(total_us / 1000, 1),
                    "holders": [{"role": r.role, "thread": r.thread, "waits": int(r.waits),
                                 "wait_ms": round(r.wait_us / 1000, 1), "stack": r.stack}
                                for r in rows.itertuples()]})
    return out
