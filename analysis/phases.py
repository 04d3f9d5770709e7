"""The recording cut into phases, each with a verdict: idle, keeping up, pinned, catching
up, falling behind or throttled; when purge's probe was not attached, not recorded (nothing
can be said of purge, least of all that no batch ran) but where DML was throttled.

Each interval gets a verdict by verdict()'s rules, then catch_ups_after_pins() and
debounce(): a run shorter than MIN_PHASE intervals joins its neighbour unless it is
decisive. What such a run was is not lost: it stays an event of the phase that took it in,
and the phase's words name it (wording/phases.py), so a one-second catch-up after a pin, a brief
stall or a burst is still said, inside the phase or as a phase of its own."""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import pandas as pd

from .interval_columns import BACKLOG_MIN, columns, span_max

VERDICTS = ("idle", "keeping_up", "pinned", "catching_up", "falling_behind", "throttled", "not_recorded")
# the verdicts worth a word when a phase takes them in: what went wrong, or was put right
NOTEWORTHY = ("pinned", "catching_up", "falling_behind", "throttled")
PINNED_SHARE = 0.8  # the oldest view holds at least this share of the history: pinned
TREND_WINDOW = 5  # intervals over which the history's trend is taken
TREND_SHARE = 0.1  # a trend moves the history by this share of its level over the window
TREND_MIN = 100  # ... and by at least this many transactions
MIN_PHASE = 3  # intervals: a shorter run joins its neighbour, unless it is decisive
DECISIVE_SHARE = 0.25  # a run that moves the history by this share of its peak is kept
CLIMB_MIN = 2 * TREND_WINDOW  # intervals: a climb too slow for the trend, found over this many


# --- verdicts --------------------------------------------------------------------------

@dataclass(frozen=True)
class Interval:
    """What verdict() needs of one interval."""
    history: float  # NaN: unknown
    before: float  # the history last read before this interval; NaN: never
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
    before = table["history"].ffill().shift(1)  # the last reading before: sampled ones have gaps
    as_floats = (table[c].astype("float64").tolist() for c in ("history", "trend", "pinned"))
    as_ints = (table[c].astype("int64").tolist() for c in ("purge_batches", "purge_pages", "dml_delays"))
    return [Interval(history=h, before=b, trend=t, peak=p, pinned=pin, batches=n, all_empty=bool(e),
                     pages=pages, dml_delays=d)
            for h, t, pin, n, pages, d, e, p, b in zip(*as_floats, *as_ints, table["all_empty"].tolist(),
                                                       peaks.astype("float64").tolist(),
                                                       before.astype("float64").tolist())]


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


