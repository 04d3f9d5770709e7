"""The replica section: on a replica, its applier's events and time, the lag and its phases
(figures under replica: analysis/replica.py, which the summary hands it), the lag's and the
applier's findings and the section's text lines. On a replica its story leads the report.

Its words are made from the figures alone (so every number a line says is one of its
figures, which `report --json` gives beside it and verdict_check checks against the
counters): its phases' details (phase_detail, which the summary passes to
replica.replica_summary, a floor below), the text report's section, and the finding on what
the applier waited for. Shares are of the time the scheduler tracepoint watched whole
(replica_time.py); where it watched less than all of the applier's time, the words say of
how much."""
from __future__ import annotations

from ..applier_counts import applier_totals
from ..cost import sampled_note
from ..interval_columns import WATCHED_ENOUGH
from ..recording import Recording
from ..replica_time import (BOUND, DOING, FINDING_SHARE, PARTS, SHOWN_SHARE, UNSPLIT, UNWATCHED, WAITS,
                            time_split, waiting_part)
from ..sampling import EXACT
from ..wording.numbers import count, duration
from ..wording.replica_lag import lag_finding
from ..wording.work_latch_words import heaviest_latch_words, work_latch_lines
from .lines import finding_lines

KEYS = ("replica",)
LEADS = True  # told first, in the text and the findings: the lag is what a replica's reader asks
THREADS_SHOWN = 8  # applier threads listed in the text; JSON lists them all
PART_LABELS = {"on_cpu": "on CPU", "latch": "latch waits", "row_lock": "row-lock waits", "io": "page reads",
               "redo": "redo-log waits at commit", "commit_order": "commit-order waits",
               "other": "other (asleep for anything else: a binary-log sync at commit, a group commit ...)"}
WHY = {
    "row_lock": "its transactions waited for row locks that other transactions held on the replica, such as a "
                "query or a long transaction run on the replica itself (a report, a backup, a locking read) or, "
                "with parallel appliers, workers applying transactions that change the same rows.",
    "latch": "it contended with other threads for InnoDB's latches (hot index pages, the lock system, the "
             "buffer pool).",
    "io": "the pages its events changed were not in the buffer pool and were read from disk one at a time, "
          "as with a buffer pool too small for the replica's working set, or a cold one after a restart.",
    "redo": "each transaction it applied waited at its commit for the redo log to be written, and with "
            "innodb_flush_log_at_trx_commit=1 flushed to disk: one sync per transaction, one transaction at a time "
            "for a single applier, so the disk's sync latency caps its rate. Parallel appliers share a sync "
            "among the transactions committing together; innodb_flush_log_at_trx_commit=2 (a replica that "
            "can be rebuilt from its source may lose its last second) or a disk with a faster sync shorten it.",
    "commit_order": "its parallel workers had transactions ready to commit that waited for the ones before "
                    "them to commit first (the source's commit order); a slow transaction ahead holds the "
                    "others back, so more workers would not apply faster.",
}


def rate(per_s: float) -> str:
    """Events per second: '411/s', '0.3/s'."""
    return f"{per_s:,.1f}/s" if per_s < 100 else f"{count(per_s)}/s"


def percent(share: float) -> str:
    return f"{100 * share:.0f}%"


# --- a phase ---------------------------------------------------------------------------

def who(f: dict) -> str:
    return "the applier" if f["threads"] == 1 else f"the {count(f['threads'])} applier threads"


def work_words(f: dict, none: str) -> str:
    """'the applier applied 1,234 events (411/s), busy 2.9 s of 3.0 s (97%: saturated, it
    cannot apply faster)'; none when no event was applied (nor any time spent)."""
    if not f["events"] and not f["busy_s"]:
        return none
    they = "it" if f["threads"] == 1 else "they"
    full = f": saturated, {they} cannot apply faster" if f["saturated"] else ""
    their = "" if f["threads"] == 1 else "their "
    return (f"{who(f)} applied {count(f['events'])} events ({rate(f['events_per_s'])}), busy "
            f"{duration(f['busy_s'])} of {their}{duration(f['capacity_s'])} ({percent(f['busy_share'])}{full})")


def shown_parts(f: dict, verdict: str) -> list[str]:
    """The parts the words name: the one the verdict names first, then largest first
    (PARTS' order on a tie)."""
    shares = f["shares"]
    return sorted((p for p in PARTS if shares[p] >= SHOWN_SHARE),
                  key=lambda p: (BOUND[p] != verdict, -shares[p]))


