"""The summary of one recording: the numbers `report --json` prints and the findings, in
plain words, that the views (text, HTML, export, diff) show. The recording's own facts
(what, when, how it ended) are here; the rest is the sections' (analysis/sections/), each
giving its figures and its findings, in their one order. Rendering lives elsewhere."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from innostall.format import writing
from innostall.format.journal_lines import MISSING_SEGMENTS

from .advice import advise
from .recording import Recording
from .sections import block_locks, cost, latches, purge, redo_flushing, replica, undo, version_walks
from .window import trigger_words

# The sections in the one order the JSON, the text, the HTML, the findings and the checker follow.
SECTIONS = (purge, version_walks, undo, block_locks, latches, redo_flushing, replica, cost)


def told_order() -> list:
    """The sections as the text and the findings tell them: the leading ones first."""
    return sorted(SECTIONS, key=lambda s: not getattr(s, "LEADS", False))


def longest_interval_s(rec: Recording) -> float:
    ends = pd.Series(sorted(rec.counters["t_s"].unique()))
    return float(ends.diff().fillna(ends).max()) if len(ends) else 0.0


def warnings(rec: Recording) -> list[str]:
    """What the reader should know before the figures: lines of the journal read around,
    and intervals the recorder fell behind on (their counts are whole, spread over more
    time)."""
    found = list(rec.warnings)
    longest, nominal = longest_interval_s(rec), float(rec.meta.get("interval_s") or 0)
    if nominal and longest > 2 * nominal + 0.5:
        why = ("a journal segment is missing (above)" if any(w.startswith(MISSING_SEGMENTS) for w in found)
               else "the recorder fell behind (stopped or starved)")
        found.append(f"one interval lasted {longest:.1f} s instead of {nominal:g} s: {why}; its counts "
                     "are whole, over that time")
    return found


def ended_by(rec: Recording) -> str:
    """How the recording ended, in the same words in every view. One whose meta.json is
    unfinished is still being written while its recorder holds it (innostall/format/writing.py)."""
    if rec.meta.get("end_reason"):
        return rec.meta["end_reason"]
    if not rec.meta.get("complete") and writing.in_progress(rec.path):
        return "still recording (this report reads it up to its last interval)"
    return "cut short (recorder killed)"


def measured(rec: Recording) -> dict:
    """The summary's figures, which the findings are read from: the recording's facts, then
    each section's, in the sections' order."""
    noted = warnings(rec)
    told = {**({"warnings": noted} if noted else {}),
            "server": rec.meta["target"],
            "duration_s": round(rec.duration_s, 3),
            **({"window": rec.window} if rec.window else {}),
            **({"trigger": trigger_words(rec.meta)} if trigger_words(rec.meta) else {}),
            "complete": bool(rec.meta.get("complete")),
            "ended_by": ended_by(rec)}
    for section in SECTIONS:
        told.update(section.figures(rec))
    return told


def section_findings(rec: Recording, told: dict) -> list[tuple]:
    """(section, its findings) in the order the report tells them, read from the figures."""
    return [(section, section.findings(rec, told)) for section in told_order()]


def with_findings(told: dict, found: list[tuple]) -> dict:
    """The summary: the figures and every section's findings, in one list."""
    return {**told, "findings": [text for _, texts in found for text in texts]}


@dataclass
class Report:
    """What the text report shows: the summary's figures (told), each section's findings in
    the told order (found), what each section's lines show beyond the figures (drawn, by
    section), and the recording's header (the facts meta.json keeps)."""
    told: dict
    found: list[tuple]
    drawn: dict
    header: dict


def header_facts(rec: Recording) -> dict:
    """The recording's own facts the header shows: where it is, its meta.json, its length
    unrounded, its window, its warnings and how it ended."""
    return {"path": rec.path, "meta": rec.meta, "duration_s": rec.duration_s, "window": rec.window,
            "warnings": warnings(rec), "ended_by": ended_by(rec)}


def report(rec: Recording) -> Report:
    """Everything the text renders, read from the recording once."""
    told = measured(rec)
    found = section_findings(rec, told)
    return Report(told, found, {section: section.shown(rec) for section in SECTIONS}, header_facts(rec))


def summary(rec: Recording) -> dict:
    """What `report --json` prints; its findings are the sentences every view shows, and last
    the advice read from them (analysis/advice/)."""
    told = measured(rec)
    return advised(with_findings(told, section_findings(rec, told)), rec.meta)


def advised(told: dict, meta: dict) -> dict:
    return {**told, "advice": advise(told, meta).as_json()}
