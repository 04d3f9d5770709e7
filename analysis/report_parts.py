"""What the text report is made of (Report: the summary's figures, each section's findings,
what each section's lines show, the header's facts) and the summary's shape with its
findings (with_findings): made by the summary (summary.report), rendered by the text
(text.text_of), which so never imports the summary and stands below it."""
from __future__ import annotations

from dataclasses import dataclass


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
