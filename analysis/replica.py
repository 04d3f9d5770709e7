"""Why a replica lags: its applier threads at work, from the applier_event probe and the
waits charged to its events (probes/applier.bpf.c; replica_time.py splits their time). The
summary says how many events the appliers applied, how busy they were, where their time
went, and cuts the recording into phases, each with a verdict: the part of the applier's
time that names it (replica_time.named_part: the largest waiting part from a tenth of the
time, else the largest; cpu-bound, latch-bound, row-lock-bound, io-bound, commit-order-bound,
off-cpu), or idle (no applier time), unwatched (no applier time while the cost governor had
its probes detached: nothing is known; or its probes not attached enough of it,
interval_columns.watched_enough: what was counted is said, no cause) and unsplit (busy,
but no event watched whole).

Each interval gets a verdict from its own counters; a run shorter than MIN_PHASE intervals
then joins its longer neighbour (phases.debounce), and a busy phase is named again by the
split of all its intervals, so its verdict is the part its words give first (an idle
one too, once the busy intervals it took in kept its appliers busy QUIET_SHARE of their
time). Runs named the same are one phase: a part that names each of two spans names both
(a share is their weighted mean: the largest in each is the largest in both, and a tenth
of each is a tenth of both).

Busy share. A phase's applier time is told against the time its threads had: its seconds
times the applier threads seen (the appliers table, the whole recording's; at least one).
From SATURATED of it the appliers were busy all along and could not apply faster: a single
applier busy all the time is the replica's bottleneck, whatever it waits on."""
from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from innostall.format.writer_tables import APPLIER_ROLE

from .applier_counts import applier_deltas, applier_totals
from .cost import coverage
from .interval_columns import WATCHED_ENOUGH, Columns, watched_enough
from .phases import MIN_PHASE, debounce, runs
from .recording import Recording
from .replica_time import (BOUND, BUSY, COUNTERS, EVENTS, IDLE, LAG, PARTS, QUIET_SHARE, SATURATED, UNSPLIT, UNWATCHED,
                           WATCHED, seen_throughout, time_split, verdict_of)
from .report_tables import counter_names
from .sampling import EXACT, group_of
from .timeline import interval_lengths, per_interval
from .work_latch_figures import heaviest, owned_between, work_latches

LAG_NOTE = "not read: innostall reads it over SQL, and could not log in (or was told --no-sql)"


# --- the per-interval table ------------------------------------------------------------

def attached_counter(rec: Recording) -> str | None:
    """The cost governor's account of the applier's sampling group, in recordings where it
    sampled it; None where its probes were attached throughout."""
    group = group_of(rec.meta, "applier_event")
    name = f"governor.attached_ns.{group}"
    return name if group and name in counter_names(rec) else None


def applier_table(rec: Recording) -> pd.DataFrame:
    """One row per interval (index t_s, its end; every interval of the recording, those
    without applier counters at 0): the applier's counters' deltas with its events in
    progress (applier_counts.applier_deltas), length_s and attached
    (the share of the interval its probes were attached, 1.0 where never sampled) and
    attached_s (those seconds)."""
    sampled = attached_counter(rec)
    table = applier_deltas(rec)
    if sampled:
        table[sampled] = per_interval(rec, [sampled]).reindex(table.index, fill_value=0)[sampled]
    table["length_s"] = interval_lengths(table)
    table = table[table["length_s"].notna()].copy()  # a final snapshot at the last one's instant
    table["attached"] = ((table[sampled] / (table["length_s"] * 1e9)).clip(upper=1.0) if sampled else 1.0)
    table["attached_s"] = table["attached"] * table["length_s"]  # summed over a phase: its share attached
    table["seen"] = seen_throughout(table["attached"])
    return table


def span_totals(c: Columns, a: int, b: int) -> dict[str, int]:
    """The counters' totals over rows a..b, from running sums: an 8-hour recording has
    thousands of runs to name and phases to tell."""
    return {name: int(c.total(name, a, b)) for name in COUNTERS}


def interval_verdicts(table: pd.DataFrame) -> list[str]:
    """Each interval's verdict from its own counters; a busy one whose probes were attached
    less than WATCHED_ENOUGH of it is unwatched, so that the watched stretches of a sampled
    recording stand apart from the rest."""
    verdicts = [verdict_of(row[BUSY], time_split(row), row["seen"])
                for row in table[[*COUNTERS, "seen"]].to_dict("records")]
    return [UNWATCHED if v not in (IDLE, UNWATCHED) and attached < WATCHED_ENOUGH else v
            for v, attached in zip(verdicts, table["attached"].tolist())]


# --- phases ----------------------------------------------------------------------------

