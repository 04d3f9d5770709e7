"""The replica's finding told from what happened: its lag, as the replica reported it, and
where it grew; then, of the phases in that span, the largest part of the applier's time
in the ones that were watched, and which were too little watched to say. A part's share
of a few milliseconds watched is no story, so the finding starts from the lag, which the
server itself read at every snapshot.

The figures (lag_rise) are the summary's (replica.lag_rise: `lag_rise`), the words
are made from them and the phases alone; replica_check.py re-derives both."""
from __future__ import annotations

from ..replica_time import BOUND, DOING, PARTS
from .numbers import count, duration


def overlapping(phases: list[dict], from_s: float, to_s: float) -> list[dict]:
    return [p for p in phases if p["from_s"] < to_s and p["to_s"] > from_s]


def watched_split(phases: list[dict]) -> dict[str, float] | None:
    """The watched parts' seconds summed over the phases named by a part (watched enough)."""
    named = [p for p in phases if p["verdict"] in BOUND.values() and p["figures"]["split_s"]]
    if not named:
        return None
    return {part: sum(p["figures"]["split_s"][part] for p in named) for part in PARTS}


def spans(phases: list[dict]) -> str:
    return ", ".join(f"{p['from_s']:.1f}–{p['to_s']:.1f} s" for p in phases)


def whole_words(unwatched: list[dict]) -> str:
    """', beyond 6.0 s waiting on row locks (their probe attached throughout)': the waits
    charged whole in phases too little watched for the rest."""
    whole: dict[str, float] = {}
    for p in unwatched:
        for part, s in (p["figures"].get("counted_whole_s") or {}).items():
            whole[part] = whole.get(part, 0.0) + s
    said = [f"{duration(s)} {DOING[part]}" for part, s in whole.items() if s > 0]
    return f", beyond {' and '.join(said)} (their probe attached throughout)" if said else ""


def lag_finding(replica: dict) -> list[str]:
    """'The replica fell behind: its lag grew from 0 s at 3.0 s to 23 s at 30.0 s. Of the
    applier's time watched whole in that span (0.0–11.0 s), the largest part was waiting on
    row locks (6.0 s of 6.4 s); 11.0–30.0 s was too little watched to say.'"""
    rise = replica.get("lag_rise")
    if not rise:
        return []
    phases = overlapping(replica["phases"], rise["from_s"], rise["to_s"])
    split = watched_split(phases)
    text = (f"The replica fell behind: its lag grew from {count(rise['from'])} s at {rise['from_s']:.1f} s to "
            f"{count(rise['to'])} s at {rise['to_s']:.1f} s.")
    named = [p for p in phases if p["verdict"] in BOUND.values() and p["figures"]["split_s"]]
    if split and sum(split.values()):
        part = max(PARTS, key=lambda p: split[p])
        text += (f" Of the applier's time watched whole in that span ({spans(named)}), the largest part was "
                 f"{DOING[part]} ({duration(split[part])} of {duration(sum(split.values()))})")
    unwatched = [p for p in phases if p["verdict"] in ("unwatched", "unsplit")]
    if unwatched:
        text += ("; " if split else " ") + f"{spans(unwatched)} {'was' if len(unwatched) == 1 else 'were'} " \
                "too little watched to say what held it back" + whole_words(unwatched)
    return [text + ("." if split or unwatched else "")]
