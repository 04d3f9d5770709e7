"""A phase's figures, taken over its whole span, its end included, from the per-interval
table (purge.purge_table), and the phase as `report --json` gives it: {from_s, to_s,
verdict, detail, figures, events}. Its words (detail) come from wording/phases.py, from
these figures alone.

Rates say what they are over: a move of the history is 'A → B over S s (±R/s)', from the
snapshot before the phase (or its first known one) to its last (phases.history_move);
nothing here is taken from the last few intervals only."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .interval_columns import columns
from .phases import history_move, phase_runs, rounded
from .pinning import phase_views
from .purge_time import rows_bound, split_watched
from .wording.phases import (NOT_RECORDED, catching_up_words, event_words, events_words, falling_behind_words,
                             flush_bound_words, idle_words, keeping_up_words, pinned_words, throttled_words)


def start_s(table: pd.DataFrame, a: int) -> float:
    """When row a's interval began: the snapshot before it (0 for the first)."""
    return rounded(table.index[a - 1]) if a else 0.0


def levels(table: pd.DataFrame, a: int, b: int) -> dict | None:
    """The history's level over rows a..b: median, min and max of those it was read in
    (known of intervals); peaked: how many of them the probe read inside the interval,
    whose level is then its peak there, not a snapshot's reading; None when unknown
    throughout."""
    c = columns(table)
    rows = c.known_in("history", a, b)
    known_levels = c["history"][rows]
    if not len(known_levels):
        return None
    peaked = int(c["history_peaked"][rows].sum()) if "history_peaked" in c else 0
    return {"median": rounded(np.median(known_levels)), "min": int(known_levels.min()),
            "max": int(known_levels.max()), "known": len(known_levels), "intervals": b - a + 1,
            "peaked": peaked}


def held_row(table: pd.DataFrame, a: int, b: int) -> int | None:
    """The last row from a to b at whose snapshot the oldest view pinned history, or None."""
    holding = np.flatnonzero(columns(table)["pinned_end"][a:b + 1] > 0)
    return a + int(holding[-1]) if len(holding) else None


def held(table: pd.DataFrame, a: int, b: int) -> dict | None:
    """That last snapshot at which the oldest view pinned history: when, how much of the
    history the server read then, and whether that view is gone by the next snapshot of
    the span."""
    i = held_row(table, a, b)
    if i is None:
        return None
    c = columns(table)
    tids, opened = c["view_tid"], c["view_opened_s"]
    closed = opened[i] is not None and i < b and (tids[i + 1], opened[i + 1]) != (tids[i], opened[i])
    return {"at_s": rounded(c.t[i]), "pinned": int(c["pinned_end"][i]), "history": int(c["history_end"][i]),
            "by_view": opened[i] is not None,
            "closed_by_s": rounded(c.t[i + 1]) if closed else None}


def span_figures(table: pd.DataFrame, a: int, b: int) -> dict:
    """What every phase and event is told by: purge's work and the history over rows a..b."""
    rows = columns(table).span(a, b)
    length = float(rows.total("length_s"))
    batches, empty, pages = (int(rows.total(c)) for c in ("purge_batches", "purge_empty_batches", "purge_pages"))
    found, watched = rows_bound(rows), split_watched(rows)
    return {"seconds": rounded(length), "intervals": len(rows), "batches": batches,
            "empty_batches": empty, "pages": pages,
            "all_empty_intervals": int(rows.total("all_empty")),
            "pages_per_s": rounded(pages / length) if length else 0.0,
            "batches_per_s": rounded(batches / length) if length else 0.0,
            "pages_per_batch": rounded(pages / (batches - empty)) if batches > empty else None,
            "history": history_move(table, a, b), "levels": levels(table, a, b),
            "held": held(table, a, b),
            "dml_delays": int(rows.total("dml_delays")), "dml_delay_us": rounded(rows.total("dml_delay_us")),
            "log_room": wait_figures(rows, table, b, "log_room"),
            "page_writes": wait_figures(rows, table, b, "block_write"),
            "free_pages": wait_figures(rows, table, b, "free_page"),
            # six places: the words' whole percent rounds the share once, not 98.53 -> 98.5 -> 98
            "bound": {"part": found[0], "share": round(float(found[1]), 6)} if found else None,
            "split_watched": round(float(watched), 6) if watched is not None else None,
            # only where the governor may detach the batches' probe: older reports unchanged
            **({"batches_watched": round(min(1.0, rows.total("batch_watched_ns") / (length * 1e9)), 6)
                if length else 0.0} if "batch_watched_ns" in rows else {})}


def wait_figures(rows, table: pd.DataFrame, b: int, prefix: str) -> dict:
    """One kind of wait for flushing over the span: its counters PREFIX_waits and
    PREFIX_wait_ns, and the gauges of those still waiting at its last snapshot (its last
    row's PREFIX_waits_open and PREFIX_wait_open_ns)."""
    return {"waits": int(rows.total(f"{prefix}_waits")), "wait_s": rounded(rows.total(f"{prefix}_wait_ns") / 1e9),
            "open_at_end": int(table[f"{prefix}_waits_open"].iloc[b]),
            "open_s": rounded(table[f"{prefix}_wait_open_ns"].iloc[b] / 1e9)}


def event(verdict: str, table: pd.DataFrame, a: int, b: int) -> dict:
    f = span_figures(table, a, b)
    return {"from_s": start_s(table, a), "to_s": rounded(table.index[b]), "verdict": verdict,
            "words": event_words(verdict, f), "figures": f}


def phase(verdict: str, table: pd.DataFrame, a: int, b: int, taken_in: list[tuple]) -> dict:
    """One phase over rows a..b: {from_s, to_s, verdict, detail, figures, events}; taken_in:
    (verdict, first row, last row) of the shorter runs it took in."""
    f = span_figures(table, a, b)
    to_s = rounded(table.index[b])
    views = phase_views(columns(table).span(a, b)) if verdict in ("pinned", "throttled") else []  # who pins
    f["views"] = views[-2:]
    f["views_before"] = max(0, len(views) - 2)
    pinned_move = None
    if verdict == "pinned":  # the growth while it held: to its last pinning interval
        last = held_row(table, a, b)
        pinned_move = f["pinned_history"] = history_move(table, a, b if last is None else last)
    words = {"pinned": lambda: pinned_words(f, views, pinned_move, to_s),
             "throttled": lambda: throttled_words(f, views, to_s),
             "catching_up": lambda: catching_up_words(f), "falling_behind": lambda: falling_behind_words(f),
             "idle": lambda: idle_words(f), "keeping_up": lambda: keeping_up_words(f),
             "not_recorded": lambda: NOT_RECORDED}[verdict]()
    events = [event(v, table, first, last) for v, first, last in taken_in]
    return {"from_s": start_s(table, a), "to_s": to_s, "verdict": verdict,
            "detail": words + flush_bound_words(f) + events_words(events), "figures": f, "events": events}


def phase_list(table: pd.DataFrame, purge_recorded: bool) -> list[dict]:
    """The recording's phases as `report --json` gives them under purge.phases, in time
    order; purge_recorded: whether purge's probe was attached (else nothing is said of its
    batches)."""
    return [phase(v, table, a, b, taken_in) for v, a, b, taken_in in phase_runs(table, purge_recorded)]
