"""A phase's words, made from its figures alone (phase_figures.py takes them over the
phase's whole span from the per-interval table), so every number a verdict line says is one
of its figures, which `report --json` gives beside it and verdict_check checks against the
table. Functions of dicts and numbers: nothing here reads a table.

Rates say what they are over: a move of the history is 'A → B over S s (±R/s)', from the
snapshot before the phase (or its first known one) to its last; nothing here is taken
from the last few intervals only."""
from __future__ import annotations

import math

from innostall.names import leaf_first, path

from ..interval_columns import WATCHED_ENOUGH
from .numbers import STATEMENT_SHOWN, at, between, count, growth, seconds, shorten

EVENTS_SHOWN = 3  # short events named in a phase's line; JSON lists them all
# Writers' waits for the log to make room, or threads' waits on the latches of pages being
# written out, as a share of the phase's seconds (summed over the threads that waited), from
# which its words call it flush-bound: a tenth of its time is a stall a DBA feels in the
# load's latency.
FLUSH_BOUND_SHARE = 0.1
# how each part of purge's time split (purge_time.SPLIT) names a phase that it bounds
BOUND_WORDS = {"cpu": ("CPU-bound", "on CPU"), "io": ("I/O-bound", "waiting on I/O"),
               "latch": ("latch-bound", "waiting on latches"),
               "other": ("off CPU", "waiting for workers, a CPU or a sleep")}


def who(view: dict) -> str:
    """'connection 12', a DBA's handle on it (KILL, the processlist), or the OS thread when
    SQL did not name it."""
    if known(view.get("connection_id")):
        return f"connection {view['connection_id']}"
    return f"thread {view['tid']}" if view.get("tid") is not None else "a transaction"


def view_words(view: dict) -> str:
    """'connection 12 (user app, now running "SELECT ...", read view open 42 s; thread 1234,
    opened at f ← g ← h)': who a DBA would look for first, then the OS thread and where
    the view opened. The statement is the connection's current one, which need not be the
    one that opened the view: the stack says where it was opened. Where that is not known,
    the sentence says nothing of it: how to learn it is a note under the verdict
    (verdict_notes)."""
    about = [f"user {view['user']}"] if view.get("user") else []
    if view.get("statement"):
        about.append(f'now running "{shorten(view["statement"], STATEMENT_SHOWN)}"')
    at_least = "at least " if view.get("seen_open") else ""  # caught later than its opening
    about.append(f"read view open {at_least}{seconds(view['age_s'])}")
    after = [f"thread {view['tid']}"] if known(view.get("connection_id")) and view.get("tid") is not None else []
    frames = leaf_first(view.get("stack"), known_only=True)
    if frames:
        after.append(("first seen at " if view.get("seen_open") else "opened at ") + path(frames, 3))
    elif view.get("opened_s") is not None and view["opened_s"] < 0:
        after.append("opened before the recording")
    elif view.get("source") != "memory":  # a view read from memory has no stack to give
        after.append("opened at an unknown place (no stack)")
    return f"{who(view)} ({', '.join(about)}" + (f"; {', '.join(after)})" if after else ")")


# how to learn where a view found in the server's memory opened: a note, never in the sentence
OPENED_NOTE = ("where the read views found in the server's memory opened is not known: record with "
               "--probes default,read_view for the stack each opened at")


def verdict_notes(phases: list[dict]) -> list[str]:
    """What a DBA could learn by recording again, said once under the verdict."""
    views = [v for p in phases for v in p["figures"].get("views", [])]
    unplaced = any(v.get("source") == "memory" and not leaf_first(v.get("stack"), known_only=True)
                   and not (v.get("opened_s") is not None and v["opened_s"] < 0) for v in views)
    return [OPENED_NOTE] if unplaced else []


