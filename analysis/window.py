"""A window of a recording (`report --from T --to T`): the intervals that ended after T
from and by T to, as a recording of their own, so every view (the verdict's phases, the
tables, the charts) tells that window only, from its counters' deltas.

Times in the window's report are seconds from its start (the end of the last interval
before it), as a recording's are from its attach: each view then reads it as it reads a
whole recording. Its header says where the window lies in the recording. The tables the
recorder keeps for the whole recording only (contended pages, stacks, latches by name,
latch holders) stay whole, and the report says so."""
from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re

from innostall.errors import UserError
from innostall.format.safe_text import safe_text
from innostall.format.tables import format_4

from .recording import Recording

CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}(?:\.\d+)?))?$")
DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|min|h)?$")
UNIT_S = {None: 1, "s": 1, "m": 60, "min": 60, "h": 3600}
# the tables every recording has that are kept whole (a recording's own: whole_only(rec))
WHOLE_ONLY = tuple(name for name, table in format_4().recording.items() if table.whole)


def whole_only(rec: Recording) -> list[str]:
    """The tables kept for the whole recording only (their schema's scope): left whole in a
    window's report."""
    return [name for name, table in rec.schema.tables.recording.items() if table.whole]


def seconds_into(text: str, meta: dict, option: str) -> float:
    """A point in the recording as seconds from its start: '3600', '90m', '2h', or a clock
    time, '14:05' or '14:05:30' (UTC, as the report prints the start), the first such time
    at or after the recording's start. Anything else is one line (UserError)."""
    text = text.strip()
    if match := DURATION.match(text):
        return float(match[1]) * UNIT_S[match[2]]
    if match := CLOCK.match(text):
        hours, minutes, secs = int(match[1]), int(match[2]), float(match[3] or 0)
        if hours > 23 or minutes > 59 or secs >= 60:
            raise UserError(f"{option} {text}: not a time of day")
        start_ns = meta.get("start_real_ns")
        if not isinstance(start_ns, int) or start_ns <= 0:
            raise UserError(f"{option} {text}: the recording does not say when it started "
                            "(meta.json has no start_real_ns); give seconds from its start")
        try:
            start = dt.datetime.fromtimestamp(start_ns / 1e9, dt.timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise UserError(f"{option} {text}: the recording's start time (start_real_ns) is not a date; "
                            "give seconds from its start")
        at = start.replace(hour=hours, minute=minutes, second=int(secs), microsecond=int(secs % 1 * 1e6))
        if at < start.replace(microsecond=0):  # past midnight: the next day's
            at += dt.timedelta(days=1)
        return max(0.0, (at - start).total_seconds())
    raise UserError(f"{option} {text!r}: give seconds from the recording's start (3600, 90m, 2h) "
                    "or a UTC time of day (14:05, 14:05:30)")


def bounds_of(rec: Recording, start: str | None, end: str | None,
              options: tuple[str, str] = ("--from", "--to")) -> tuple[float, float]:
    """--from and --to as seconds from the start, checked against the recording; a message
    names the options the times came from (diff's --a-from, say)."""
    whole, (from_option, to_option) = rec.duration_s, options
    from_s = seconds_into(start, rec.meta, from_option) if start is not None else 0.0
    to_s = seconds_into(end, rec.meta, to_option) if end is not None else whole
    if not (math.isfinite(from_s) and math.isfinite(to_s)):
        raise UserError(f"{from_option}/{to_option}: not a finite time")
    if from_s >= whole:
        raise UserError(f"{from_option} {from_s:,.1f} s: the recording lasted {whole:,.1f} s")
    if to_s <= from_s:
        raise UserError(f"{to_option} ({to_s:,.1f} s) must be after {from_option} ({from_s:,.1f} s)")
    return from_s, min(to_s, whole)


def window(rec: Recording, start: str | None, end: str | None,
           options: tuple[str, str] = ("--from", "--to")) -> Recording:
    """The recording cut to the intervals ending after --from and by --to; UserError when
    no interval does (a window shorter than one interval)."""
    from_s, to_s = bounds_of(rec, start, end, options)
    ends = rec.counters.groupby("interval", observed=True)["t_s"].first()
    inside = ends[(ends > from_s) & (ends <= to_s + 1e-9)]
    if inside.empty:
        raise UserError(f"no interval ended between {from_s:,.1f} and {to_s:,.1f} s "
                        f"(intervals of {rec.meta.get('interval_s', 1):g} s)")
    before = ends[ends <= from_s]
    shift = float(before.iloc[-1]) if len(before) else 0.0  # the window's first interval starts here
    first, last = int(inside.index.min()), int(inside.index.max())

    def cut(name: str, frame):
        """A table's rows in the window (by interval, or by time for events), its times
        from the window's start (a read view's opening negative: before the window)."""
        table = rec.schema.tables.recording[name]
        if table.scope == "interval":
            kept = frame[frame["interval"].between(first, last)].copy()
            kept["interval"] = (kept["interval"] - first).astype(frame["interval"].dtype)
        else:
            kept = frame[(frame["t_s"] > shift) & (frame["t_s"] <= float(inside.iloc[-1]))].copy()
        for column in table.times:
            kept[column] = kept[column] - shift
        return kept.reset_index(drop=True)

    cut_tables = {name: cut(name, frame) for name, frame in rec.tables.items()
                  if name in rec.schema.tables.recording and not rec.schema.tables.recording[name].whole}
    meta = dict(rec.meta)
    start_ns = meta.get("start_real_ns")
    if isinstance(start_ns, int):
        meta["start_real_ns"] = start_ns + round(shift * 1e9)
        meta["stop_real_ns"] = start_ns + round(float(inside.iloc[-1]) * 1e9)
    # the gauges' levels at the window's start, for the views that tell their growth
    last_before = rec.counters[(rec.counters["interval"] == first - 1) & rec.counters["name"].isin(rec.schema.gauges)]
    told = {"from_s": round(shift, 3), "to_s": round(float(inside.iloc[-1]), 3),
            "recording_s": round(rec.duration_s, 3), "whole_only": whole_only(rec)}
    return dataclasses.replace(rec, meta=meta, counters=cut("counters", rec.counters), hists=cut("hists", rec.hists),
                               window=told, **cut_tables,
                               gauges_before={str(n): int(v) for n, v in zip(last_before["name"], last_before["value"])})


def window_words(told: dict) -> str:
    """'3,600.0–7,200.0 s of a 28,800.0 s recording; times here are from the window's start;
    contended pages, stacks, latches by name and latch holders are the whole recording's'."""
    return (f"{told['from_s']:,.1f}–{told['to_s']:,.1f} s of a {told['recording_s']:,.1f} s recording; "
            "times here are from the window's start; contended pages, stacks, latches by name "
            "and latch holders are the whole recording's")


def saved_window(rec: Recording) -> Recording:
    """A recording `innostall watch` saved, cut to its window: from the snapshot its kept
    minutes begin after (meta.json's watch.from_s, rounded; collector/recorder/watch.py),
    the first in its journal, which only holds the figures from the watch's attach up to
    there. Any other recording as it is."""
    saved = rec.meta.get("watch")
    from_s = saved.get("from_s") if isinstance(saved, dict) else None
    if not isinstance(from_s, (int, float)) or isinstance(from_s, bool) or not from_s > 0:
        return rec  # not saved by a watch, or saved at its first snapshot: no base to leave out
    ends = rec.counters.groupby("interval", observed=True)["t_s"].first()
    if len(ends) < 2:
        return rec
    return window(rec, repr(float(ends.iloc[0])), None)  # the base: the journal's first snapshot, exactly


def trigger_words(meta: dict) -> str | None:
    """'saved by innostall watch: history 52,311 above 50,000, at 4,210 s of the watch', or
    None for a recording no watch saved."""
    saved = meta.get("watch")
    if not isinstance(saved, dict) or not isinstance(saved.get("words"), str):
        return None
    at = saved.get("at_s")
    when = f", at {at:,.0f} s of the watch" if isinstance(at, (int, float)) and not isinstance(at, bool) else ""
    return f"saved by innostall watch: {safe_text(saved['words'], 200)}{when}"

