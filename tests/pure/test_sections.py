"""A report section is one module (analysis/sections/): its figures are its KEYS of the
summary, in the one order SECTIONS gives; its findings are in the summary's list, the
leading sections' first, and in its own text lines; its HTML is a partial the page includes."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REPO
from innostall.analysis import recording, summary, text
from innostall.analysis.summary import SECTIONS, told_order

STORED = sorted(p for p in (REPO / "tests" / "data").iterdir() if (p / "meta.json").exists())
FACTS = ("warnings", "server", "duration_s", "window", "trigger", "complete", "ended_by")
TEMPLATES = REPO / "analysis" / "templates"


@pytest.mark.parametrize("path", STORED[:3], ids=lambda p: Path(p).name)
def test_the_summary_is_the_facts_then_each_sections_keys_in_order(path):
    shown = summary.report(recording.load(str(path)))  # read once: the figures, findings, what is drawn
    sections = [k for k in shown.told if k not in FACTS]
    assert sections == [key for section in SECTIONS for key in section.KEYS]
    assert [section for section, _ in shown.found] == told_order()
    assert set(shown.drawn) == set(SECTIONS)
    everything = summary.with_findings(shown.told, shown.found)["findings"]
    assert everything == [f for _, texts in shown.found for f in texts]
    report = text.text_of(shown)
    assert all(f"  finding: {f}" in report for f in everything)  # each in its section's lines


def test_the_replica_leads_and_the_rest_keep_their_order():
    """On a replica its story comes first; the others are told in SECTIONS' order."""
    told = told_order()
    assert told[0].__name__.endswith(".replica")
    assert [s for s in told[1:]] == [s for s in SECTIONS if not s.__name__.endswith(".replica")]


def test_each_partial_is_a_sections_and_the_page_includes_it():
    page = (TEMPLATES / "report.html.j2").read_text()
    partials = sorted(p.stem.removesuffix(".html") for p in (TEMPLATES / "sections").glob("*.html.j2"))
    # the advice's partial too: it is read from the whole summary, after the sections
    names = {s.__name__.rsplit(".", 1)[1] for s in SECTIONS} | {"advice"}
    assert set(partials) <= names
    included = page + (TEMPLATES / "sections" / "purge.html.j2").read_text()  # redo is drawn under purge
    assert all(f'{{% include "sections/{p}.html.j2" %}}' in included for p in partials)
