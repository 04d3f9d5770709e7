"""A verdict's phases as the reports list them. A long recording has thousands (an 8-hour
one 2,701), more than anyone reads, and the first thirty alone would hide a stall at hour
six. So a long list is cut to PHASES_SHOWN phases chosen to keep every kind of phase and the
longest ones, told in time order after a tally of all of them by verdict. The text and
HTML reports and their checkers take the same ones from here; the JSON lists every phase."""
from __future__ import annotations

from .numbers import seconds

PHASES_SHOWN = 30


def length(p: dict) -> float:
    return p["to_s"] - p["from_s"]


def shown_phases(phases: list[dict], limit: int = PHASES_SHOWN) -> list[dict]:
    """All the phases while they fit; past `limit`, each verdict's longest phase and the
    longest of the rest (the earlier of two as long), in time order."""
    if len(phases) <= limit:
        return phases
    by_verdict: dict[str, list[dict]] = {}
    for p in phases:
        by_verdict.setdefault(p["verdict"], []).append(p)
    chosen = [min(group, key=lambda p: (-length(p), p["from_s"])) for group in by_verdict.values()][:limit]
    picked = {id(p) for p in chosen}
    chosen += [p for p in sorted(phases, key=lambda p: (-length(p), p["from_s"]))
               if id(p) not in picked][:limit - len(chosen)]
    return sorted(chosen, key=lambda p: p["from_s"])


def tally(phases: list[dict], limit: int = PHASES_SHOWN) -> str | None:
    """'2,701 phases: pinned 900 (3,150 s), ...; the 30 shown are ...', or None while they
    all fit."""
    if len(phases) <= limit:
        return None
    by_verdict: dict[str, list[float]] = {}
    for p in phases:
        by_verdict.setdefault(p["verdict"], []).append(length(p))
    kinds = ", ".join(f"{verdict.replace('_', ' ')} {len(spans):,} ({seconds(sum(spans))})"
                      for verdict, spans in sorted(by_verdict.items(), key=lambda kv: (-len(kv[1]), kv[0])))
    return (f"{len(phases):,} phases: {kinds}; the {limit} shown are each verdict's longest and the longest "
            "of the rest, in time order (report --json lists them all)")


def phase_lines(phases: list[dict], limit: int = PHASES_SHOWN) -> list[str]:
    """One line per phase shown, after the tally when the list was cut."""
    said = tally(phases, limit)
    return ([f"  {said}"] if said else []) + [f"  {p['from_s']:7.1f} – {p['to_s']:7.1f} s  {p['detail']}"
                                              for p in shown_phases(phases, limit)]
