"""Purge over time: the history list, the read view that pins it, where each batch's time
goes, and the recording cut into phases, each with a verdict in plain words.

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

The history length is the server's own figure (a gauge): in each interval the highest it
computed then (see known_history), or the last one when it computed none; it is known
from the first interval in which innostall read it (history_reads > 0), and unknown before,
or in recordings that predate it: unknown is shown as nothing, never as 0.

Every function below is a small pure one on pandas objects or plain values; the rules that
name a phase are verdict() and debounce(), their words are detail()."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .recording import Recording
from .stacks import short_frame
from .timeline import per_interval
from .views import counter_names, interval_lengths

VERDICTS = ("idle", "keeping_up", "pinned", "catching_up", "falling_behind", "throttled")
# transactions: a history this short is no backlog (a server committing thousands a second
# shows a few hundred between two batches while purge keeps up)
BACKLOG_MIN = 1000
PINNED_SHARE = 0.8  # the oldest view holds at least this share of the history: pinned
TREND_WINDOW = 5  # intervals over which the history's trend is taken
TREND_SHARE = 0.1  # a trend moves the history by this share of its level over the window
TREND_MIN = 100  # ... and by at least this many transactions
MIN_PHASE = 3  # intervals: a shorter run joins its neighbour, unless it is decisive
DECISIVE_SHARE = 0.25  # a run that moves the history by this share of its peak is kept
HISTORY_GROUP = "history"  # the sampling group of the probes that read it (catalog.toml)
WATCHED_WHOLE = 0.99  # attached this share of an interval: a read it lacks was not made
PIN_LISTED = 10  # pinning views listed at most
SPLIT = ("cpu", "io", "latch", "other")  # where a batch's time goes
BOUND_WORDS = {"cpu": ("CPU-bound", "on CPU"), "io": ("I/O-bound", "reading pages"),
               "latch": ("latch-bound", "waiting on latches"),
               "other": ("off CPU", "waiting for workers, a CPU or a sleep")}
VIEW_COLUMNS = ["tid", "opened_s", "age_s", "history_at_open", "stack", "connection_id",
                "user", "statement", "source", "seen_open", "open"]


# --- the per-interval table ------------------------------------------------------------

def purge_table(rec: Recording) -> pd.DataFrame:
    """One row per interval (index t_s, its end): the purge counters' deltas, the history
    (NaN where unknown), its trend, the batch time split, the oldest open read view
    (view_* columns, NaN/None when none was recorded), and pinned/purgeable history."""
    table = per_interval(rec, [
        "purge_batches", "purge_empty_batches", "purge_pages", "purge_records", "dml_delays",
        "dml_delay_us", "deep_walks", "block_wait_ns", "other_latch_wait_ns", "history_length",
        "history_length_peak", "history_reads", "purge_batch_ns", "purge_batch_cpu_ns", "purge_batch_io_ns",
        "purge_batch_latch_ns", "purge_worker_tasks", "purge_worker_ns", "purge_worker_cpu_ns",
        "purge_worker_io_ns", "purge_worker_latch_ns", *watched_split_columns(rec)])
    table["length_s"] = interval_lengths(table)
    table = table[table["length_s"].notna()].copy()  # a final snapshot at the last one's instant
    table["history"] = known_history(table["history_length"], table["history_reads"],
                                     table["history_length_peak"], history_watched(rec, table))
    table["trend"] = trend(table["history"])
    table["growth_per_s"] = growth_per_s(table["history"])
    table["all_empty"] = (table["purge_batches"] > 0) & (
        table["purge_empty_batches"] >= table["purge_batches"])
    views = oldest_views(rec, table.index)
    table = table.join(views)
    recorded = len(rec.read_views) > 0 or rec.counter_total("read_views_opened") > 0
    table["pinned"], table["purgeable"] = split_history(
        table["history"].tolist(), table["all_empty"].tolist(), view_keys(table),
        table["view_history_at_open"].tolist(), recorded)
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


def history_watched(rec: Recording, table: pd.DataFrame) -> pd.Series | None:
    """The share of each interval the history's probes were attached, where the cost
    governor sampled them (MariaDB 10.6+); None where they are never detached (the member
    read at each batch, or recordings from before the governor)."""
    name = f"governor.attached_ns.{HISTORY_GROUP}"
    if name not in counter_names(rec):
        return None
    attached = per_interval(rec, [name])[name].reindex(table.index, fill_value=0)
    return attached / (table["length_s"] * 1e9)


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


def oldest_views(rec: Recording, ends: pd.Index) -> pd.DataFrame:
    """Per interval end, the oldest read view open at its snapshot (view_* columns)."""
    views = rec.read_views
    columns = [f"view_{c}" for c in VIEW_COLUMNS]
    if not len(views):
        return pd.DataFrame({c: pd.Series([None] * len(ends), index=ends, dtype=object)
                             for c in columns})
    oldest = views.sort_values(["interval", "opened_s"]).groupby("interval").head(1)
    ends_of = rec.counters.groupby("interval")["t_s"].first()
    oldest = oldest.assign(t_s=oldest["interval"].map(ends_of)).set_index("t_s")
    oldest = oldest[VIEW_COLUMNS].rename(columns=lambda c: f"view_{c}").reindex(ends).astype(object)
    return oldest.where(oldest.notna(), None)


def view_keys(table: pd.DataFrame) -> list:
    """Which view each interval's oldest is, as (tid, opened_s), or None when none was
    seen (the tid itself may be unknown: a transaction found by SQL without one)."""
    return [None if opened is None else (int(tid) if tid is not None else None, round(float(opened), 3))
            for tid, opened in zip(table["view_tid"], table["view_opened_s"])]


def who(view: dict) -> str:
    """'thread 1234', or the connection when the OS thread is unknown."""
    if view.get("tid") is not None:
        return f"thread {view['tid']}"
    return f"connection {view['connection_id']}" if view.get("connection_id") is not None else "a transaction"


def is_known(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


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


# --- where the time goes ---------------------------------------------------------------

def time_split(totals: dict[str, float]) -> dict[str, float] | None:
    """cpu, io, latch and other (the rest, never below 0) in ns, from a total and its three
    measured parts; None when no time was measured."""
    total = totals.get("total", 0)
    if not total:
        return None
    parts = {k: float(totals.get(k, 0)) for k in ("cpu", "io", "latch")}
    return {**parts, "other": max(0.0, total - sum(parts.values()))}


def watched_split_columns(rec: Recording) -> list[str]:
    """The wall time the sleep tracepoint watched, in recordings that have it (it was not
    sampled before)."""
    names = set(rec.counters["name"].unique())
    return [name for name in ("purge_batch_split_ns", "purge_worker_split_ns") if name in names]


def split_of(rows: pd.DataFrame, who: str) -> dict | None:
    """The split of the spans the sleep tracepoint watched whole (purge_*_split_ns; before
    it was sampled, every span: the whole wall time)."""
    watched = f"purge_{who}_split_ns"
    total = rows[watched].sum() if watched in rows else rows[f"purge_{who}_ns"].sum()
    return time_split({"total": total, **{part: rows[f"purge_{who}_{part}_ns"].sum()
                                          for part in ("cpu", "io", "latch")}})


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


def bound_words(split: dict | None) -> str:
    """'I/O-bound (63% of batch time reading pages)', or '' when no time was measured."""
    found = bound(split)
    if not found:
        return ""
    name, doing = BOUND_WORDS[found[0]]
    return f"{name} ({100 * found[1]:.0f}% of batch time {doing})"


def as_ms(split: dict | None) -> dict:
    return {k: (round(split[k] / 1e6, 1) if split else None) for k in SPLIT}


# --- verdicts --------------------------------------------------------------------------

@dataclass(frozen=True)
class Interval:
    """What verdict() needs of one interval."""
    history: float  # NaN: unknown
    before: float  # the history at the snapshot before; NaN: unknown
    trend: float  # history now − history TREND_WINDOW intervals ago; NaN: unknown
    peak: float  # the highest history over that window
    pinned: float  # NaN: unknown
    batches: int
    all_empty: bool  # batches ran and every one found nothing
    pages: int
    dml_delays: int


def significant(move: float, level: float) -> bool:
    return abs(move) > max(TREND_MIN, TREND_SHARE * level)


def verdict(iv: Interval) -> str:
    """The verdict of one interval, by these rules in order:
    throttled   DML was delayed (innodb_max_purge_lag) in it;
    pinned      an old read view holds most of the history, or every batch found nothing
                while there was history (or its length is unknown);
    catching_up the history fell markedly over the last intervals while purge worked on a
                backlog (it was one at the snapshot before);
    falling_behind  it rose markedly into a backlog, not pinned;
    idle        no history to speak of and nothing purged, or no batch and no history known;
    keeping_up  otherwise: purge works and the history holds steady."""
    known = not math.isnan(iv.history)
    if iv.dml_delays:
        return "throttled"
    if known and iv.history > BACKLOG_MIN and not math.isnan(iv.pinned) \
            and iv.pinned >= PINNED_SHARE * iv.history:
        return "pinned"
    if iv.all_empty and (not known or iv.history > BACKLOG_MIN):
        return "pinned"
    if known and not math.isnan(iv.trend) and significant(iv.trend, iv.peak):
        if iv.trend < 0 and iv.pages and iv.before > BACKLOG_MIN:
            return "catching_up"
        if iv.trend > 0 and iv.history > BACKLOG_MIN:
            return "falling_behind"
    if (known and iv.history <= BACKLOG_MIN and not iv.pages) or (not iv.batches and not iv.pages):
        return "idle"
    return "keeping_up"


def interval_rows(table: pd.DataFrame) -> list[Interval]:
    peaks = table["history"].rolling(TREND_WINDOW + 1, min_periods=1).max()
    before = table["history"].shift(1)
    return [Interval(history=float(r.history), before=float(b), trend=float(r.trend), peak=float(p),
                     pinned=float(r.pinned), batches=int(r.purge_batches),
                     all_empty=bool(r.all_empty), pages=int(r.purge_pages),
                     dml_delays=int(r.dml_delays))
            for r, p, b in zip(table.itertuples(), peaks, before)]


def catch_ups_after_pins(verdicts: list[str], intervals: list[Interval]) -> list[str]:
    """Purge working right after a pin is catching up: the first interval after it (whose
    history may still show the peak the pin left: it was read before the backlog drained),
    and each next one while the history keeps falling, or while its length is unknown (then
    up to the first interval without undo pages)."""
    out = list(verdicts)
    for i in range(1, len(out)):
        iv = intervals[i]
        if out[i] not in ("keeping_up", "falling_behind") or not iv.pages:
            continue
        falling = math.isnan(iv.history) or iv.history < iv.before
        if out[i - 1] == "pinned" or (out[i - 1] == "catching_up" and falling):
            out[i] = "catching_up"
    return out


def decisive(verdicts: list[str], history: pd.Series, pages: pd.Series) -> list[bool]:
    """Intervals that settle a short run: a catch-up or a fall that moved the history by a
    large share of its peak in one interval (a 2-second drain of a big backlog is a phase),
    or, without the history length, a catch-up that did a large share of all purge's work."""
    peak, work = history.max(), pages.sum()
    moved = history.diff().abs() / peak if peak and not math.isnan(peak) else history * math.nan
    share = pages / work if work else pages * 0.0
    return [v in ("catching_up", "falling_behind")
            and ((not math.isnan(m) and m >= DECISIVE_SHARE)
                 or (math.isnan(h) and v == "catching_up" and w >= DECISIVE_SHARE))
            for v, m, h, w in zip(verdicts, moved, history, share)]