def known(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


# --- words -----------------------------------------------------------------------------

def flush_bound_words(f: dict) -> str:
    """'; flush-bound: writers waited 3.1 s in 12 waits for the log to make room',
    'threads waited 2.0 s in 40 waits on pages being written to disk' and 'threads waited
    0.9 s in 58 waits for a free page', each when its waits
    took at least FLUSH_BOUND_SHARE of the phase's time, each followed by ', 4 still waiting
    at its end (9.2 s so far)' when some were (a wait is counted when it ends)."""
    said = []
    for wait, who, what in ((f["log_room"], "writers", "for the log to make room"),
                            (f.get("page_writes"), "threads", "on pages being written to disk"),
                            (f.get("free_pages"), "threads", "for a free page")):
        if not wait:
            continue
        bound = wait["waits"] and wait["wait_s"] >= FLUSH_BOUND_SHARE * f["seconds"]
        if bound:
            said.append(f"{who} waited {seconds(wait['wait_s'])} in {count(wait['waits'])} waits {what}")
        if wait.get("open_at_end"):
            still = f"{count(wait['open_at_end'])} still waiting at its end ({seconds(wait['open_s'])} so far)"
            said.append(still if bound else f"{who} waiting {what}, {still}")
    return f"; flush-bound: {', '.join(said)}" if said else ""


def move_words(move: dict | None) -> str:
    """'history 1,800 → 10,600 over 11.0 s (+800/s)'."""
    if not move:
        return "history length not recorded"
    return (f"history {count(move['from'])} → {count(move['to'])} over {seconds(move['seconds'])} "
            f"({growth(move['per_s'])})")


def bound_text(part: str, share: float) -> str:
    """'I/O-bound (63% of batch time waiting on I/O)': the part that bounds purge (purge_time.bound)."""
    name, doing = BOUND_WORDS[part]
    return f"{name} ({100 * share:.0f}% of batch time {doing})"


def bound_words(f: dict) -> str:
    """'; CPU-bound (46% of batch time on CPU)', or, where too little of purge's time was
    watched to say, that it was not: "; purge's time was watched 11% of it, too little to
    say where it went"."""
    watched = f.get("split_watched")
    if f["bound"]:
        text = bound_text(f["bound"]["part"], f["bound"]["share"])
        if watched is not None and watched < WATCHED_ENOUGH:  # a sample spread over it: said so
            text = f"{text[:-1]}, of the {100 * watched:.0f}% of it watched)"
        return f"; {text}"
    if watched is not None and watched < WATCHED_ENOUGH and f["batches"]:
        return f"; purge's time was watched {100 * watched:.0f}% of it, too little to say where it went"
    return ""


def nothing_found(f: dict) -> bool:
    """Every batch of the span found nothing to purge (and some ran)."""
    return f["batches"] > 0 and f["empty_batches"] >= f["batches"] and not f["pages"]


def empty_words(f: dict) -> str:
    if nothing_found(f):
        return f"every purge batch found nothing to purge{batches_seen(f)}"
    return (f"purge batches found nothing to purge in {count(f['all_empty_intervals'])} of "
            f"{count(f['intervals'])} intervals")


def share_words(h: dict) -> str:
    """'the view held 10,600 of 10,600 transactions of history'."""
    share = f"{count(h['pinned'])} of {count(h['history'])} transactions of history"
    return f"the view held {share}" if h["by_view"] else f"{share} were pinned"


def held_words(f: dict, to_s: float) -> str:
    """When the view last held history in the phase and how much ('at its end the view
    held ...'), and whether it closed within the phase."""
    h = f["held"]
    if not h:
        return ""
    when = "at its end" if h["at_s"] == to_s else f"at {at(h['at_s'])} s"
    text = f"{when} {share_words(h)}"
    if h["closed_by_s"] is not None:
        text += f"; the view closed {between(h['at_s'], h['closed_by_s'])}"
    return text


def named_views(views: list[dict]) -> str:
    named = ", then ".join(view_words(v) for v in views[-2:])
    return named + (f" (and {len(views) - 2} views before)" if len(views) > 2 else "")


def pinned_words(f: dict, views: list[dict], pinned_move: dict | None, to_s: float) -> str:
    """Who pinned purge, how the history grew while it did (to the last interval it held
    it), and how much of it the view held then."""
    clauses = [move_words(pinned_move)] if pinned_move else []
    clauses += [held_words(f, to_s)] if f["held"] else []
    if views:
        return f"pinned by {named_views(views)}" + (f": {'; '.join(clauses)}" if clauses else "")
    if not pinned_move:
        return (f"pinned: {empty_words(f)}: an old read view (a long transaction or consistent "
                "snapshot) kept the history (its length was not recorded)")
    return (f"pinned: {empty_words(f)}; {move_words(pinned_move)}; no open read view was recorded "
            "(one opened before the recording shows only with SQL access)")


NOT_RECORDED = "purge not recorded: its probe (purge_batch) was not attached"


def read_in(lv: dict) -> str:
    """' (read in 4 of 7 intervals)' for a level the history was not read throughout: the
    governor may have detached its probes (nothing is known of the rest)."""
    return f" (read in {lv['known']} of {lv['intervals']} intervals)" if lv["known"] < lv["intervals"] else ""


# The batches' probe attached this share of a span: under it a count of batches is of the
# time watched, and none seen is not none run.
BATCHES_WHOLE = 0.99


def batches_partly_watched(f: dict) -> bool:
    return f.get("batches_watched", 1.0) < BATCHES_WHOLE


def no_batch_words(f: dict) -> str:
    """'no purge batch ran', or where the governor detached the batches' probe for part of
    the span, 'no purge batch was seen in the 12% of its time they were watched'."""
    if batches_partly_watched(f):
        return f"no purge batch was seen in the {watched_pct(f)} of its time they were watched"
    return "no purge batch ran"


def watched_pct(f: dict) -> str:
    return f"{100 * f['batches_watched']:.0f}%"


def batches_seen(f: dict) -> str:
    """' (in the 12% of its time they were watched)' after a count of batches, where the
    governor detached their probe for part of the span; '' where it watched them all."""
    return f" (in the {watched_pct(f)} of its time they were watched)" if batches_partly_watched(f) else ""


def idle_words(f: dict) -> str:
    lv = f["levels"]
    top = lv["max"] if lv else None
    if not f["batches"]:
        many = ("" if top is None else f", no history{read_in(lv)}" if not top
                else f", with {count(top)} transactions of history{read_in(lv)}")
        return f"idle: {no_batch_words(f)}{many}"
    if f["pages"]:
        level = f"history at most {count(top)}{read_in(lv)}" if top is not None else "history length not recorded"
        return (f"idle: {level}; purge handled {count(f['pages'])} undo pages in {count(f['batches'])} batches"
                f"{batches_seen(f)}")
    if top is None:
        return f"idle: {count(f['batches'])} purge batches found nothing to purge{batches_seen(f)}"
    level = "no history" if not top else f"history at most {count(top)}"
    return f"idle: {level}{read_in(lv)}, nothing for purge to do"


def keeping_up_words(f: dict) -> str:
    lv = f["levels"]
    about = "history peaking at about" if lv and lv.get("peaked") else "history about"
    level = (f"{about} {count(lv['median'])} ({count(lv['min'])}–{count(lv['max'])}){read_in(lv)}"
             if lv else "history length not recorded")
    return (f"keeping up: {level}, purge {count(f['pages_per_s'])} pages/s in "
            f"{f['batches_per_s']:,.1f} batches/s{batches_seen(f)}")


def catching_up_words(f: dict) -> str:
    if not f["history"]:
        per_batch = f" ({count(f['pages_per_batch'])} per batch)" if f["pages_per_batch"] else ""
        lv = f["levels"]
        unread = f"history read in {lv['known']} of {lv['intervals']} intervals" if lv else "history length not recorded"
        return (f"catching up after the pin: {count(f['pages'])} undo pages in {count(f['batches'])} "
                f"batches{batches_seen(f)}{per_batch}, {count(f['pages_per_s'])} pages/s ({unread})"
                f"{bound_words(f)}")
    per_batch = f", {count(f['pages_per_batch'])} pages per batch" if f["pages_per_batch"] else ""
    return f"catching up: {move_words(f['history'])}{per_batch}{bound_words(f)}"


def falling_behind_words(f: dict) -> str:
    if not f["batches"]:
        return f"falling behind: {move_words(f['history'])} and {no_batch_words(f)}"
    return (f"falling behind: {move_words(f['history'])} while purge handled "
            f"{count(f['pages_per_s'])} pages/s{bound_words(f)}")


def throttled_words(f: dict, views: list[dict], to_s: float) -> str:
    n = f["dml_delays"]
    text = (f"throttled: DML delayed {count(f['dml_delay_us'] / n)} µs × {count(n)} row operations "
            f"(innodb_max_purge_lag), {move_words(f['history'])}")
    if views:
        held_text = held_words(f, to_s)
        text += f"; pinned by {named_views(views)}" + (f": {held_text}" if held_text else "")
    return text


def event_words(verdict: str, f: dict) -> str:
    """A short run taken in by a phase, in a few words."""
    if verdict == "pinned":
        return empty_words(f) if nothing_found(f) or not f["held"] else share_words(f["held"])
    if verdict == "catching_up":  # the work first: the gauge may be read before it ends
        work = f"purge caught up: {count(f['pages'])} undo pages in {count(f['batches'])} batches{batches_seen(f)}"
        return work + (f", {move_words(f['history'])}" if f["history"] else "")
    if verdict == "falling_behind":
        return f"the history rose: {move_words(f['history'])}"
    return f"DML delayed {count(f['dml_delays'])} row operations (innodb_max_purge_lag)"


def events_words(events: list[dict]) -> str:
    text = "".join(f"; at {at(e['from_s'])}–{at(e['to_s'])} s {e['words']}" for e in events[:EVENTS_SHOWN])
    if len(events) > EVENTS_SHOWN:
        text += f"; and {count(len(events) - EVENTS_SHOWN)} more short events (report --json lists them)"
    return text
