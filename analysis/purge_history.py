"""Purge over time: the per-interval table of the history list, the read view that pins it
and purge's work, and what the report says of it besides its phases (story_of). The
recording's phases are phases.py's, their figures phase_figures.py's, their words
wording/phases.py's; summary.purge_story puts them together.

Purgeable and pinned history. Purge may remove an undo log only when no read view can still
need it. Each batch starts from the purge view, a copy of the oldest read view open at that
moment: an undo log committed after that view opened is invisible to it, so purge keeps it
until the view closes. Hence the oldest open view pins, at the least, the history added
since it opened:

    pinned ≈ history now − history when the view opened, clipped to [0, history]

and purgeable = history − pinned. The estimate errs low on pinned only by what purge
removed of the older history meanwhile, and it is tightened by two facts: while the same
view stays the oldest, nothing new becomes purgeable (so purgeable never grows), and once a
whole interval's batches found nothing to purge, nothing is purgeable any more (purgeable
is 0, pinned is all of it). A view opened before the recording has no history at its
opening: its pin is known only from such empty batches. A view the probe caught only at a
later read (seen_open) carries the history of that moment, so what was added before it is
counted purgeable until the batches say otherwise.

The history length is the server's own figure (a gauge), known from the first interval in
which innostall read it (history_reads > 0), and unknown before, or in recordings that
predate it: unknown is shown as nothing, never as 0. Each interval has two figures of it:
`history`, its level in the interval (the highest the server computed then: see
known_history), and `history_end`, the history at the interval's end (the last it
computed). They differ where purge drained within the interval: a catch-up that clears a
backlog in one second has its level at the backlog and its end near 0. Levels say how
much history there was; a phase's move from A to B is told from end to end. Where the
probes did not see it (detached by the cost governor, or before their first read), the
length the recorder read from the server's memory at the snapshot stands for both, on
builds with DWARF (history_in_memory).

Every function below is a small pure one on pandas objects or plain values."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .phases import TREND_WINDOW
from .pinning import is_known, oldest_views, pinning_views, statements_kept, view_keys
from .purge_time import as_ms, coordinator_split, watched_pct, watched_split_columns, worker_split
from .recording import Recording
from .sampling import group_of
from .timeline import interval_lengths, per_interval
from .wording.phases import verdict_notes
from .report_tables import counter_names, server_levels

WATCHED_WHOLE = 0.99  # attached this share of an interval: a read it lacks was not made


# --- the per-interval table ------------------------------------------------------------

def purge_table(rec: Recording) -> pd.DataFrame:
    """One row per interval (index t_s, its end): the purge counters' deltas, the history
    (its level, and history_end, the history at the interval's end; NaN where unknown),
    its trend, the batch time split, the oldest open read view (view_* columns, NaN/None
    when none was recorded), and pinned/purgeable history. Made once per recording (the
    purge section, the timeline chart and the checker each ask for it), a copy each time."""
    if not hasattr(rec, "derived"):
        return purge_table_of(rec)
    inputs = (rec.counters, rec.hists, rec.meta, rec.gauges_before, rec.window, *rec.tables.values())
    return rec.derived(("purge_table",), inputs, lambda: purge_table_of(rec)).copy()


def purge_table_of(rec: Recording) -> pd.DataFrame:
    table = per_interval(rec, [
        "purge_batches", "purge_empty_batches", "purge_pages", "purge_records", "dml_delays",
        "dml_delay_us", "deep_walks", "block_wait_ns", "other_latch_wait_ns", "history_length",
        "history_length_peak", "history_reads", "purge_batch_ns", "purge_batch_cpu_ns", "purge_batch_io_ns",
        "purge_batch_latch_ns", "purge_worker_tasks", "purge_worker_ns", "purge_worker_cpu_ns",
        "purge_worker_io_ns", "purge_worker_latch_ns", "log_room_waits", "log_room_wait_ns",
        "log_room_waits_open", "log_room_wait_open_ns", "block_write_waits", "block_write_wait_ns",
        "block_write_waits_open", "block_write_wait_open_ns", "free_page_waits", "free_page_wait_ns",
        "free_page_waits_open", "free_page_wait_open_ns",
        *watched_split_columns(rec)])
    table["length_s"] = interval_lengths(table)
    table = table[table["length_s"].notna()].copy()  # a final snapshot at the last one's instant
    if (batches := batches_watched(rec, table)) is not None:
        # attached ns, so a span's share is its total over its length (phase_figures.py)
        table["batch_watched_ns"] = batches * table["length_s"] * 1e9
    watched = history_watched(rec, table)
    probed = known_history(table["history_length"], table["history_reads"],
                           table["history_length_peak"], watched)
    read = history_in_memory(rec, table.index)
    # At a snapshot the server's own reading is the history; the probe's last value inside
    # the interval is not (read before purge's last batches of it: a catch-up's 66,976
    # where the server read 0). The probe speaks only for what happened between snapshots:
    # the level is the interval's peak, its reading at the snapshot included.
    table["history_end"] = read.combine_first(
        known_history(table["history_length"], table["history_reads"], None, watched))
    table["history"] = np.fmax(probed, read)
    table["history_peaked"] = (table["history_reads"] > 0) & table["history"].notna()
    table["trend"] = trend(table["history"])
    table["growth_per_s"] = growth_per_s(table["history"])
    table["all_empty"] = (table["purge_batches"] > 0) & (
        table["purge_empty_batches"] >= table["purge_batches"])
    views = oldest_views(rec, table.index)
    table = table.join(views)
    # views seen, or every open view read from the server's memory: none seen then means none open
    recorded = (len(rec.read_views) > 0 or rec.counter_total("read_views_opened") > 0
                or bool(rec.meta.get("read_views_from_memory", {}).get("read")))
    keys, at_open = view_keys(table), table["view_history_at_open"].tolist()
    table["pinned"], table["purgeable"] = split_history(
        table["history"].tolist(), table["all_empty"].tolist(), keys, at_open, recorded)
    # what the view held of the history at each snapshot: "at 22.0 s the view held P of H"
    table["pinned_end"], _ = split_history(
        table["history_end"].tolist(), table["all_empty"].tolist(), keys, at_open, recorded)
    return table


def known_history(length: pd.Series, reads: pd.Series, peak: pd.Series | None = None,
                  watched: pd.Series | None = None) -> pd.Series:
    """The history length where it is known: from the first interval that read it on. A
    gauge that was never read holds 0, which must not pass for an empty history.
    In an interval that read it, its peak stands for it: MariaDB's coordinator wakes about
    once a second and drains within milliseconds, so the last length it computed is the low
    point of a saw-tooth whose top is the backlog the server really carries (recordings
    before the peak was kept have none: their last value stands).
    An interval that read none keeps the last length only if its probes watched it whole
    (`watched`, the share of it they were attached): then the server computed none. With
    them detached by the cost governor, the history may have moved unseen: unknown."""
    level = length.astype("float64")
    if peak is not None:
        level = level.where(reads == 0, np.maximum(level, peak.astype("float64")))
    if watched is not None:
        level = level.where((reads > 0) | (watched >= WATCHED_WHOLE))
    return level.where(reads.cumsum() > 0)


def history_in_memory(rec: Recording, index: pd.Index) -> pd.Series:
    """The history length read from the server's memory at each snapshot (server.history,
    collector/server/state.py), NaN where it was not: known in every interval at no cost to
    the server, where the probes' figure is known only while they were attached."""
    return server_levels(rec, "history").astype("float64").reindex(index)


