"""Whether a report contradicts the recording it summarizes: the checker of the verdict and
the findings, for the tests and for anyone who doubts a report.

    from innostall.analysis.checks.verdict_check import check, contradictions, read
    check("path/to/recording")  # [] when the report holds; else one line per contradiction
    said = read("path/to/recording")  # the same in two steps, for a caller that also reads
    contradictions(said)              # the summary, text or page the check read

What it checks, on `report --json`'s summary and the per-interval table (purge_history.purge_table):
- the phases tile the recording, and each verdict has a reason in its own rows (a pinned
  phase has a pinned interval, a catch-up's history fell, a fall's rose ...), and "not
  recorded" stands exactly where purge's probe was not attached;
- each phase's and each short event's figures, recomputed over its own span, its end
  included (so a figure of the last few intervals passing for the phase's is caught);
- each sentence, read back clause by clause: every claim ('history A → B over S s (R/s)',
  'no purge batch ran', 'the view held P of H', '12 of 19 intervals' ...) against the rows
  of the span it speaks of, and no number left over that no claim accounts for;
- the findings' figures against the tables they come from, and the block they name as the
  latch table names it;
- the text and the HTML report carrying the very sentences JSON has, and the notes under
  the verdict (no sentence carries a probe to add);
- the replica section, its phases and its finding (replica_check.py);
- no duration, share or rate below 0 or above its whole, in JSON, text or HTML
  (figure_bounds_check.py).
It recomputes what it checks on its own rather than calling the words' code, so a rule or a
sentence drifting from the table is caught, not repeated."""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

import pandas as pd
from markupsafe import escape

from . import figure_bounds_check, replica_check
from .advice_check import advice_problems
from .check_numbers import NUMBER, TOLERANCE, inside, said, same, shown
from .finding_check import finding_problems, server_state
from ..html import render_html
from ..wording.phases import BATCHES_WHOLE, EVENTS_SHOWN, view_words
from ..phases import PINNED_SHARE, VERDICTS
from ..pinning import BACKLOG_MIN
from ..purge_history import purge_table
from ..interval_columns import WATCHED_ENOUGH
from ..purge_time import rows_bound, rows_watched_enough, split_watched
from ..recording import Recording, load
from ..summary import advised, report, with_findings
from ..text import text_of
from ..wording.phase_list import shown_phases

__all__ = ["check", "contradictions", "read", "server_state"]

EVENT = re.compile(rf"^at ({NUMBER})–({NUMBER}) s (.*)$")
LEVEL_WORDS = rf"no history\b|history at most|history (?:peaking at )?about|with {NUMBER} transactions of history"


@dataclass(frozen=True)
class ReportRead:
    """A recording's report as its three views say it, each made once: the summary (as
    summary(rec) makes it, and as `report --json` prints it), the text and the HTML page."""
    rec: Recording
    summed: dict  # summary(rec)
    told: dict  # what --json prints: summed through JSON (NaN refused)
    text: str
    html: str
    json_error: str | None  # why summed is not valid JSON, or None


def read(recording_dir: str) -> ReportRead:
    """The report of a recording, read once for all three views: summary(rec) and the text
    and HTML reports of views.py would each read the figures and findings again (a third of
    a second each)."""
    rec = load(recording_dir)
    shown = report(rec)
    summed = advised(with_findings(shown.told, shown.found), rec.meta)  # summary(rec)
    try:
        told, error = json.loads(json.dumps(summed, allow_nan=False)), None
    except ValueError as e:
        told, error = summed, str(e)
    return ReportRead(rec, summed, told, text_of(shown), render_html(rec, summed), error)


def check(recording_dir: str) -> list[str]:
    """Every contradiction between the report of a recording (JSON, text and HTML) and its
    tables, one line each; an empty list when there is none."""
    return contradictions(read(recording_dir))


