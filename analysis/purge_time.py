"""Where purge's time goes: each batch's (the coordinator's) and each worker task's wall
time split into on-CPU, I/O, latch waits and the rest, from the per-interval table's
purge_*_ns columns; and the largest share, which names a phase as CPU-, I/O- or
latch-bound.

The I/O is the page reads the page-read probe timed or, where more, the spans' sleeps
waiting on I/O (purge_*_io_asleep_ns, sched.bpf.c): the sleeps are watched over the
same windows as the split's total, the reads only while their own probe was attached, which
the budget may sample more thinly (a slow disk's purge, its reads attached 7-12% of the
time: 96-97% of the coordinator's time 'other' before)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .interval_columns import total, watched_enough
from .recording import Recording

SPLIT = ("cpu", "io", "latch", "other")  # where a batch's time goes


def time_split(totals: dict[str, float]) -> dict[str, float] | None:
    """cpu, io, latch and other (the rest, never below 0) in ns, from a total and its three
    measured parts; None when no time was measured."""
    total = totals.get("total", 0)
    if not total:
        return None
    parts = {k: float(totals.get(k, 0)) for k in ("cpu", "io", "latch")}
    return {**parts, "other": max(0.0, total - sum(parts.values()))}


def watched_split_columns(rec: Recording) -> list[str]:
    """The wall time the sleep tracepoint watched and the sleeps on I/O in it, in
    recordings that have them (it was not sampled before; the sleeps were not kept)."""
    names = set(rec.counters["name"].unique())
    return [f"purge_{who}_{what}_ns" for what in ("split", "io_asleep") for who in ("batch", "worker")
            if f"purge_{who}_{what}_ns" in names]


def split_of(rows: pd.DataFrame, who: str) -> dict | None:
    """The split of the spans the sleep tracepoint watched whole (purge_*_split_ns; before
    it was sampled, every span: the whole wall time)."""
    watched, io_asleep = f"purge_{who}_split_ns", f"purge_{who}_io_asleep_ns"
    parts = {part: total(rows, f"purge_{who}_{part}_ns") for part in ("cpu", "io", "latch")}
    if io_asleep in rows:  # the reads' probe may have been attached less than the sleeps'
        parts["io"] = max(parts["io"], total(rows, io_asleep))
    return time_split({"total": total(rows, watched if watched in rows else f"purge_{who}_ns"), **parts})


def coordinator_split(rows: pd.DataFrame) -> dict | None:
    return split_of(rows, "batch")


def worker_split(rows: pd.DataFrame) -> dict | None:
    return split_of(rows, "worker")


def purge_split(coordinator: dict | None, workers: dict | None) -> dict | None:
    """The time of purge as a whole. While workers run a batch, the coordinator waits for
    them (off CPU, in 'other'): that wait is the workers' time, so it is counted once, as
    theirs."""
    if not workers:
        return coordinator
    if not coordinator:
        return workers
    return {k: workers[k] + (coordinator[k] if k != "other" else 0.0) for k in SPLIT}


def bound(split: dict | None) -> tuple[str, float] | None:
    """The largest share of purge time: (cpu, io, latch or other, its share 0..1)."""
    if not split or not sum(split.values()):
        return None
    part = max(SPLIT, key=lambda k: split[k])
    return part, split[part] / sum(split.values())


def split_watched(rows) -> float | None:
    """The share of purge's time (its batches' and workers') that the sleep tracepoint
    watched whole over some intervals; None where it was not sampled (every span split)
    or no time was spent."""
    if "purge_batch_split_ns" not in rows:
        return None
    spent = total(rows, "purge_batch_ns") + total(rows, "purge_worker_ns")
    watched = total(rows, "purge_batch_split_ns") + (
        total(rows, "purge_worker_split_ns") if "purge_worker_split_ns" in rows else 0)
    return min(1.0, watched / spent) if spent else None


def column(rows, name: str) -> np.ndarray:
    """A column's values over some rows (a Span's or a DataFrame's), 0 where it is absent."""
    return np.asarray(rows[name], dtype="float64") if name in rows else np.zeros(len(rows))


def rows_watched_enough(rows) -> bool:
    """Whether the sleep tracepoint watched enough of purge's time over some intervals to
    name its bound (interval_columns.watched_enough): true where it was not sampled."""
    watched = split_watched(rows)
    if watched is None:
        return True
    spent = column(rows, "purge_batch_ns") + column(rows, "purge_worker_ns")
    split = column(rows, "purge_batch_split_ns") + column(rows, "purge_worker_split_ns")
    return watched_enough(watched, (split > 0)[spent > 0])


def rows_bound(rows: pd.DataFrame) -> tuple[str, float] | None:
    """The bound of purge as a whole (coordinator and workers) over some intervals; None
    where the sleep tracepoint did not watch enough of its time (rows_watched_enough)."""
    if not rows_watched_enough(rows):
        return None
    return bound(purge_split(coordinator_split(rows), worker_split(rows)))


def as_ms(split: dict | None) -> dict:
    return {k: (round(split[k] / 1e6, 1) if split else None) for k in SPLIT}


def watched_pct(table: pd.DataFrame, who: str) -> float | None:
    """The share of the spans' wall time that the time split covers (the sleep tracepoint is
    sampled); None where the recording split every span."""
    watched, total = f"purge_{who}_split_ns", table[f"purge_{who}_ns"].sum()
    return round(float(100 * table[watched].sum() / total), 3) if watched in table and total else None