def runs(verdicts: list[str]) -> list[list]:
    """[verdict, first, last] of each run of equal verdicts."""
    found: list[list] = []
    for i, v in enumerate(verdicts):
        if found and found[-1][0] == v:
            found[-1][2] = i
        else:
            found.append([v, i, i])
    return found


def debounce(verdicts: list[str], keep: list[bool], min_len: int = MIN_PHASE) -> list[str]:
    """Verdicts without flapping: a run shorter than min_len intervals takes the verdict of
    its longer neighbour, unless one of its intervals is decisive; the shortest such run
    first, inner runs before the first and the last, until every run is long enough or
    decisive. The first and the last run need one interval less: with nothing on their
    other side they flap less (a snapshot opened 2 s into the recording leaves 2 s that were
    not pinned), but a single first interval is only the history's trend warming up."""
    out, keep = list(verdicts), list(keep)
    while True:
        spans = runs(out)
        edge = {0, len(spans) - 1}
        short = [(k in edge, b - a, k) for k, (v, a, b) in enumerate(spans)
                 if len(spans) > 1 and b - a + 1 < min_len - (k in edge) and not any(keep[a:b + 1])]
        if not short:
            return out
        k = min(short)[2]
        _, a, b = spans[k]
        neighbours = [spans[j] for j in (k - 1, k + 1) if 0 <= j < len(spans)]
        verdict_, first, last = max(neighbours, key=lambda n: n[2] - n[1])  # ties: the one before
        out[a:b + 1] = [verdict_] * (b - a + 1)
        keep[a:b + 1] = [any(keep[first:last + 1])] * (b - a + 1)