def decisive(verdicts: list[str], table: pd.DataFrame) -> list[bool]:
    """Intervals that settle a short run: each interval of a catch-up or a fall that moved
    the history by a large share of its peak (a 2-second drain of a big backlog is a phase),
    or, without the history length, of a catch-up that did a large share of all purge's
    work. The history is the one at each snapshot (history_end), so a backlog cleared within
    one interval, whose level still shows it, moves it. The move is taken across the run,
    from the last reading before it to the last within it (or, if none, the first after
    it): a sampled recording may not have read the history at the snapshots around a
    catch-up."""
    c = columns(table)
    history, pages = c["history_end"].astype("float64"), c["purge_pages"]
    peak, work = span_max(history), pages.sum()
    keep = [False] * len(verdicts)
    if not work and (not peak or math.isnan(peak)):
        return keep
    for v, a, b in runs(verdicts):
        if v not in ("catching_up", "falling_behind"):
            continue
        before, inside = c.last_known_before("history_end", a), c.known_in("history_end", a, b)
        after = c.first_known_after("history_end", b)
        first = before if before is not None else (inside[0] if len(inside) else None)
        last = inside[-1] if len(inside) else after
        start = history[first] if first is not None else math.nan
        end = history[last] if last is not None else math.nan
        moved = abs(end - start) / peak if peak and not math.isnan(peak) else math.nan
        share = pages[a:b + 1].sum() / work if work else 0.0
        if (not math.isnan(moved) and moved >= DECISIVE_SHARE) \
                or (math.isnan(moved) and v == "catching_up" and share >= DECISIVE_SHARE):
            keep[a:b + 1] = [True] * (b - a + 1)
    return keep


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
    not pinned), but a single first interval is only the history's trend warming up.

    The runs are kept as a linked list and the short ones in a heap, by (at an edge,
    length, start): each merge then costs a few steps, not a pass over every interval (an
    8-hour recording has thousands of runs to merge)."""
    spans = [[v, a, b, any(keep[a:b + 1])] for v, a, b in runs(verdicts)]  # verdict, first, last, kept
    if len(spans) < 2:
        return list(verdicts)
    before = {s[1]: (spans[k - 1][1] if k else None) for k, s in enumerate(spans)}  # by first row
    after = {s[1]: (spans[k + 1][1] if k + 1 < len(spans) else None) for k, s in enumerate(spans)}
    by_first = {s[1]: s for s in spans}
    heap: list[tuple] = []

    def offer(first: int) -> None:
        v, a, b, kept = by_first[first]
        edge = before[first] is None or after[first] is None
        if len(by_first) > 1 and b - a + 1 < min_len - edge and not kept:
            heapq.heappush(heap, (edge, b - a, a, b))

    def absorb(into: int, other: int) -> None:
        """Run `other` (the next one) joins run `into`."""
        mine, theirs = by_first[into], by_first.pop(other)
        mine[2], mine[3] = theirs[2], mine[3] or theirs[3]
        after[into] = after.pop(other)
        del before[other]
        if after[into] is not None:
            before[after[into]] = into

    for first in list(by_first):
        offer(first)
    while heap and len(by_first) > 1:
        edge, _, a, b = heapq.heappop(heap)
        run = by_first.get(a)
        if run is None or run[2] != b or (before[a] is None or after[a] is None) != edge:
            continue  # merged since, or now at an edge: offered again as it is now
        neighbours = [by_first[j] for j in (before[a], after[a]) if j is not None]
        chosen = max(neighbours, key=lambda n: n[2] - n[1])  # ties: the one before
        run[0], run[3] = chosen[0], chosen[3]
        start = a
        if before[a] is not None and by_first[before[a]][0] == run[0]:
            start = before[a]
            absorb(start, a)
        if after[start] is not None and by_first[after[start]][0] == run[0]:
            absorb(start, after[start])
        offer(start)
        for j in (before[start], after[start]):  # now at an edge, perhaps
            if j is not None:
                offer(j)
    out = list(verdicts)
    for v, a, b, _ in by_first.values():
        out[a:b + 1] = [v] * (b - a + 1)
    return out


def rounded(x: float) -> float:
    return round(float(x), 3)


def history_move(table: pd.DataFrame, a: int, b: int) -> dict | None:
    """The history from the reading nearest the span's start (the snapshot before row a,
    else the nearer of the last reading before it and the first from a on; the one before
    on a tie) to the last known one up to row b, end to end (history_end): {from, to,
    from_s, to_s, seconds, per_s}; None when unknown throughout, or read once (no move to
    tell). A sampled recording misses snapshots; from_s says which reading was taken."""
    c = columns(table)
    ends, t = c["history_end"], c.t
    inside = c.known_in("history_end", a, b)
    if not len(inside):
        return None
    before = c.last_known_before("history_end", a)
    start = t[a] - c["length_s"][a] if "length_s" in c else t[a]
    first = before if before is not None and start - t[before] <= t[inside[0]] - start else inside[0]
    last = inside[-1]
    span = t[last] - t[first]
    if span <= 0:
        return None
    return {"from": int(ends[first]), "to": int(ends[last]), "from_s": rounded(t[first]),
            "to_s": rounded(t[last]), "seconds": rounded(span),
            "per_s": rounded((ends[last] - ends[first]) / span)}


# --- phases ----------------------------------------------------------------------------

def phase_runs(table: pd.DataFrame, purge_recorded: bool = True) -> list[tuple]:
    """The recording cut into phases, in time order: (verdict, first row, last row, taken
    in), taken in being (verdict, first row, last row) of each run of another, noteworthy
    verdict that the phase took in. phase_figures.phase makes each a phase of the report."""
    if table.empty:
        return []
    if not purge_recorded:  # nothing to say of purge; the DML delay, when measured, still is
        unseen = ["throttled" if n else "not_recorded" for n in table["dml_delays"]]
        return [(v, a, b, []) for v, a, b in runs(unseen)]
    intervals = interval_rows(table)
    raw = catch_ups_after_pins([verdict(iv) for iv in intervals], intervals)
    smooth = debounce(raw, decisive(raw, table))
    smooth = slow_climbs(founded(smooth, table), table)
    return [(v, a, b, taken_in(v, raw, table, a, b)) for v, a, b in runs(smooth)]


def slow_climbs(verdicts: list[str], table: pd.DataFrame) -> list[str]:
    """A history that climbs too slowly for the trend rule (TREND_SHARE of its level within
    TREND_WINDOW intervals) but for long is purge falling behind all the same: a steady +90/s
    at a level of 8,000, +1,682 in 19 s, read keeping up. In each keeping-up run, the climb
    from the lowest level before the run's highest to that highest is a fall behind where it
    spans CLIMB_MIN intervals or more and moved the history significantly (as a phase of its
    own must: borne_out). The level is taken as its median over TREND_WINDOW intervals, as a
    MariaDB coordinator's saw-tooth (a level of 400 to 957 within a second) is no climb."""
    out = list(verdicts)
    level = table["history"].astype("float64").rolling(TREND_WINDOW, center=True, min_periods=1).median()
    for v, a, b in runs(verdicts):
        run = level.iloc[a:b + 1].reset_index(drop=True)
        if v != "keeping_up" or b - a + 1 < CLIMB_MIN or run.isna().all():
            continue
        top = int(run.idxmax())
        low = int(run.iloc[:top + 1][::-1].idxmin())  # the last lowest before the top
        if top - low + 1 >= CLIMB_MIN and run[top] > BACKLOG_MIN \
                and borne_out("falling_behind", table, a + low, a + top):
            out[a + low:a + top + 1] = ["falling_behind"] * (top - low + 1)
    return out