def contradictions(read_back: ReportRead) -> list[str]:
    """check() of a report already read."""
    rec, told, text, html = read_back.rec, read_back.told, read_back.text, read_back.html
    problems = [f"report --json is not valid JSON: {read_back.json_error}"] if read_back.json_error else []
    state = server_state(rec)
    table = at_snapshots(purge_table(rec), state)
    phases = told["purge"]["phases"]
    problems += tiling(phases, table)
    recorded = rec.probe_attached("purge_batch")  # else nothing may be said of purge
    problems += [f"phase at {p['from_s']} s: {p['verdict']}, yet purge's probe was "
                 f"{'attached' if recorded else 'not attached'}" for p in phases
                 if (p["verdict"] == "not_recorded") == recorded
                 and not (p["verdict"] == "throttled" and not recorded)]
    for p in phases:
        where = f"phase {p['from_s']}–{p['to_s']} s ({p['verdict']})"
        problems += [f"{where}: {x}" for x in phase_problems(p, table)
                     + level_problems(rows_in(table, p["from_s"], p["to_s"]), state)]
    problems += finding_problems(told, rec) + replica_check.missing_finding(rec, told)
    problems += replica_check.problems(rec, told, text) + figure_bounds_check.problems(told, text, html)
    problems += [f"advice: {x}" for x in advice_problems(told, told["advice"])]
    return problems + view_problems(told, text, html)


# --- the tables, recomputed over a span ------------------------------------------------

def at_snapshots(table: pd.DataFrame, state: pd.DataFrame) -> pd.DataFrame:
    """The table with the history at each snapshot as the server itself read it (its
    server.history column, read here on its own) wherever it did: a move, and what a view
    held, are told at snapshots, so they must end where the server's reading ends. Where
    the server was not read, the probe's last reading stands."""
    if "history" not in state:
        return table
    own = state["history"].astype("float64").reindex(table.index)
    return table.assign(history_end=own.combine_first(table["history_end"]))


def level_problems(rows: pd.DataFrame, state: pd.DataFrame) -> list[str]:
    """An interval's level is its peak, the server's reading at its snapshot included: never
    below that reading."""
    if "history" not in state or rows.empty:
        return []
    own = state["history"].astype("float64").reindex(rows.index)
    below = rows.index[(rows["history"] < own).fillna(False).to_numpy(dtype=bool)]
    return [f"its level at {t:.3f} s is {shown(rows.at[t, 'history'])}, below the server's reading "
            f"{shown(own[t])}" for t in below]


def rows_in(table: pd.DataFrame, from_s: float, to_s: float) -> pd.DataFrame:
    return table[inside(table.index, from_s, to_s)]


def move(table: pd.DataFrame, rows: pd.DataFrame) -> dict | None:
    """The history at the span's start (the snapshot before it, or its first known one)
    and at its last known snapshot: what 'history A → B' must say."""
    ends = rows["history_end"].dropna()
    earlier = table.loc[table.index < rows.index[0], "history_end"] if len(rows) else ends
    if ends.empty:
        return None
    start = earlier.iloc[-1:] if len(earlier) and not math.isnan(earlier.iloc[-1]) else ends.iloc[:1]
    span = ends.index[-1] - start.index[0]
    if span <= 0:  # one reading tells no move
        return None
    return {"from": start.iloc[0], "to": ends.iloc[-1], "seconds": span,
            "per_s": (ends.iloc[-1] - start.iloc[0]) / span}


def holding(rows: pd.DataFrame) -> pd.Series | None:
    """The last row of a span at whose snapshot the oldest view pinned history."""
    pinned = rows[rows["pinned_end"] > 0]
    return pinned.iloc[-1] if len(pinned) else None


# the words after a count of batches where their probe was detached for part of the span
SEEN = rf" \(in the {NUMBER}% of its time they were watched\)"


def seen_said(words: str | None, truth: dict) -> bool:
    """A count of batches is followed by the share of the span they were watched exactly
    where it was not whole, and that share is the span's."""
    if words is None:
        return whole_batches(truth)
    return not whole_batches(truth) and said(re.search(NUMBER, words)[0], 100 * truth["batches_watched"])


def whole_batches(truth: dict) -> bool:
    """Every batch of the span was watched: none seen is none run."""
    return truth["batches_watched"] is None or truth["batches_watched"] >= BATCHES_WHOLE