def attached_share(rec: Recording, table: pd.DataFrame, group: str) -> pd.Series | None:
    """The share of each interval a sampling group was attached; None for group "" (never
    detached) or a recording made before the governor counted it."""
    name = f"governor.attached_ns.{group}"
    if not group or name not in counter_names(rec):
        return None
    attached = per_interval(rec, [name])[name].reindex(table.index, fill_value=0)
    return (attached / (table["length_s"] * 1e9)).clip(upper=1.0)


def batches_watched(rec: Recording, table: pd.DataFrame) -> pd.Series | None:
    """The share of each interval the purge batches' probe was attached, where the governor
    may detach it (its group of its own: MySQL's coordinator, woken at each commit while a
    view pins the history, runs hundreds of empty batches a second); None where it never
    is. A batch it did not watch is not counted: an interval watched in part has a floor."""
    return attached_share(rec, table, group_of(rec.meta, "purge_batch"))


def history_watched(rec: Recording, table: pd.DataFrame) -> pd.Series | None:
    """The share of each interval the history's probes were attached, where the cost
    governor sampled them; None where they are never detached. Where the history has no
    program of its own (MySQL, MariaDB 10.2-10.5: the batch programs read the member at
    each batch's entry and return), it is read while the batches are watched."""
    own = any("history_length" in a["probes"] for a in rec.meta.get("governor", {}).get("attachments", []))
    return attached_share(rec, table, group_of(rec.meta, "history_length" if own else "purge_batch"))


def trend(history: pd.Series, window: int = TREND_WINDOW) -> pd.Series:
    """How much the history moved over the last `window` intervals (or since it became
    known): now − then; NaN where unknown."""
    known = history.dropna()
    earlier = known.shift(window).fillna(known.iloc[0]) if len(known) else known
    return (known - earlier).reindex(history.index)


