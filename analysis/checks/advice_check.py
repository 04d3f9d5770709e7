"""The advice read back against the report, as verdict_check reads the verdict: it makes no
claim of its own. Each piece of evidence is one of the report's sentences (a phase's words
or a finding) verbatim, and every figure an expected effect or a 'would not help' gives is
printed in its evidence or the report's sentences, as printed there."""
from __future__ import annotations

import re

from ..wording.numbers import count, duration, seconds

# a figure as the words print it: 41,477 · +2,440/s · 6.0 s · 258 ms · 75%
FIGURE = re.compile(r"[+-]?\d[\d,]*(?:\.\d+)?(?:/s| s\b| ms\b| µs\b|%)?")
UNCHECKED = re.compile(r"\b\d+\.\d+–\d+\.\d+ s\b")  # spans are the phases' own bounds, checked apart


def sentences(summary: dict) -> list[str]:
    """Every sentence the report says: purge's and the replica's phases and events, findings."""
    said = list(summary.get("findings") or [])
    for part in ("purge", "replica"):
        for phase in (summary.get(part) or {}).get("phases") or []:
            said.append(phase["detail"])
            said += [e.get("words", "") for e in phase.get("events", [])]
    return said


def printed(summary) -> set[str]:
    """Every number of the summary as the words print it (a count; seconds and milliseconds
    by the key's unit): a figure the advice takes from the summary rather than from a
    sentence is one the recording computed (and verdict_check holds those to the intervals)."""
    out: set[str] = set()
    stack = [("", summary)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict):
            stack += list(value.items())
        elif isinstance(value, list):
            stack += [(key, v) for v in value]
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if float(value).is_integer():
                out.add(count(value))
            if key.endswith("_ms"):
                out |= {f"{value:.0f} ms", duration(value / 1e3)}
            elif key.endswith("_s") or key == "seconds" or "_s_" in key:  # lag_s_max: seconds too
                out |= {seconds(value), duration(value)}
                if float(value).is_integer():  # the replica's lag, whole seconds: "at most 21 s"
                    out.add(f"{count(value)} s")
    return out


QUOTED = re.compile(r'"[^"]*"')  # a statement's text: its digits are no figures


def figures_in(text: str) -> set[str]:
    return {m.group(0).lstrip("+") for m in FIGURE.finditer(UNCHECKED.sub("", QUOTED.sub("", text)))}


def advice_problems(summary: dict, advice: dict) -> list[str]:
    """advice: as report --json gives it (the summary's "advice", or Advice.as_json())."""
    said = sentences(summary)
    known = set().union(*(figures_in(s) for s in said)) | {f.lstrip("+") for f in printed(summary)}
    spans = {f"{p['from_s']:.1f}–{p['to_s']:.1f} s" for part in ("purge", "replica")
             for p in (summary.get(part) or {}).get("phases") or []}
    problems = []
    for a in advice["actions"]:
        problems += [f"{a['key']}: its evidence '{e[:80]}' is not one of the report's sentences"
                     for e in a["evidence"] if e not in said]
        if not a["evidence"]:
            problems.append(f"{a['key']}: rests on no sentence of the report")
        problems += [f"{a['key']}: expects {f}, which the report does not say"
                     for f in figures_in(a["expected"]) - known]
    for n in advice["not_helping"]:
        why = UNCHECKED.sub(lambda m: "" if m.group(0) in spans else m.group(0), QUOTED.sub("", n["why"]))
        problems += [f"'{n['change']}': says {f}, which the report does not say" for f in figures_in(why) - known]
    return problems
