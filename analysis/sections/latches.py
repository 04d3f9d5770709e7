"""The latches section: every latch waited on, by name, with its waiters' stacks and its
holders' (figures under latches), the latches whose releases woke the most waiting
(latch_holders), and its text lines: the most contended latches and their waiting per
interval."""
from __future__ import annotations

from innostall.names import is_address_name, leaf_path

from ..holders import top_holders
from ..recording import Recording
from ..wording.numbers import shorten

KEYS = ("latches", "latch_holders")
INTERVAL_ROWS = 60  # rows of a per-interval table; a longer recording's are bucketed
NAME_COLUMN = 32  # characters of a latch's name over its column: a block's page, table and index fit


def latch_waiters(rec: Recording, name: str, kind: str, top: int = 3) -> list[dict]:
    """The stacks that waited longest on a latch: its rows of the waits summed by latch and
    stack once per recording (a filter, a groupby and nlargest per latch cost ~4 ms, on
    tables of tens of rows), heaviest first, ties in the stacks' order as nlargest keeps them."""
    by_latch = rec.derived(("latch_waiters",), (rec.latch_stacks,),
                           lambda: summed_heaviest_first(rec.latch_stacks, ["name", "kind"], ["stack"]))
    return [{"stack": stack, "wait_ms": round(float(wait_us) / 1000, 3)}
            for stack, wait_us in by_latch.get((name, kind), [])[:top]]


def summed_heaviest_first(table, keys: list[str], parts: list[str]) -> dict[tuple, list[tuple]]:
    """table's wait_us summed by keys and parts once for all, as {keys' values: [(*parts'
    values, wait_us)]}, heaviest first, ties in the parts' order (as nlargest keeps them)."""
    sums = table.groupby([*keys, *parts], observed=True)["wait_us"].sum()
    by_key: dict[tuple, list[tuple]] = {}
    for index, wait_us in sums.items():
        by_key.setdefault(index[:len(keys)], []).append((*index[len(keys):], wait_us))
    for rows in by_key.values():
        rows.sort(key=lambda row: row[-1], reverse=True)  # stable
    return by_key


def latch_holders_of(rec: Recording, name: str, top: int = 3) -> list[dict]:
    """Who held the latch while others waited: the wakers' stacks, weighted by the waiting
    they ended, with their role. Holders are matched by name, so none for `unknown`, which
    may be several latches."""
    holders = rec.latch_holders
    if name == "unknown" or holders is None or not len(holders) or "name" not in holders:
        return []
    by_name = rec.derived(("latch_holders_of",), (holders,),
                          lambda: summed_heaviest_first(holders, ["name"], ["stack", "role"]))
    return [{"stack": stack, "wait_ms": round(float(wait_us) / 1000, 3), "role": role}
            for stack, role, wait_us in by_name.get((name,), [])[:top]]


def unstacked_waits(rec: Recording) -> dict | None:
    """The latch waits too short for a stack (record --latch-stack-threshold): counted and
    timed with their latch, absent from the stack tables and flame graphs. None where every
    wait kept its stack."""
    threshold = rec.setting("latch_stack_threshold_us", 0)
    if not threshold or "latch_waits_unstacked" not in rec.schema.counters:
        return None
    waited_ns = rec.counter_total("block_wait_ns") + rec.counter_total("other_latch_wait_ns")
    ns = rec.counter_total("latch_unstacked_ns")
    return {"threshold_us": threshold, "waits": rec.counter_total("latch_waits_unstacked"),
            "wait_ms": round(ns / 1e6, 1), "wait_pct": round(100 * ns / waited_ns, 1) if waited_ns else None}


def latches_summary(rec: Recording, top: int = 10) -> dict:
    """The most contended latches by wait time, each named (`unknown` where nothing could
    name it), with its waiters' stacks and its holders' (latch_holders_of)."""
    latches = rec.latches
    total_us = float(latches["wait_us"].sum())
    named = (latches["name"] != "unknown") & ~latches["name"].map(is_address_name).astype(bool)
    named_us = float(latches.loc[named, "wait_us"].sum())
    rows = latches.nlargest(top, "wait_us")
    return {
        "wait_ms": round(total_us / 1000, 1),
        "unstacked": unstacked_waits(rec),
        "named_pct": round(100 * named_us / total_us, 1) if total_us else None,
        "top": [{"name": r.name, "kind": r.kind, "waits": int(r.waits),
                 "wait_ms": round(float(r.wait_us) / 1000, 3), "p99_us": float(r.p99_us),
                 "max_us": round(float(r.max_us), 1), "holders": latch_holders_of(rec, r.name),
                 "waiters": latch_waiters(rec, r.name, r.kind)} for r in rows.itertuples()],
    }


def figures(rec: Recording) -> dict:
    return {"latches": latches_summary(rec), "latch_holders": top_holders(rec.latch_holders)}


def findings(rec: Recording, told: dict) -> list[str]:
    return []  # the block locks' findings name the latches that stood out


def shown(rec: Recording) -> dict:
    """What its lines show beyond the summary's figures: the latches' waiting per interval."""
    return {"timeline": rec.latch_timeline}


def text_lines(told: dict, drawn: dict, found: list[str], top: int = 10) -> list[str]:
    """The most contended latches by name, and the per-interval wait time of the top ones."""
    latches = told["latches"]
    if not latches["top"]:
        return []
    lines = ["", f"Most contended latches (by wait time; {latches['wait_ms']:.1f} ms in all, "
                 f"{latches['named_pct']:.1f}% of it named)",
             f"  {'latch':<48} {'kind':<8} {'waits':>7} {'wait ms':>9} {'p99 us':>8}  top waiter (leaf first)"]
    for t in latches["top"][:top]:
        waiter = leaf_path(t["waiters"][0]["stack"], 3) if t["waiters"] else ""
        lines.append(f"  {shorten(t['name'], 48):<48} {t['kind']:<8} {t['waits']:>7} {t['wait_ms']:>9.1f} "
                     f"{t['p99_us']:>8.0f}  {waiter}")
    timeline = drawn["timeline"]
    names = [t["name"] for t in latches["top"][:3]]
    if len(timeline) and names:
        per = timeline[timeline["name"].isin(names)].pivot_table(
            index="interval", columns="name", values="wait_us", aggfunc="sum", fill_value=0)
        per = per.reindex(columns=names, fill_value=0)
        title = "Latch wait ms per interval (the three most contended)"
        if len(per) > INTERVAL_ROWS:  # a long recording: each row the busiest of its intervals
            buckets = per.index.to_series().rank(method="first").sub(1).mul(INTERVAL_ROWS).floordiv(len(per))
            grouped = per.groupby(buckets.to_numpy())
            per = grouped.max().set_axis([f"{lo}-{hi}" for lo, hi in zip(per.index.to_series().groupby(
                buckets.to_numpy()).min(), per.index.to_series().groupby(buckets.to_numpy()).max())])
            title = (f"Latch wait ms per interval (the three most contended; {len(timeline['interval'].unique()):,} "
                     f"intervals with waits in {len(per)} rows, each the highest of its intervals)")
        lines += ["", title,
                  "  " + f"{'interval':>11} " + " ".join(f"{shorten(n, NAME_COLUMN):>{NAME_COLUMN}}" for n in names)]
        lines += ["  " + f"{i:>11} " + " ".join(f"{v / 1000:>{NAME_COLUMN}.1f}" for v in row)
                  for i, row in zip(per.index, per.to_numpy().tolist())]
    return lines