# --- phases and their words ------------------------------------------------------------

def phases(table: pd.DataFrame) -> list[dict]:
    """The recording cut into phases: {from_s, to_s, verdict, detail}, in time order."""
    if table.empty:
        return []
    intervals = interval_rows(table)
    raw = catch_ups_after_pins([verdict(iv) for iv in intervals], intervals)
    smooth = debounce(raw, decisive(raw, table["history"], table["purge_pages"]))
    ends = table.index.to_list()
    found = []
    for v, a, b in runs(smooth):
        rows = table.iloc[a:b + 1]
        before = table["history"].iloc[a - 1] if a else math.nan
        found.append({"from_s": round(ends[a - 1] if a else 0.0, 3), "to_s": round(ends[b], 3),
                      "verdict": v, "detail": detail(v, rows, before)})
    return found


def count(n: float) -> str:
    return f"{n:,.0f}"


def seconds(s: float) -> str:
    """An age as people say it: '4.5 s', '42.0 s', '1,234 s'."""
    return f"{s:.1f} s" if abs(s) < 100 else f"{s:,.0f} s"


def history_move(rows: pd.DataFrame, before: float) -> tuple[float, float, float] | None:
    """(history at the phase's start, at its end, seconds between the two), when known: the
    start is the snapshot before the phase, or its first known one."""
    levels = rows["history"].dropna()
    if levels.empty:
        return None
    if not math.isnan(before):
        start_t = rows.index[0] - rows["length_s"].iloc[0]
        return before, levels.iloc[-1], levels.index[-1] - start_t
    return levels.iloc[0], levels.iloc[-1], levels.index[-1] - levels.index[0]