def truths(table: pd.DataFrame, rows: pd.DataFrame, pinned_phase: bool) -> dict:
    """What a span's figures must be. A pinned phase's move is told up to the last interval
    the view held history (then what followed is named apart)."""
    length = rows["length_s"].sum()
    batches, empty, pages = (rows[c].sum() for c in ("purge_batches", "purge_empty_batches", "purge_pages"))
    held = holding(rows)
    known = rows["history"].dropna()
    found = rows_bound(rows)
    return {
        "seconds": length, "intervals": len(rows), "batches": batches, "empty_batches": empty,
        "pages": pages, "all_empty_intervals": rows["all_empty"].sum(),
        "pages_per_s": pages / length if length else 0.0, "batches_per_s": batches / length if length else 0.0,
        "pages_per_batch": pages / (batches - empty) if batches > empty else None,
        "dml_delays": rows["dml_delays"].sum(), "dml_delay_us": rows["dml_delay_us"].sum(),
        "log_room": wait_truth(rows, "log_room"), "page_writes": wait_truth(rows, "block_write"),
        "free_pages": wait_truth(rows, "free_page"),
        "levels": {"median": known.median(), "min": known.min(), "max": known.max()} if len(known) else None,
        "history": move(table, rows),
        "moved": move(table, rows.loc[:held.name] if pinned_phase and held is not None else rows),
        "held": held, "bound": {"part": found[0], "share": found[1]} if found else None,
        "split_watched": split_watched(rows), "watched_enough": rows_watched_enough(rows),
        # the share of the span the batches' probe was attached; whole where it never detaches
        "batches_watched": (min(1.0, rows["batch_watched_ns"].sum() / (length * 1e9)) if length else 0.0)
        if "batch_watched_ns" in rows else None}


# --- the phases ------------------------------------------------------------------------

def tiling(phases: list[dict], table: pd.DataFrame) -> list[str]:
    if table.empty:
        return [] if not phases else ["phases of a recording without intervals"]
    problems = [f"unknown verdict {p['verdict']}" for p in phases if p["verdict"] not in VERDICTS]
    bounds = [0.0] + [p["to_s"] for p in phases]
    if [p["from_s"] for p in phases] != bounds[:-1]:
        problems.append("the phases do not follow one another without gaps or overlaps")
    if not phases or abs(bounds[-1] - table.index[-1]) > TOLERANCE:
        problems.append(f"the phases end at {bounds[-1]} s, the recording at {table.index[-1]:.3f} s")
    return problems


def phase_problems(p: dict, table: pd.DataFrame) -> list[str]:
    rows = rows_in(table, p["from_s"], p["to_s"])
    truth = truths(table, rows, p["verdict"] == "pinned")
    problems = figure_problems(p["figures"], truth, rows) + reason_problems(p["verdict"], truth, rows)
    for e in p["events"]:
        inside = p["from_s"] <= e["from_s"] < e["to_s"] <= p["to_s"]
        problems += [] if inside else [f"event {e['from_s']}–{e['to_s']} s lies outside the phase"]
        e_rows = rows_in(table, e["from_s"], e["to_s"])
        e_truth = truths(table, e_rows, False)
        problems += [f"event at {e['from_s']} s: {x}" for x in figure_problems(e["figures"], e_truth, e_rows)
                     + reason_problems(e["verdict"], e_truth, e_rows)]
    return problems + sentence_problems(p, table, rows, truth)


def reason_problems(verdict: str, truth: dict, rows: pd.DataFrame) -> list[str]:
    """A verdict with nothing in its rows to stand on."""
    history = rows["history"]
    pinned = (rows["all_empty"] & ~(history <= BACKLOG_MIN)) | (
        (history > BACKLOG_MIN) & (rows["pinned"] >= PINNED_SHARE * history))
    reasons = {"pinned": pinned.any(), "throttled": truth["dml_delays"] > 0,
               "catching_up": truth["pages"] > 0 and (not truth["history"] or truth["history"]["to"]
                                                      < truth["history"]["from"]),
               "falling_behind": bool(truth["history"]) and truth["history"]["to"] > truth["history"]["from"]}
    return [] if reasons.get(verdict, True) else [f"nothing in its intervals makes it {verdict}"]


