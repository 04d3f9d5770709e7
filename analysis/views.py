"""A recording's text report and HTML page in one call, as the CLI's `report` prints or
writes them: the summary made (summary.py), then rendered (text.py, html.py). The renderers
are given the summary, never make it, so they stand below it; this module joins the two."""
from __future__ import annotations

from . import summary as summaries, text
from .recording import Recording


def text_report(rec: Recording) -> str:
    """The text report of a recording (`report`): its Report, rendered."""
    return text.text_of(summaries.report(rec))


def html_report(rec: Recording) -> str:
    """The HTML page of a recording (`report --html`), as a string."""
    from . import html  # Jinja and plotly's script: only for a page, not the text's start
    return html.render_html(rec, summaries.summary(rec))


def write_html_report(rec: Recording, path: str) -> int:
    """The HTML page written to path (html.write_html: one line if it cannot be); its size."""
    from . import html
    return html.write_html(rec, summaries.summary(rec), path)
