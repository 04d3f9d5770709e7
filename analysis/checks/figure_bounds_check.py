"""Figures within their whole, anywhere a report says them (verdict_check.check runs it):
no duration, share or rate below 0, no share above its whole, and no busy time above the
time the threads had. A figure out of these bounds is never a measurement: it is an
interval's counters misread (an event in progress whose probes were detached once made a
replica's phase 'busy -62767 µs of 3.0 s (-2%)').

The only signed figures are the moves of a level over time: the history's (`history A →
B ... (-R/s)`, its growth and trend), and moments (a read view's `opened_s`, negative
when it opened before the recording); they are left out by name, as are an estimate's
measured errors (`estimated.errors`: -0.65 is 65% low). A level against a point
it may pass ('114% of the async flush point': the checkpoint age beyond where the page
cleaners flush furiously) is no share of a whole."""
from __future__ import annotations

import re

from .check_numbers import TOLERANCE

CHECKED = ("purge", "replica")  # the sections of report --json whose figures the verdict says
# figures that are a level's move, signed by nature
SIGNED = {"per_s", "growth_per_s", "recent_growth_per_s", "trend", "opened_s"}
UNSIGNED_NUMBER = r"\d[\d,]*(?:\.\d+)?"
NEGATIVE_DURATION = re.compile(rf"(?<![\w.,])-{UNSIGNED_NUMBER} (?:s|ms|µs|ns)\b")
NEGATIVE_PERCENT = re.compile(rf"(?<![\w.,])-{UNSIGNED_NUMBER}%")
PERCENT = re.compile(rf"(?<![\w.,+-])({UNSIGNED_NUMBER})%")
# a level against a threshold; the words may wrap (the advice's quoted findings do) before "point"
OF_A_POINT = re.compile(r"\s+of\s+(?:the|its)\s+[\w\s]{0,60}?point\b")


def walk(value, path: str = ""):
    """(path, number) for every number in a JSON document."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from walk(item, f"{path}[{i}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, float(value)


def is_share(path: str) -> bool:
    leaf = path.rsplit(".", 1)[-1]
    return "share" in leaf or ".shares." in path


def json_problems(told: dict) -> list[str]:
    """In the sections the verdict and the findings are told from (purge, replica):
    negative figures but the signed moves, shares outside 0..1 (percentages outside
    0..100), and a phase's busy time above its threads' time."""
    problems = []
    for path, x in walk({k: told.get(k) for k in CHECKED}):
        leaf = path.rsplit(".", 1)[-1]
        if leaf in SIGNED or ".errors." in path:
            continue
        if x < -TOLERANCE:
            problems.append(f"report --json: {path} is {x:g}, below 0")
        elif (is_share(path) and x > 1 + 1e-6) or (leaf.endswith("_pct") and x > 100 + 1e-6):
            problems.append(f"report --json: {path} is {x:g}, above its whole")
    for i, p in enumerate((told.get("replica") or {}).get("phases", [])):
        f = p["figures"]
        if f["busy_s"] > f["capacity_s"] * (1 + 1e-6) + TOLERANCE:
            problems.append(f"report --json: replica.phases[{i}] busy {f['busy_s']:g} s of its threads' "
                            f"{f['capacity_s']:g} s")
    return problems


def words_problems(text: str, where: str) -> list[str]:
    """A negative duration or percentage, or a percentage above 100, in a report's words."""
    found = [f"{where} says '{m.group(0)}': below 0" for m in NEGATIVE_DURATION.finditer(text)]
    found += [f"{where} says '{m.group(0)}': below 0" for m in NEGATIVE_PERCENT.finditer(text)]
    found += [f"{where} says '{m.group(0)}': above its whole" for m in PERCENT.finditer(text)
              if float(m.group(1).replace(",", "")) > 100 and not OF_A_POINT.match(text, m.end())]
    return found


def visible(html: str) -> str:
    """The page's words: without its scripts, styles and framed documents (plotly's code
    and the flame graphs' carry numbers of their own), nor its tags."""
    # '<tag ... </tag>' as '.*?' would match it, the text up to the first closing tag, but
    # taken a run of text without '<' at a time: '.*?' tried each of plotly's 4.5 MB of
    # code a character at a time (0.09 s of CPU a page, this 0.01 s)
    text = re.sub(r"<(script|style)\b[^<]*(?:<(?!/\1>)[^<]*)*</\1>", " ", html, flags=re.I)
    text = re.sub(r"<iframe\b[^<]*(?:<(?!/iframe>)[^<]*)*</iframe>", " ", text, flags=re.I)
    return re.sub(r"<[^>]+>", " ", text)


def problems(told: dict, text: str, html: str) -> list[str]:
    return (json_problems(told) + words_problems(text, "the text report")
            + words_problems(visible(html), "the HTML report"))