def wait_truth(rows: pd.DataFrame, prefix: str) -> dict:
    """One kind of wait for flushing over the rows, from its counters and, for those still
    waiting, the last row's gauges."""
    last = len(rows) > 0
    return {"waits": rows[f"{prefix}_waits"].sum(), "wait_s": rows[f"{prefix}_wait_ns"].sum() / 1e9,
            "open_at_end": rows[f"{prefix}_waits_open"].iloc[-1] if last else 0,
            "open_s": rows[f"{prefix}_wait_open_ns"].iloc[-1] / 1e9 if last else 0.0}


def figure_problems(figures: dict, truth: dict, rows: pd.DataFrame) -> list[str]:
    """The JSON figures of a span against the table's."""
    problems = []
    for name in ("seconds", "intervals", "batches", "empty_batches", "pages", "all_empty_intervals",
                 "pages_per_s", "batches_per_s", "pages_per_batch", "dml_delays", "dml_delay_us",
                 *(["split_watched"] if "split_watched" in figures else []),
                 *(["batches_watched"] if "batches_watched" in figures else [])):
        if not same(figures[name], truth[name]):
            problems.append(f"{name} is {figures[name]}, its intervals say {shown(truth[name])}")
    for name, real in [("levels", truth["levels"]), ("history", truth["history"]), ("bound", truth["bound"]),
                       ("log_room", truth["log_room"]),
                       *([("page_writes", truth["page_writes"])] if "page_writes" in figures else []),
                       *([("free_pages", truth["free_pages"])] if "free_pages" in figures else []),
                       *([("pinned_history", truth["moved"])] if "pinned_history" in figures else [])]:
        told = figures[name]
        if (told is None) != (real is None) or (told and not all(same(told[k], real[k]) for k in real)):
            problems.append(f"{name} is {told}, its intervals say {shown(real)}")
    held, real = figures["held"], truth["held"]
    if (held is None) != (real is None) or (held and not (
            same(held["at_s"], real.name) and same(held["history"], real["history_end"])
            and 0 <= held["pinned"] <= held["history"])):
        problems.append(f"held is {held}, its intervals say the view last held "
                        f"{None if real is None else (real.name, real['pinned_end'], real['history_end'])}")
    seen = set(zip(rows["view_tid"], rows["view_opened_s"]))
    problems += [f"names thread {v['tid']}, not the oldest view in any of its intervals"
                 for v in figures.get("views", []) if not any(
                     same(v["opened_s"], o) and v["tid"] == (None if t is None else int(t)) for t, o in seen)]
    return problems


# --- the sentences ---------------------------------------------------------------------