def named_by_split(verdicts: list[str], c: Columns, threads: int) -> list[str]:
    """Each busy run named by the split of all its intervals (it took in shorter runs of
    other parts), so that its verdict is the part its words say first; so is an idle or
    unwatched run that took in enough busy intervals to keep its appliers busy QUIET_SHARE
    of their time watched."""
    out = list(verdicts)
    for v, a, b in runs(verdicts):
        totals = span_totals(c, a, b)
        # busy against the time its probes were attached: a sampled run's busy time is counted
        # only there (a stall attached 27% of it counts 9% of its seconds busy)
        quiet = not totals[BUSY] or totals[BUSY] / 1e9 < QUIET_SHARE * threads * c.total("attached_s", a, b)
        if v in (IDLE, UNWATCHED) and quiet:
            continue
        out[a:b + 1] = [verdict_of(totals[BUSY], time_split(totals), 1.0)] * (b - a + 1)
    return out


def spread(c: Columns, a: int, b: int):
    """Of the intervals in rows a..b the appliers were busy in, whether each had an event
    watched whole."""
    return (c[WATCHED][a:b + 1] > 0)[c[BUSY][a:b + 1] > 0]


def watched_runs(verdicts: list[str], c: Columns, sampled: bool) -> list[str]:
    """A busy run keeps a cause only where it was watched (interval_columns.watched_enough:
    its probes attached half of it, or a fifth in windows throughout it), else it is
    unwatched (the part of a few milliseconds watched is no cause); one with no event
    watched whole is unsplit."""
    out = list(verdicts)
    for v, a, b in runs(verdicts):
        if v not in (*BOUND.values(), UNSPLIT):
            continue
        length = float(c.total("length_s", a, b))
        attached = float(c.total("attached_s", a, b)) / length if sampled and length else 1.0
        if not watched_enough(attached, spread(c, a, b)):
            out[a:b + 1] = [UNWATCHED] * (b - a + 1)
    return out


def rounded(x: float, places: int = 6) -> float:
    return round(float(x), places)


def span_figures(c: Columns, a: int, b: int, threads: int, sampled: bool) -> dict:
    """What a phase is told by, over rows a..b: its seconds and intervals, the applier
    threads, events, busy time against the threads' time, the watched time and its split
    (seconds, and shares of the watched time), and the share of the span its probes were
    attached (None where never sampled). Times to the microsecond: a light replica's are
    milliseconds."""
    length = float(c.total("length_s", a, b))
    totals = span_totals(c, a, b)
    split = time_split(totals)
    watched = sum(split.values()) if split else 0.0
    busy_s, capacity = totals[BUSY] / 1e9, length * threads
    share = busy_s / capacity if capacity else 0.0
    attached = float(c.total("attached_s", a, b) / length) if sampled and length else None
    return {"seconds": rounded(length, 3), "intervals": b - a + 1, "threads": threads, "events": totals[EVENTS],
            "events_per_s": rounded(totals[EVENTS] / length) if length else 0.0,
            "busy_s": rounded(busy_s), "capacity_s": rounded(capacity), "busy_share": rounded(share),
            "saturated": share >= SATURATED, "watched_s": rounded(watched / 1e9),
            "split_s": {p: rounded(split[p] / 1e9) for p in PARTS} if split else None,
            "shares": {p: rounded(split[p] / watched) for p in PARTS} if split else None,
            "attached_share": rounded(attached) if attached is not None else None}


def began_s(table: pd.DataFrame, a: int) -> float:
    """When row a's interval began: the snapshot before it (0 for the first)."""
    return float(table.index[a - 1]) if a else 0.0


def start_s(table: pd.DataFrame, a: int) -> float:
    """began_s, as the phase gives it: to the millisecond."""
    return round(began_s(table, a), 3)


def phases(table: pd.DataFrame, threads: int, sampled: bool, phase_words: Callable[[str, dict], str],
           latch_between: Callable[[float, float], dict | None] = lambda a, b: None,
           whole: tuple[str, ...] = ()) -> list[dict]:
    """The recording cut into phases, in time order: {from_s, to_s, verdict, detail,
    figures}, detail being phase_words(verdict, figures) (sections.replica.phase_detail: the
    words are made from the figures alone); a latch-bound phase's figures name the latch
    its intervals waited on most (latch_between(from, to): {name, wait_s}), the others'
    None. whole: the waiting parts whose probes were attached throughout (WHOLE_PARTS),
    whose time an unwatched phase still tells (figures.counted_whole_s)."""
    if table.empty:
        return []
    c = Columns(table)
    smooth = named_by_split(debounce(interval_verdicts(table), [False] * len(table), MIN_PHASE), c, threads)
    smooth = watched_runs(smooth, c, sampled)
    found = []
    for v, a, b in runs(smooth):
        f = span_figures(c, a, b, threads, sampled)
        f["latch"] = latch_between(began_s(table, a), float(table.index[b])) if v == BOUND["latch"] else None
        f["counted_whole_s"] = {part: f["split_s"][part] for part in whole} if f["split_s"] else None
        found.append({"from_s": start_s(table, a), "to_s": round(float(table.index[b]), 3), "verdict": v,
                      "detail": phase_words(v, f), "figures": f})
    return found


# --- the summary -----------------------------------------------------------------------