def growth_per_s(history: pd.Series, window: int = TREND_WINDOW) -> pd.Series:
    """The history's slope (transactions per second) over the last `window` intervals, or
    since it became known; NaN where unknown or at its first known value."""
    known = history.dropna()
    if known.empty:
        return pd.Series(np.nan, index=history.index)
    times = known.index.to_series()
    then_t = times.shift(window).fillna(times.iloc[0])
    then_h = known.shift(window).fillna(known.iloc[0])
    span = (times - then_t).where(lambda s: s > 0)
    return ((known - then_h) / span).reindex(history.index)



def split_history(history: list, all_empty: list, keys: list, at_open: list,
                  views_recorded: bool) -> tuple[list, list]:
    """(pinned, purgeable) per interval, NaN where unknown (see the module's docstring).
    keys: the oldest view's identity per interval (None: no view seen); at_open: the
    history when it opened (None: unknown); views_recorded: whether the recording saw read
    views at all (if not, no view seen says nothing)."""
    pinned, purgeable = [], []
    cap, previous = math.inf, None  # what is purgeable only shrinks while a view stays oldest
    for h, empty, key, h0 in zip(history, all_empty, keys, at_open):
        if key != previous:
            cap, previous = math.inf, key
        if not is_known(h):
            pinned.append(math.nan)
            purgeable.append(math.nan)
            continue
        if empty and h > 0:
            free = 0.0  # every batch found nothing: nothing was purgeable
        elif key is None:
            free = float(h) if views_recorded else math.nan
        else:
            free = float(min(h, h0)) if is_known(h0) else math.nan
        if key is not None:
            free = min(free, cap) if is_known(free) else (cap if cap < math.inf else math.nan)
            cap = free if is_known(free) else cap
        free = min(free, float(h)) if is_known(free) else free
        pinned.append(h - free)
        purgeable.append(free)
    return pinned, purgeable


# --- what the report says of the whole recording ---------------------------------------

def number(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), 3)


def history_summary(table: pd.DataFrame) -> dict:
    """first, last, max of the history (null when never read), from and to when it was
    known (known_to_end: to the last interval), the pinned and purgeable parts at its last
    known interval, its growth per second over the time known and over its last readings
    (from recent_from_s), and the time to drain it at that recent net decrease (null unless
    falling)."""
    known = table.dropna(subset=["history"])
    if known.empty:
        return dict.fromkeys(["first", "last", "max", "known_from_s", "known_to_s", "known_to_end",
                              "pinned", "purgeable", "growth_per_s", "recent_growth_per_s",
                              "recent_from_s", "drain_s"])
    last = known.iloc[-1]
    span = known.index[-1] - known.index[0]
    recent = last["growth_per_s"]  # over the last TREND_WINDOW readings, from recent_from_s
    recent_from = known.index[max(0, len(known) - 1 - TREND_WINDOW)]
    drain = (last["history"] / -recent if not math.isnan(recent) and recent < 0 else
             (0.0 if last["history"] == 0 else None))
    return {"first": int(known["history"].iloc[0]), "last": int(last["history"]),
            "max": int(known["history"].max()), "known_from_s": number(known.index[0]),
            "known_to_s": number(known.index[-1]), "known_to_end": bool(known.index[-1] == table.index[-1]),
            "pinned": None if math.isnan(last["pinned"]) else int(last["pinned"]),
            "purgeable": None if math.isnan(last["purgeable"]) else int(last["purgeable"]),
            "growth_per_s": number((last["history"] - known["history"].iloc[0]) / span) if span else None,
            "recent_growth_per_s": number(recent), "recent_from_s": number(recent_from), "drain_s": number(drain) if drain is not None else None}


def story_of(rec: Recording, table: pd.DataFrame, told: list[dict]) -> dict:
    """What summary() adds under purge, from the recording's purge_table and its phases
    (phase_figures.phase_list): recorded, history, pinned_by, statements (how their
    statements were kept: pinning.statements_kept), phases, notes (how to learn more than
    the verdict could say: wording.phases.verdict_notes), and the batches' and workers'
    time split in ms (null parts when not measured)."""
    return {"recorded": rec.probe_attached("purge_batch"), "history": history_summary(table),
            "pinned_by": pinning_views(table),
            "statements": statements_kept(rec.meta),
            "phases": told, "notes": verdict_notes(told),
            "batch_time_ms": as_ms(coordinator_split(table)),
            "worker_time_ms": as_ms(worker_split(table)),
            "split_watched_pct": {who: watched_pct(table, who) for who in ("batch", "worker")},
            "worker_tasks": int(table["purge_worker_tasks"].sum())}