def claims(truth: dict, rows: pd.DataFrame, phase: dict, events: list[dict]) -> list[tuple]:
    """(pattern, test of its match) for every claim a verdict sentence makes."""
    m, lv, held = truth["moved"], truth["levels"] or {}, truth["held"]
    views = list(zip(rows.index, zip(rows["view_tid"], rows["view_opened_s"])))

    def view_at(text: str):
        """The oldest view of the one snapshot at the time printed, to its precision."""
        found = [view for t, view in views if said(text, t)]
        return found[0] if len(found) == 1 else None
    return [
        (rf"history ({NUMBER}) → ({NUMBER}) over ({NUMBER}) s(?: \(({NUMBER})/s\))?",
         lambda g: m is not None and said(g[0], m["from"]) and said(g[1], m["to"]) and said(g[2], m["seconds"])
         and g[3] is not None and said(g[3], m["per_s"])),
        (rf"history (peaking at )?about ({NUMBER}) \(({NUMBER})–({NUMBER})\)",
         lambda g: all(said(x, lv.get(k)) for x, k in zip(g[1:], ("median", "min", "max")))
         and (g[0] is not None) == bool(((rows["history_reads"] > 0) & rows["history"].notna()).any())),
        (rf"(?:history at most|with) ({NUMBER})(?: transactions of history)?", lambda g: said(g[0], lv.get("max"))),
        (r"no history\b", lambda g: lv.get("max") == 0),
        (rf"read in ({NUMBER}) of ({NUMBER}) intervals",
         lambda g: said(g[0], len(rows["history"].dropna())) and said(g[1], len(rows))),
        (rf"(?:at (its end|{NUMBER} s) )?(?:the view held ({NUMBER}) of ({NUMBER}) transactions of history"
         rf"|({NUMBER}) of ({NUMBER}) transactions of history were pinned)",
         lambda g: held is not None and said(g[1] or g[3], held["pinned_end"]) and said(g[2] or g[4], held["history_end"])
         and (g[0] is None or (held.name == rows.index[-1] if g[0] == "its end" else said(g[0][:-2], held.name)))),
        (rf"the view closed between ({NUMBER}) and ({NUMBER}) s",
         lambda g: (view_at(g[0]) or (None, None))[1] is not None and view_at(g[1]) is not None
         and view_at(g[0]) != view_at(g[1])),
        (rf"every purge batch found nothing to purge(?! in)({SEEN})?",
         lambda g: truth["batches"] > 0 and truth["empty_batches"] >= truth["batches"] and not truth["pages"]
         and seen_said(g[0], truth)),
        (rf"found nothing to purge in ({NUMBER}) of ({NUMBER}) intervals",
         lambda g: said(g[0], truth["all_empty_intervals"]) and said(g[1], truth["intervals"])),
        (rf"({NUMBER}) purge batches found nothing to purge(?! in)({SEEN})?",
         lambda g: said(g[0], truth["batches"]) and not truth["pages"] and seen_said(g[1], truth)),
        (r"no purge batch ran", lambda g: truth["batches"] == 0 and whole_batches(truth)),
        (rf"no purge batch was seen in the ({NUMBER})% of its time they were watched",
         lambda g: truth["batches"] == 0 and not whole_batches(truth) and said(g[0], 100 * truth["batches_watched"])),
        (r"nothing for purge to do", lambda g: truth["pages"] == 0),
        (rf"({NUMBER}) undo pages in ({NUMBER}) batches({SEEN})?",
         lambda g: said(g[0], truth["pages"]) and said(g[1], truth["batches"]) and seen_said(g[2], truth)),
        (rf"({NUMBER}) batches/s({SEEN})?", lambda g: said(g[0], truth["batches_per_s"]) and seen_said(g[1], truth)),
        (rf"({NUMBER}) pages/s", lambda g: said(g[0], truth["pages_per_s"])),
        (rf"\(({NUMBER}) per batch\)|({NUMBER}) pages per batch",
         lambda g: said(g[0] or g[1], truth["pages_per_batch"])),
        (rf"DML delayed ({NUMBER}) µs × ({NUMBER}) row operations",
         lambda g: said(g[0], truth["dml_delay_us"] / max(1, truth["dml_delays"])) and said(g[1], truth["dml_delays"])),
        (rf"DML delayed ({NUMBER}) row operations", lambda g: said(g[0], truth["dml_delays"])),
        (rf"purge's time was watched ({NUMBER})% of it, too little to say where it went",
         lambda g: truth["split_watched"] is not None and truth["split_watched"] < WATCHED_ENOUGH
         and said(g[0], 100 * truth["split_watched"])),
        (rf"(CPU-bound|I/O-bound|latch-bound|off CPU) \(({NUMBER})% of batch time",
         lambda g: truth["bound"] is not None and said(g[1], 100 * truth["bound"]["share"])
         and truth["watched_enough"]
         and g[0] == {"cpu": "CPU-bound", "io": "I/O-bound", "latch": "latch-bound",
                      "other": "off CPU"}[truth["bound"]["part"]]),
        # after it: a bound named from a sample spread over the phase says how much was watched
        (rf", of the ({NUMBER})% of it watched\)",
         lambda g: truth["split_watched"] is not None and truth["split_watched"] < WATCHED_ENOUGH
         and said(g[0], 100 * truth["split_watched"])),
        # before the waits they follow, which would take the words they are told by
        (rf"(?<=make room, )({NUMBER}) still waiting at its end \(({NUMBER}) s so far\)",
         lambda g: said(g[0], truth["log_room"]["open_at_end"]) and said(g[1], truth["log_room"]["open_s"])),
        (rf"(?<=written to disk, )({NUMBER}) still waiting at its end \(({NUMBER}) s so far\)",
         lambda g: said(g[0], truth["page_writes"]["open_at_end"]) and said(g[1], truth["page_writes"]["open_s"])),
        (rf"(?<=for a free page, )({NUMBER}) still waiting at its end \(({NUMBER}) s so far\)",
         lambda g: said(g[0], truth["free_pages"]["open_at_end"]) and said(g[1], truth["free_pages"]["open_s"])),
        (rf"writers waited ({NUMBER}) s in ({NUMBER}) waits for the log to make room",
         lambda g: said(g[0], truth["log_room"]["wait_s"]) and said(g[1], truth["log_room"]["waits"])),
        (rf"threads waited ({NUMBER}) s in ({NUMBER}) waits on pages being written to disk",
         lambda g: said(g[0], truth["page_writes"]["wait_s"]) and said(g[1], truth["page_writes"]["waits"])),
        (rf"threads waited ({NUMBER}) s in ({NUMBER}) waits for a free page",
         lambda g: said(g[0], truth["free_pages"]["wait_s"]) and said(g[1], truth["free_pages"]["waits"])),
        (rf"\(and ({NUMBER}) views before\)", lambda g: said(g[0], phase["figures"]["views_before"])),
        (rf"and ({NUMBER}) more short events", lambda g: said(g[0], len(events) - EVENTS_SHOWN)),
    ]