def split_words(f: dict, verdict: str) -> str:
    """': 62% of it waiting on row locks (1.9 s), 20% on CPU (0.6 s), ...', or, when the
    scheduler tracepoint watched less than all of it, '; of the 2.1 s watched whole, 62%
    waiting on row locks (1.3 s), ...'."""
    if f["split_s"] is None:
        return "; its time was not split (no event was watched whole)" if f["busy_s"] else ""
    parts = [f"{percent(f['shares'][p])} {DOING[p]} ({duration(f['split_s'][p])})" for p in shown_parts(f, verdict)]
    if f["watched_s"] < f["busy_s"]:
        return f"; of the {duration(f['watched_s'])} watched whole, {', '.join(parts)}"
    first, *rest = parts
    return ": " + ", ".join([first.replace("% ", "% of it ", 1), *rest])


def attached_words(f: dict) -> str:
    """'; its probes were attached 40% of the phase (the cost governor sampled them: a
    floor)' when they were not attached throughout."""
    share = f["attached_share"]
    if share is None or share >= EXACT:
        return ""
    return f"; its probes were attached {percent(share)} of the phase (the cost governor sampled them: a floor)"


def latch_words(f: dict) -> str:
    """'; the latch it waited on most: block 8:4 sbtest/sbtest1 PRIMARY (590 ms)' in a
    latch-bound phase whose latch waits were tabled."""
    latch = f.get("latch")
    return f"; the latch it waited on most: {latch['name']} ({duration(latch['wait_s'])})" if latch else ""


def counted_words(f: dict) -> str:
    """'the applier applied 666 events (83.2/s), counted busy 511 ms': what was counted of a
    phase too little watched to say more (no share of it, no cause)."""
    return f"{who(f)} applied {count(f['events'])} events ({rate(f['events_per_s'])}), counted busy {duration(f['busy_s'])}"


def whole_words(f: dict) -> str:
    """', 6.0 s of it waiting on row locks (their probe attached throughout)': the waits
    charged to the applier whole, whose probe the cost governor never detached."""
    whole = f.get("counted_whole_s") or {}
    return "".join(f", {duration(s)} of it {DOING[part]} (their probe attached throughout)"
                   for part, s in whole.items() if s > 0)


def phase_detail(verdict: str, f: dict) -> str:
    """A phase's line after its times: its verdict, then what the applier did and where its
    time went; for a phase not watched enough to say (unwatched, unsplit), only what was
    counted and that it was not watched."""
    busy = f["events"] or f["busy_s"]
    if verdict == UNWATCHED and busy:
        whole = whole_words(f)
        return (f"{verdict}: {counted_words(f)}{whole}{attached_words(f)}: too little watched to say what "
                f"{'else ' if whole else ''}held it back")
    if verdict == UNSPLIT:
        return (f"{verdict}: {counted_words(f)}; no event was watched whole: where its time went is not known"
                f"{attached_words(f)}")
    none = ("no event seen (its probes were detached at times: an event begun then, a stall, may have gone on "
            "unseen)" if verdict == UNWATCHED else "no event applied")
    return f"{verdict}: {work_words(f, none)}{split_words(f, verdict)}{latch_words(f)}{attached_words(f)}"


# --- the text report's section ---------------------------------------------------------

def thread_lines(threads: list[dict]) -> list[str]:
    lines = [f"    tid {t['tid']:<8} {t['thread']:<16} {t['events']:>12,} events {t['apply_s']:>10.3f} s"
             for t in threads[:THREADS_SHOWN]]
    if len(threads) > THREADS_SHOWN:
        lines.append(f"    ... and {len(threads) - THREADS_SHOWN} more (report --json lists them all)")
    return lines


def split_line(a: dict) -> list[str]:
    """'  its time (3.0 s watched whole): on CPU 20% (600 ms), latch waits 0% (0 s), ...'."""
    split = a["split_ms"]
    if split["on_cpu"] is None:
        return ["  its time was not split: no event was watched whole"]
    total = sum(split.values())
    if not total:  # less than 0.05 ms watched: no share to tell
        return ["  its time: too little watched whole to split"]
    watched = "" if a["split_watched_pct"] is None else f", {a['split_watched_pct']:.0f}% of its busy time"
    shares = ", ".join(f"{PART_LABELS[p]} {100 * split[p] / total:.0f}% ({duration(split[p] / 1e3)})" for p in PARTS)
    return [f"  its time ({duration(total / 1e3)} watched whole{watched}): {shares}"]