def applier_threads(rec: Recording) -> pd.DataFrame:
    """The appliers table's replication appliers (all of its rows where none is named so),
    busiest first; empty in recordings made before it was kept."""
    appliers = getattr(rec, "appliers", None)
    if appliers is None or not len(appliers):
        return pd.DataFrame(columns=["tid", "thread", "role", "events", "apply_ns"])
    named = appliers[appliers["role"] == APPLIER_ROLE]
    return (named if len(named) else appliers).sort_values(["apply_ns", "tid"], ascending=[False, True])


def as_ms(split: dict | None) -> dict:
    return {p: (round(split[p] / 1e6, 1) if split else None) for p in PARTS}


LAG_GREW_MIN_S = 2  # seconds of lag: a rise smaller than this is a replica keeping up


def lag_rise(readings: list[tuple[float, float]]) -> dict | None:
    """The largest rise of the lag to its peak: {from, from_s, to, to_s}, from the last
    lowest reading before the first peak; None when it never grew LAG_GREW_MIN_S."""
    if not readings:
        return None
    peak_at = max(range(len(readings)), key=lambda i: (readings[i][1], -i))
    before = readings[:peak_at + 1]
    low_at = min(range(len(before)), key=lambda i: (before[i][1], -i))
    (from_s, low), (to_s, high) = readings[low_at], readings[peak_at]
    if high - low < LAG_GREW_MIN_S:
        return None
    return {"from": int(low), "from_s": round(from_s, 3), "to": int(high), "to_s": round(to_s, 3)}


def lag(rec: Recording) -> dict:
    """{lag_s_max, lag_s_max_at_s, lag_s_last, lag_note, lag_rise}: the replica's lag as it
    reported it at each snapshot, and its largest rise (lag_rise); the
    figures None, and the note why, where it was not read."""
    rows = rec.counters[rec.counters["name"] == LAG]
    if rows.empty:
        return {"lag_s_max": None, "lag_s_max_at_s": None, "lag_s_last": None, "lag_note": LAG_NOTE,
                "lag_rise": None}
    peak = rows.loc[rows["value"].idxmax()]
    readings = sorted(zip(rows["t_s"].astype(float), rows["value"].astype(float)))
    return {"lag_s_max": int(peak["value"]), "lag_s_max_at_s": round(float(peak["t_s"]), 3),
            "lag_s_last": int(rows.loc[rows["t_s"].idxmax(), "value"]), "lag_note": None,
            "lag_rise": lag_rise(readings)}


def replica_summary(rec: Recording, phase_words: Callable[[str, dict], str]) -> dict | None:
    """What summary() gives under replica; None when the applier_event probe was not
    attached, or no event was applied (the server is no replica, or its replication was
    stopped): then nothing is said of a replica. phase_words(verdict, figures): a phase's
    words (the summary passes sections.replica.phase_detail, a floor above these figures)."""
    totals = applier_totals(rec)
    events = totals[EVENTS]
    if not rec.probe_attached("applier_event") or not (events or totals[BUSY]):
        return None  # (one event applied all along, stalled, is a replica too)
    threads = applier_threads(rec)
    split, busy = time_split(totals), totals[BUSY]
    watched = sum(split.values()) if split else 0.0
    duration = rec.duration_s
    return {
        "applier": {
            "tids": sorted(int(t) for t in threads["tid"]),
            "threads": [{"tid": int(t.tid), "thread": str(t.thread), "events": int(t.events),
                         "apply_s": round(int(t.apply_ns) / 1e9, 3)} for t in threads.itertuples()],
            "events": events,
            "events_per_s": round(events / duration, 3) if duration else None,
            "busy_s": round(busy / 1e9, 3),
            "split_ms": as_ms(split),
            # the waits for the redo log split_ms.redo took (applier_redo_waits; 0 before it was kept)
            "redo_waits": rec.counter_total("applier_redo_waits"),
            # the share of the applier's time the split covers, when it is not all of it
            "split_watched_pct": round(100 * watched / busy, 3) if busy and watched < busy else None,
            "coverage": coverage(rec, "applier_event"),
            # every latch wait inside its events, split or not, and the latches it waited on most
            "latches": work_latches(rec, APPLIER_ROLE)},
        **lag(rec),
        "phases": phases(applier_table(rec), max(1, len(threads)), attached_counter(rec) is not None, phase_words,
                         lambda a, b: heaviest(owned_between(rec, APPLIER_ROLE, a, b)), whole_parts(rec))}


# A row-lock or commit-order wait is charged to the applier whole, at its end, whether or not
# the event around it was watched; where its probe was never sampled, its time is known
# even in a phase whose event probe was attached a few percent of it.
WHOLE_PROBES = {"row_lock": "row_lock_wait", "commit_order": "commit_order_wait"}


def whole_parts(rec: Recording) -> tuple[str, ...]:
    return tuple(part for part, probe in WHOLE_PROBES.items()
                 if rec.probe_attached(probe) and coverage(rec, probe) >= EXACT)