def sentence_problems(p: dict, table: pd.DataFrame, rows: pd.DataFrame, truth: dict) -> list[str]:
    """Each clause of the phase's sentence against the rows it speaks of: the phase's, or
    a short event's ('at 28.0–29.0 s ...')."""
    text, problems = p["detail"], []
    for v in p["figures"]["views"]:
        words = view_words(v)
        problems += [] if words in text else [f"names {v['tid']} in words not its own"]
        text = text.replace(words, "VIEW", 1)  # one view each: a connection's next view reads the same
    for clause in text.split("; "):
        found = EVENT.match(clause)
        span_rows, span_truth, span = rows, truth, p
        if found:
            span = next((e for e in p["events"] if said(found[1], e["from_s"]) and said(found[2], e["to_s"])), None)
            if span is None:
                problems.append(f"'{clause}' names no event of the phase")
                continue
            span_rows = rows_in(table, span["from_s"], span["to_s"])
            span_truth, clause = truths(table, span_rows, False), found[3]
        unread = span_rows["history"].isna().sum()
        if unread and re.search(LEVEL_WORDS, clause) and "read in " not in clause:
            problems.append(f"'{clause}' gives the history's level, not saying it was unknown "
                            f"in {unread} of its {len(span_rows)} intervals")
        for pattern, holds in claims(span_truth, span_rows, p, p["events"]):
            for match in re.finditer(pattern, clause):
                if not holds(match.groups()):
                    problems.append(f"says '{match.group(0)}': its intervals say otherwise")
            clause = re.sub(pattern, "·", clause)
        problems += [f"says {n} that no claim accounts for, in '{clause}'" for n in re.findall(NUMBER, clause)]
    return problems


# --- the views ------------------------------------------------------------------------

def view_problems(told: dict, text: str, html: str) -> list[str]:
    """The text and HTML reports say what JSON says, in the same words."""
    phases, findings = shown_phases(told["purge"]["phases"]), told["findings"]
    lines = text.splitlines()
    problems = [f"the text report lacks the phase at {p['from_s']} s as JSON words it" for p in phases
                if not any(line.endswith(f" s  {p['detail']}") for line in lines)]
    problems += [f"the HTML report lacks the phase at {p['from_s']} s as JSON words it" for p in phases
                 if str(escape(p["detail"])) not in html]
    in_text = [line.split("finding: ", 1)[1] for line in lines if line.startswith("  finding: ")]
    if in_text != findings:
        problems.append(f"the text report's findings {in_text} are not JSON's {findings}")
    problems += [f"the HTML report lacks the finding '{f}'" for f in findings if str(escape(f)) not in html]
    for note in told["purge"].get("notes", []):  # how to learn more: under the verdict, never in a sentence
        problems += [] if f"  note: {note}" in lines else [f"the text report lacks the note '{note}'"]
        problems += [] if str(escape(note)) in html else [f"the HTML report lacks the note '{note}'"]
    problems += [f"the phase at {p['from_s']} s carries a probe to add in its sentence, not in a note"
                 for p in told["purge"]["phases"] if "--probes" in p["detail"]]
    return problems