def rate(move: tuple[float, float, float] | None) -> float:
    """The history's net change per second over a phase (0 when it spans no time)."""
    return (move[1] - move[0]) / move[2] if move and move[2] > 0 else 0.0


def view_words(view: dict) -> str:
    """'thread 1234 (read view open 42 s, opened at f <- g <- h; connection 12, user app,
    now running "SELECT ..."')'. The statement is the connection's current one, which need
    not be the one that opened the view: the stack says where it was opened."""
    frames = [short_frame(f) for f in reversed(str(view.get("stack") or "").split(";"))
              if f and not f.startswith("[")]
    if frames:
        opened = ("first seen at " if view.get("seen_open") else "opened at ") + " <- ".join(frames[:3])
    elif view.get("opened_s") is not None and view["opened_s"] < 0:
        opened = "opened before the recording"
    else:
        opened = "opened at an unknown place (no stack)"
    named = is_known(view.get("connection_id")) and view.get("tid") is not None  # else who() names it
    about = [f"connection {view['connection_id']}"] if named else []
    about += [f"user {view['user']}"] if view.get("user") else []
    if view.get("statement"):
        text = " ".join(str(view["statement"]).split())
        about.append(f'now running "{text[:80]}{"…" if len(text) > 80 else ""}"')
    at_least = "at least " if view.get("seen_open") else ""  # caught later than its opening
    return (f"{who(view)} (read view open {at_least}{seconds(view['age_s'])}, {opened}"
            + (f"; {', '.join(about)}" if about else "") + ")")


def phase_views(rows: pd.DataFrame) -> list[dict]:
    """The distinct oldest views of a phase's intervals, each as at its last interval."""
    seen: dict = {}
    for r in rows.itertuples():
        if r.view_opened_s is not None:
            seen[(r.view_tid, r.view_opened_s)] = plain_view({c: getattr(r, f"view_{c}") for c in VIEW_COLUMNS})
    return list(seen.values())


