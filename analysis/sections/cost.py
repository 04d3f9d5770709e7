"""The cost section: the events lost (drops) and the probes' estimated cost against the
server's CPU, the cost governor's budget and what it sampled, innostall's own CPU (figures
under governor: analysis/cost.py), and the section's text lines."""
from __future__ import annotations

from ..cost import cost_summary, render_cost
from ..recording import Recording

KEYS = ("drops", "governor")


def figures(rec: Recording) -> dict:
    return {"drops": rec.counter_total("drops"), "governor": cost_summary(rec)}


def findings(rec: Recording, told: dict) -> list[str]:
    return []  # lost events are the version walks' finding: their table is the one they cut


def shown(rec: Recording) -> dict:
    return {}  # its lines are its figures


def text_lines(told: dict, drawn: dict, found: list[str]) -> list[str]:
    return render_cost(told["governor"])
