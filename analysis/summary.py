"""The summary of one recording: the numbers `report --json` prints and the findings, in
plain words, that the views (text, HTML, export, diff) show. The recording's own facts
(what, when, how it ended) are recording_facts'; the rest is the sections' (analysis/
sections/), each giving its figures and its findings, in their one order. Rendering lives
elsewhere, below this module: the renderers are given what it makes (views.py joins them).

Three sections' figures are made here and handed to them (HANDED): the purge story, the redo
summary and the replica's, each composed of figure modules that stand on other figure
modules (purge_history and phase_figures; redo over cost; replica over applier_counts,
phases ...). Imported by the section, they would set it, this module and every view above
it a floor higher (scripts/import_floors.py)."""
from __future__ import annotations

from .advice import advise
from .phase_figures import phase_list
from .purge_history import purge_table, story_of
from .recording import Recording
from .recording_facts import ended_by, header_facts, warnings
from .redo import redo_summary
from .replica import replica_summary
from .report_parts import Report, with_findings
from .sections import block_locks, cost, latches, purge, redo_flushing, replica, undo, version_walks
from .window import trigger_words

# The sections in the one order the JSON, the text, the HTML, the findings and the checker follow.
SECTIONS = (purge, version_walks, undo, block_locks, latches, redo_flushing, replica, cost)


def purge_story(rec: Recording) -> dict:
    """The purge section's story: the per-interval table (purge_history.purge_table) cut into
    phases (phase_figures.phase_list), told by purge_history.story_of; the watch's child
    process (purge_phases.py) reads its phases alone."""
    table = purge_table(rec)
    return story_of(rec, table, phase_list(table, rec.probe_attached("purge_batch")))


def replica_figures(rec: Recording) -> dict | None:
    """The replica's figures, its phases told in its section's words (sections/replica.phase_detail)."""
    return replica_summary(rec, replica.phase_detail)


# The figures a section is handed (its figures(rec, handed)) rather than makes from the recording.
HANDED = {purge: purge_story, redo_flushing: redo_summary, replica: replica_figures}


def told_order() -> list:
    """The sections as the text and the findings tell them: the leading ones first."""
    return sorted(SECTIONS, key=lambda s: not getattr(s, "LEADS", False))


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
    for section in SECTIONS:  # in order: a section's figures are made when it is reached
        handed = [HANDED[section](rec)] if section in HANDED else []
        told.update(section.figures(rec, *handed))
    return told


def section_findings(rec: Recording, told: dict) -> list[tuple]:
    """(section, its findings) in the order the report tells them, read from the figures."""
    return [(section, section.findings(rec, told)) for section in told_order()]


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