def plain_view(view: dict) -> dict:
    """A view's fields as JSON has them: whole numbers as int, unknowns as None."""
    out = {k: (v if is_known(v) else None) for k, v in view.items()}
    for k in ("tid", "connection_id", "history_at_open", "open"):
        out[k] = int(out[k]) if out.get(k) is not None else None
    return out


def pinned_words(rows: pd.DataFrame) -> str:
    views = phase_views(rows)
    pinning = rows[rows["pinned"] > 0]  # the phase may end once the view has closed
    last = (pinning if len(pinning) else rows).iloc[-1]
    held = ""
    if not math.isnan(last["history"]) and not math.isnan(last["pinned"]):
        held = f": holds {count(last['pinned'])} of {count(last['history'])} transactions of history"
        if not math.isnan(last["growth_per_s"]):
            held += f", growing {last['growth_per_s']:+,.0f}/s"
    if views:
        named = ", then ".join(view_words(v) for v in views[-2:])
        more = f" (and {len(views) - 2} views before)" if len(views) > 2 else ""
        return f"pinned by {named}{more}{held}"
    if rows["history"].isna().all():
        return ("pinned: every purge batch found nothing to purge: an old read view (a long "
                "transaction or consistent snapshot) kept the history (its length was not recorded)")
    return (f"pinned: every purge batch found nothing to purge{held}; no open read view was "
            "recorded (one opened before the recording shows only with SQL access)")


def detail(v: str, rows: pd.DataFrame, before: float = math.nan) -> str:
    """The cause of a phase in plain words."""
    length_s = float(rows["length_s"].sum())
    move = history_move(rows, before)
    pages_s = rows["purge_pages"].sum() / length_s if length_s else 0.0
    batches = int(rows["purge_batches"].sum())
    working = batches - int(rows["purge_empty_batches"].sum())
    per_batch = rows["purge_pages"].sum() / working if working else 0.0
    split = purge_split(coordinator_split(rows), worker_split(rows))
    span = f"history {count(move[0])} → {count(move[1])}" if move else "history length not recorded"
    if v == "throttled":
        n, us = int(rows["dml_delays"].sum()), float(rows["dml_delay_us"].sum())
        text = (f"throttled: DML delayed {us / n:,.0f} µs × {count(n)} row operations "
                f"(innodb_max_purge_lag), {span}")
        pinning = pinned_words(rows) if phase_views(rows) else ""
        return text + (f"; {pinning}" if pinning else "")
    if v == "pinned":
        return pinned_words(rows)
    if v == "catching_up":
        bound_text = f"; {bound_words(split)}" if split else ""
        if not move:
            return (f"catching up after the pin: {count(rows['purge_pages'].sum())} undo pages in "
                    f"{count(batches)} batches ({per_batch:,.0f} per batch), {pages_s:,.0f} pages/s "
                    f"(history length not recorded){bound_text}")
        return f"catching up: {span} at {count(-rate(move))}/s, {per_batch:,.0f} pages per batch{bound_text}"
    if v == "falling_behind":
        if not batches:
            return f"falling behind: {span} (+{count(rate(move))}/s) and no purge batch ran"
        bound_text = f"; {bound_words(split)}" if split else ""
        return (f"falling behind: {span} (+{count(rate(move))}/s) while purge handled "
                f"{pages_s:,.0f} pages/s{bound_text}")
    if v == "idle":
        top = rows["history"].max()
        if not batches:
            left = f", with {count(top)} transactions of history" if top > BACKLOG_MIN else ""
            return f"idle: no purge batch ran{left}"
        if math.isnan(top):
            return f"idle: {batches} purge batches found nothing to purge"
        return f"idle: {'no history' if not top else f'history at most {count(top)}'}, nothing for purge to do"
    levels = rows["history"].dropna()
    level = (f"history about {count(levels.median())} ({count(levels.min())}–{count(levels.max())})"
             if len(levels) else "history length not recorded")
    return f"keeping up: {level}, purge {pages_s:,.0f} pages/s in {batches / length_s:,.1f} batches/s"


# --- what the report says of the whole recording ---------------------------------------

