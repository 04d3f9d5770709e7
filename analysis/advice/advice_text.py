"""The advice as the terminal shows it: each action with what it rests on, what it should
change, its risk and how to undo it; then the common fixes that would not help here."""
from __future__ import annotations

import textwrap

from .action import Advice

WIDTH = 100
LABEL = 11  # the labels' column


def field(label: str, text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=f"     {label:<{LABEL}}",
                         subsequent_indent=" " * (5 + LABEL), break_on_hyphens=False) or [f"     {label}"]


def render_advice(advice: Advice) -> str:
    if not advice.actions and not advice.not_helping:
        return "What to change\n  nothing: no stall in this recording calls for a change"
    lines = ["What to change (ranked by the recording's time each would give back)"]
    for n, a in enumerate(advice.actions, start=1):
        lines += textwrap.wrap(a.change, WIDTH, initial_indent=f"  {n}. ", subsequent_indent="     ")
        for i, sentence in enumerate(a.evidence):
            lines += field("because" if i == 0 else "", sentence)
        lines += field("expect", a.expected) + field("risk", a.risk) + field("undo", a.undo)
        if a.apply_sql:
            lines += field("apply", f"{a.apply_sql}   (innostall verify tries it under your load)")
    if advice.not_helping:
        lines.append("Would not help here")
        for n in advice.not_helping:
            lines += textwrap.wrap(f"{n.change}: {n.why}", WIDTH, initial_indent="  - ", subsequent_indent="    ")
    return "\n".join(lines)