def replica_lines(told: dict, drawn: dict) -> list[str]:
    """The text report's section, when the replica's applier was recorded (drawn: the
    section's sampled note, and whether the report is of a window: sections/replica.py)."""
    replica = told.get("replica")
    if not replica:
        return []
    a = replica["applier"]
    threads = a["threads"]
    whole = " (the whole recording's)" if drawn["window"] else ""
    by = (f"by {len(threads)} applier thread{'s' if len(threads) != 1 else ''}{whole}" if threads
          else "(its threads were not tabled)")
    lines = ["", "Replica applier (the replica's threads applying replicated events)" + drawn["sampled"],
             f"  {count(a['events'])} events applied ({rate(a['events_per_s'] or 0)}), busy "
             f"{duration(a['busy_s'])} in all, {by}"]
    lines += thread_lines(threads) + split_line(a) + work_latch_lines(a["latches"], "its events")
    if replica["lag_s_max"] is None:
        lines.append(f"  replication lag: {replica['lag_note']}")
    else:
        lines.append(f"  replication lag, as the replica reported it at each snapshot: at most "
                     f"{replica['lag_s_max']:,} s (at {replica['lag_s_max_at_s']:.1f} s), "
                     f"{replica['lag_s_last']:,} s at the end")
    return lines  # its phases lead the verdict (verdict_view.py)


# --- the finding -----------------------------------------------------------------------

def finding_parts(split: dict | None, phases: list[dict], coverage: float = 1.0) -> list[str]:
    """The parts a finding explains: the largest waiting part, and the redo log's waits,
    each when it took FINDING_SHARE of the watched time of a recording whose probes were
    attached WATCHED_ENOUGH of it (else a share of the few milliseconds watched is no
    story), and each that named a phase (which was watched enough to be named)."""
    found = waiting_part(split) if coverage >= WATCHED_ENOUGH else None
    parts = [found[0]] if found and found[1] >= FINDING_SHARE else []
    if found and split["redo"] / sum(split.values()) >= FINDING_SHARE:
        parts.append("redo")
    return parts + [p for p in (*WAITS, "redo") if p not in parts and any(ph["verdict"] == BOUND[p] for ph in phases)]


def replica_findings(rec: Recording, told: dict) -> list[str]:
    """The lag and where it grew (replica_lag.py), then what the applier waited for
    (finding_parts): from the counters, not the summary's rounded milliseconds."""
    if not told.get("replica"):
        return []
    totals = applier_totals(rec)
    split = time_split(totals)
    out = lag_finding(told["replica"])  # what happened first: the lag, and where it grew
    for part in finding_parts(split, told["replica"]["phases"], told["replica"]["applier"]["coverage"]):
        watched, busy = sum(split.values()) / 1e9, totals["applier_ns"] / 1e9
        of = (f"of {duration(busy)} busy" if watched >= busy
              else f"of the {duration(watched)} watched whole, of {duration(busy)} busy")
        named = heaviest_latch_words(told["replica"]["applier"]["latches"]) if part == "latch" else ""
        out.append(f"The replica's applier spent {percent(split[part] / sum(split.values()))} of its time "
                   f"{DOING[part]} ({duration(split[part] / 1e9)} {of}, in {count(totals['applier_events'])} events): "
                   f"{WHY[part]}{named}")
    return out


# --- the section ---------------------------------------------------------------------

def figures(rec: Recording, summary: dict | None) -> dict:
    """summary: replica.replica_summary's, told with phase_detail (the summary makes it)."""
    return {"replica": summary}


def findings(rec: Recording, told: dict) -> list[str]:
    return replica_findings(rec, told)


def shown(rec: Recording) -> dict:
    """What its lines show beyond the summary's figures: how much of the time its probe was
    attached, and whether the report is of a window (its threads are the whole recording's)."""
    return {"sampled": sampled_note(rec, "applier_event"), "window": bool(rec.window)}


def text_lines(told: dict, drawn: dict, found: list[str]) -> list[str]:
    return replica_lines(told, drawn) + finding_lines(found)
