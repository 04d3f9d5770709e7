"""How numbers and names are written in every view: one place, so the terminal, JSON and
HTML say the same figure the same way, and the verdict's checker (verdict_check) reads
them back with the precision they were printed at."""
from __future__ import annotations

from innostall.names import ARROW

ELLIPSIS = "…"
STATEMENT_SHOWN = 80  # characters of a view's statement in a sentence (all of it in JSON)


def count(n: float) -> str:
    """A whole count with thousands separated: '64,267'."""
    return f"{n:,.0f}"


def growth(n: float) -> str:
    """A rate whose direction is the point: '+2,921/s', '-5,300/s'."""
    return f"{n:+,.0f}/s"


def seconds(s: float) -> str:
    """An age or a span as people say it: '4.5 s', '42.0 s', '1,234 s'."""
    return f"{s:.1f} s" if abs(s) < 100 else f"{s:,.0f} s"


def at(t: float) -> str:
    """A moment of the recording: '28.0'."""
    return f"{t:.1f}"


def between(a: float, b: float) -> str:
    """Two moments, told apart: 'between 28.0 and 29.0 s', or 'between 9.000 and 9.050 s'
    for a final snapshot taken just after an interval's. Under a tenth of a second apart,
    a tenth would print 9.05 as 9.1, and its 9.0 would stand for either snapshot."""
    digits = 1 if abs(b - a) >= 0.1 else 3
    return f"between {a:.{digits}f} and {b:.{digits}f} s"


def latency(lat: dict) -> str:
    """A latency summary as every view writes it: 'p50 ~12 µs, p99 ~80 µs, max ≤ 127 µs'
    (max is its histogram slot's upper bound). A histogram with no events where its counter
    counted some (a damaged recording) says so."""
    if lat.get("p50") is None:
        return "unknown (no events in its histogram)"
    text = f"p50 ~{lat['p50']:.0f} µs, p99 ~{lat['p99']:.0f} µs"
    return text + (f", max ≤ {lat['max']} µs" if lat.get("max") is not None else "")


def shorten(text: str, width: int) -> str:
    """text in at most width characters, cut before a space and marked with '…'; whole
    when it fits. Never inside a word, nor inside a qualified name (MDL_map::find_or_insert,
    sbtest/sbtest1), which reads as one: a first word longer than width is kept whole and
    overflows. The full text is in JSON, and in the HTML title."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width - len(ELLIPSIS) + 1)
    if cut <= 0:
        cut = text.find(" ")
    return kept(text[:cut]) if cut > 0 else text


def kept(head: str) -> str:
    """The part of a name kept, marked as cut; an arrow left dangling at its end goes."""
    return head.rstrip().removesuffix(ARROW.rstrip()).rstrip() + ELLIPSIS


def duration(s: float) -> str:
    """A span of time at a precision that says something: '1.9 s', '23 ms', '40 µs'."""
    if s >= 1 or s == 0:
        return seconds(s)
    return f"{s * 1e3:.0f} ms" if s >= 1e-3 else f"{s * 1e6:.0f} µs"
