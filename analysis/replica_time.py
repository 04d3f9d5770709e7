"""Where a replica's applier time goes: each event's wall time (probe applier_event, one
call of MariaDB's apply_event_and_update_pos_apply or MySQL's
Slave_worker::slave_worker_exec_event) split into time on CPU (or runnable), latch waits,
row-lock waits, page reads, waits for the redo log to be written up to its commit
(log_write_up_to: with innodb_flush_log_at_trx_commit=1, an fsync), waits for the commit
order, and the rest, asleep for anything else (the binary log's sync at commit, a group
commit's wait for its leader ...); and the part
that names a phase of the replica's verdict: the largest waiting part once it takes
CAUSE_SHARE of the time, else the largest part. An applier's own work (on CPU) and its
commits' syncs (the rest) are always there, often its largest parts; what slows it beyond
them is someone in its way, and a tenth of its time lost to that is a cause worth naming
(seen: a backup-like scan on the replica raised the latch part from 2% to 19% and halved
the events applied, while on CPU and asleep stayed the largest).

The split covers the events the scheduler tracepoint watched whole (applier_split_ns; it
is sampled, so not always all of them): their parts are measured, the rest is what is left
of that time, never below 0, exactly as purge's (purge_time.time_split). The measured parts
of one event never overlap: a latch or row-lock wait is asleep, not on CPU, and a page read
inside a row-lock wait is not counted twice (probes/applier.bpf.c)."""
from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from innostall.format.journal import SERVER_STATE

# the counters the applier's probes keep, per interval (probes/innostall.h)
EVENTS, BUSY, WATCHED = "applier_events", "applier_ns", "applier_split_ns"
PARTS = ("on_cpu", "latch", "row_lock", "io", "redo", "commit_order", "other")
MEASURED = {"on_cpu": "applier_cpu_ns", "latch": "applier_latch_ns", "row_lock": "applier_row_lock_ns",
            "io": "applier_io_ns", "redo": "applier_redo_ns", "commit_order": "applier_commit_wait_ns"}
COUNTERS = (EVENTS, BUSY, WATCHED, *MEASURED.values())
# The replica's own lag (Seconds_Behind_Master/Source), read over SQL each interval
# (collector/server/replica_lag.py); absent where innostall could not log in.
LAG = f"{SERVER_STATE}replica_lag_s"
SHOWN_SHARE = 0.01  # a part of the watched time a phase's words name; JSON has every part
FINDING_SHARE = 0.25  # a waiting part from which a finding says why the applier waited
# The events being applied at each snapshot, their time so far (the loader's gauges): an
# interval's growth of them is the time its unfinished events took in it. Added to the
# counters (which take an event's whole time when it ends), a stall inside one long event
# shows in the intervals it lasted, and one still going at the end is counted so far.
OPEN = {BUSY: "applier_open_ns", WATCHED: "applier_open_split_ns",
        **{name: name.replace("applier_", "applier_open_", 1) for name in MEASURED.values()}}
WAITS = ("latch", "row_lock", "io", "commit_order")  # the parts an applier waits in for someone
# (the redo log's write at commit is its own work's cost, as its time on CPU: it names a
# phase only as the largest part)
CAUSE_SHARE = 0.1  # a waiting part this share of the time names the phase, larger parts or not
BOUND = {"on_cpu": "cpu-bound", "latch": "latch-bound", "row_lock": "row-lock-bound", "io": "io-bound",
         "redo": "redo-bound", "commit_order": "commit-order-bound", "other": "off-cpu"}
DOING = {"on_cpu": "on CPU", "latch": "waiting on latches", "row_lock": "waiting on row locks",
         "io": "reading pages", "redo": "waiting for the redo log at commit",
         "commit_order": "waiting for the commit order", "other": "asleep for anything else"}
# A phase with no applier time: idle when its probes were attached throughout, unwatched
# when the cost governor detached them (nothing is known of that time); unsplit when the
# applier was busy but the scheduler tracepoint watched none of its events whole.
IDLE, UNWATCHED, UNSPLIT = "idle", "unwatched", "unsplit"
VERDICTS = (*BOUND.values(), IDLE, UNWATCHED, UNSPLIT)
SATURATED = 0.9  # busy this share of the appliers' time: they cannot apply faster
# An idle (or unwatched) phase that took in busy intervals stays so while its appliers were
# busy less than this share of their time; busier, it is named by its split: a phase
# called idle must not have kept them busy half the time.
QUIET_SHARE = 0.1
WATCHED_WHOLE = 0.99  # attached this share of an interval: an event it lacks did not happen


def time_split(totals: Mapping[str, float]) -> dict[str, float] | None:
    """The watched time's parts in ns, {on_cpu, latch, row_lock, io, commit_order, other},
    from counter totals by name (the watched time, applier_split_ns, and the measured
    parts); None when no event was watched whole."""
    watched = float(totals.get(WATCHED, 0))
    if not watched:
        return None
    parts = {part: float(totals.get(name, 0)) for part, name in MEASURED.items()}
    return {**parts, "other": max(0.0, watched - sum(parts.values()))}


def largest(split: dict[str, float] | None) -> str | None:
    """The largest part (the first of PARTS on a tie), None when nothing was split."""
    if not split or not sum(split.values()):
        return None
    return max(PARTS, key=lambda part: split[part])


def named_part(split: dict[str, float] | None) -> str | None:
    """The part that names the time: the largest waiting part if it took CAUSE_SHARE of
    it, else the largest part; None when nothing was split."""
    waiting = waiting_part(split)
    if waiting and waiting[1] >= CAUSE_SHARE:
        return waiting[0]
    return largest(split)


def verdict_of(busy_ns: float, split: dict | None, attached: float) -> str:
    """The verdict of some intervals from their totals: idle or unwatched without applier
    time, unsplit when none of it was split, else the bound of its named part."""
    if not busy_ns:
        return IDLE if attached >= WATCHED_WHOLE else UNWATCHED
    part = named_part(split)
    return BOUND[part] if part else UNSPLIT


def waiting_part(split: dict | None) -> tuple[str, float] | None:
    """The waiting part (latch, row lock, page reads, commit order) the applier spent most
    of its watched time in, and its share of that time; None when nothing was split."""
    if not split or not sum(split.values()):
        return None
    part = max(WAITS, key=lambda p: split[p])
    return part, split[part] / sum(split.values())


def seen_throughout(attached: pd.Series) -> pd.Series:
    """1.0 for an interval whose applier probes were attached through it and through every
    one before it, else 0.0: once they were detached, an event begun meanwhile may still be
    going (a stall on a row lock lasts as long as its holder), unseen, so an interval
    without applier time is unwatched, never idle."""
    return (attached >= WATCHED_WHOLE).cummin().astype("float64")