def founded(verdicts: list[str], table: pd.DataFrame) -> list[str]:
    """A catch-up or a fall must hold over its whole phase, as its words tell it: the
    intervals' verdicts go by the history's level (a saw-tooth's top on MariaDB), a few
    may outvote the rest, and the phase's history may end where it began. Such a phase is
    purge keeping up (or idle, without work)."""
    out = list(verdicts)
    for v, a, b in runs(verdicts):
        if v in ("catching_up", "falling_behind") and not borne_out(v, table, a, b):
            out[a:b + 1] = ["keeping_up" if columns(table)["purge_pages"][a:b + 1].sum() else "idle"] * (b - a + 1)
    return out


def taken_in(v: str, raw: list[str], table: pd.DataFrame, a: int, b: int) -> list[tuple]:
    """(verdict, first row, last row) of each shorter run of another, noteworthy verdict in
    rows a..b that its own intervals bear out. A rise or a fall is named by a trend over the
    intervals before it too, and the first interval after a pin is called a catch-up
    before it is seen to be one: each is said only where the history moved so within it."""
    found = []
    for e, first, last in runs(raw[a:b + 1]):
        if e != v and e in NOTEWORTHY and borne_out(e, table, a + first, a + last):
            found.append((e, a + first, a + last))
    return found


def borne_out(v: str, table: pd.DataFrame, a: int, b: int) -> bool:
    moved = history_move(table, a, b)
    if v == "catching_up":
        return columns(table)["purge_pages"][a:b + 1].sum() > 0 and (not moved or moved["to"] < moved["from"])
    if v == "falling_behind":
        level = span_max(columns(table)["history"][a:b + 1].astype("float64"))
        return bool(moved) and moved["to"] > moved["from"] and significant(moved["to"] - moved["from"], level)
    return True
