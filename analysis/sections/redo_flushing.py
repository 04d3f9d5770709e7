"""The redo and flushing section: the redo written and by whom, the checkpoint age against
the server's flush points, the buffer pool's dirty and free pages, the undo tablespaces, the
writers' waits for log room and free pages, the page cleaners' batches (figures:
redo.redo_summary, which the summary hands it), their findings and the section's text lines."""
from __future__ import annotations

from ..recording import Recording
from ..wording.redo_words import redo_lines
from ..wording.findings import (batch_findings, flush_findings, free_page_findings, log_room_findings,
                                purge_redo_findings)
from .lines import finding_lines

KEYS = ("redo", "checkpoint", "buffer_pool", "undo_space", "pages_dirtied", "flushing", "server_state")


def figures(rec: Recording, summary: dict) -> dict:
    """summary: redo.redo_summary's (the summary makes it)."""
    return summary


def findings(rec: Recording, told: dict) -> list[str]:
    return (purge_redo_findings(told) + flush_findings(told) + log_room_findings(told)
            + free_page_findings(told) + batch_findings(told))


def shown(rec: Recording) -> dict:
    return {}  # its lines are its figures


def text_lines(told: dict, drawn: dict, found: list[str]) -> list[str]:
    return redo_lines(told) + finding_lines(found)
