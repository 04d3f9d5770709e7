"""The replica section: on a replica, its applier's events and time, the lag and its phases
(figures under replica: analysis/replica.py), the lag's and the applier's findings and the
section's text lines (wording/replica.py). On a replica its story leads the report."""
from __future__ import annotations

from ..cost import sampled_note
from ..recording import Recording
from ..replica import replica_summary
from ..wording.replica import phase_detail, replica_findings, replica_lines
from .lines import finding_lines

KEYS = ("replica",)
LEADS = True  # told first, in the text and the findings: the lag is what a replica's reader asks


def figures(rec: Recording) -> dict:
    return {"replica": replica_summary(rec, phase_detail)}


def findings(rec: Recording, told: dict) -> list[str]:
    return replica_findings(rec, told)


def shown(rec: Recording) -> dict:
    """What its lines show beyond the summary's figures: how much of the time its probe was
    attached, and whether the report is of a window (its threads are the whole recording's)."""
    return {"sampled": sampled_note(rec, "applier_event"), "window": bool(rec.window)}


def text_lines(told: dict, drawn: dict, found: list[str]) -> list[str]:
    return replica_lines(told, drawn) + finding_lines(found)