def pinning_views(table: pd.DataFrame) -> list[dict]:
    """The read views that pinned purge: oldest open in at least two snapshots, and holding
    a history worth the name (or every batch found nothing) in one. Each with its age at
    the last interval it pinned; the ones holding most first, at most PIN_LISTED."""
    found: dict = {}
    for t, r in table.iterrows():
        if r["view_opened_s"] is None:
            continue
        key = (r["view_tid"], r["view_opened_s"])
        holds = (not math.isnan(r["pinned"]) and r["pinned"] > BACKLOG_MIN) or r["all_empty"]
        entry = found.setdefault(key, {"seen": 0, "pinned": False, "held": 0.0})
        entry["seen"] += 1
        if holds:
            entry.update(pinned=True, last=r, until_s=t,
                         held=max(entry["held"], 0.0 if math.isnan(r["pinned"]) else r["pinned"]))
            entry.setdefault("since_s", t)
    listed = [e for e in found.values() if e["pinned"] and e["seen"] >= 2]
    listed.sort(key=lambda e: (-e["held"], e["last"]["view_opened_s"]))
    return [view_json(e) for e in listed[:PIN_LISTED]]


def view_json(entry: dict) -> dict:
    view = plain_view({c: entry["last"][f"view_{c}"] for c in VIEW_COLUMNS})
    return {"tid": view["tid"], "opened_s": round(float(view["opened_s"]), 3),
            "age_s": round(float(view["age_s"]), 3), "stack": view["stack"] or "",
            "connection_id": view["connection_id"], "user": view["user"],
            "statement": view["statement"], "source": view["source"],
            "seen_open": bool(view["seen_open"]), "history_at_open": view["history_at_open"],
            "pinned_from_s": round(float(entry["since_s"]), 3),
            "pinned_to_s": round(float(entry["until_s"]), 3),
            "pinned_max": int(entry["held"])}


def number(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), 3)


def history_summary(table: pd.DataFrame) -> dict:
    """first, last, max of the history (null when never read), from and to when it was
    known (known_to_end: to the last interval), the pinned and purgeable parts at its last
    known interval, its growth per second over the time known and over the last intervals,
    and the time to drain it at the recent net decrease (null unless falling)."""
    known = table.dropna(subset=["history"])
    if known.empty:
        return dict.fromkeys(["first", "last", "max", "known_from_s", "known_to_s", "known_to_end",
                              "pinned", "purgeable", "growth_per_s", "recent_growth_per_s", "drain_s"])
    last = known.iloc[-1]
    span = known.index[-1] - known.index[0]
    recent = last["growth_per_s"]
    drain = (last["history"] / -recent if not math.isnan(recent) and recent < 0 else
             (0.0 if last["history"] == 0 else None))
    return {"first": int(known["history"].iloc[0]), "last": int(last["history"]),
            "max": int(known["history"].max()), "known_from_s": number(known.index[0]),
            "known_to_s": number(known.index[-1]), "known_to_end": bool(known.index[-1] == table.index[-1]),
            "pinned": None if math.isnan(last["pinned"]) else int(last["pinned"]),
            "purgeable": None if math.isnan(last["purgeable"]) else int(last["purgeable"]),
            "growth_per_s": number((last["history"] - known["history"].iloc[0]) / span) if span else None,
            "recent_growth_per_s": number(recent), "drain_s": number(drain) if drain is not None else None}


def purge_story(rec: Recording) -> dict:
    """What summary() adds under purge: history, pinned_by, phases, and the batches' and
    workers' time split in ms (null parts when not measured)."""
    table = purge_table(rec)
    return {"history": history_summary(table), "pinned_by": pinning_views(table),
            "phases": phases(table),
            "batch_time_ms": as_ms(coordinator_split(table)),
            "worker_time_ms": as_ms(worker_split(table)),
            "split_watched_pct": {who: watched_pct(table, who) for who in ("batch", "worker")},
            "worker_tasks": int(table["purge_worker_tasks"].sum())}


def watched_pct(table: pd.DataFrame, who: str) -> float | None:
    """The share of the spans' wall time that the time split covers (the sleep tracepoint is
    sampled); None where the recording split every span."""
    watched, total = f"purge_{who}_split_ns", table[f"purge_{who}_ns"].sum()
    return number(100 * table[watched].sum() / total) if watched in table and total else None
