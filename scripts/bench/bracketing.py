"""Bracketed comparisons: windows run base, traced, base, next traced, ..., base, and each
traced window is compared with the mean of the base windows either side of it, so that a
load drifting slowly over a phase cancels out of the ratio."""
from __future__ import annotations

import math
import statistics
from typing import Callable

from .settings import ROUNDS


def run_bracketed(out: list[dict], arms: tuple[str, ...], base_arm: str,
                  measure: Callable[[int, str], dict], rounds: int = ROUNDS) -> None:
    """Appends measure(round, arm) for base, arm, base, next arm, ... and a closing base, so
    that every traced window lies between two base ones; `out` keeps what was measured if
    a window raises."""
    for rnd in range(1, rounds + 1):
        for arm in arms:
            out.append(measure(rnd, base_arm))
            out.append(measure(rnd, arm))
    out.append(measure(rounds, base_arm))


def baseline(sides: list[dict], metrics: tuple[str, ...]) -> dict:
    """The untraced figures of a traced window: the mean of the untraced windows either side,
    so that a load drifting slowly over a phase cancels out of the ratio."""
    sides = [w for w in sides if w and "error" not in w]
    return {m: statistics.mean(w[m] for w in sides) for m in metrics
            if sides and all(w.get(m) is not None for w in sides)}


def bracketed_pairs(sequence: list[dict], base_arm: str,
                    metrics: tuple[str, ...]) -> dict[str, list[tuple[dict, dict]]]:
    """(baseline, traced) per traced arm, from windows that alternate base, traced, base, ...
    A failed traced window is skipped; a failed base window leaves the other side alone."""
    pairs: dict[str, list[tuple[dict, dict]]] = {}
    for i, w in enumerate(sequence):
        if w["arm"] == base_arm or "error" in w:
            continue
        sides = [sequence[j] for j in (i - 1, i + 1)
                 if 0 <= j < len(sequence) and sequence[j]["arm"] == base_arm]
        base = baseline(sides, metrics)
        if base:
            pairs.setdefault(w["arm"], []).append((base, w))
    return pairs


def ratio(a, b) -> float | None:
    return b / a if a and b is not None else None


def median_interval(values: list[float], confidence: float = 0.9) -> tuple[float, float] | None:
    """A distribution-free interval for the median: the k-th smallest and k-th largest
    value, with k the largest rank whose interval still covers the median with at least
    `confidence` (each value falls either side of the median with even odds, so the count
    below it is binomial). None when there are too few values for that confidence."""
    n, ordered = len(values), sorted(values)
    below = [math.comb(n, i) / 2 ** n for i in range(n + 1)]  # P(exactly i values below)
    best = None
    for k in range(1, n // 2 + 1):
        if 1 - 2 * sum(below[:k]) >= confidence:
            best = (ordered[k - 1], ordered[n - k])
    return best


def spread(values: list[float]) -> dict:
    """Every ratio, their median, min and max, and the median's 90% interval (median_interval)."""
    if not values:
        return {"ratios": [], "median": None, "min": None, "max": None, "pairs": 0,
                "median_90": None}
    interval = median_interval(values)
    return {"ratios": [round(v, 4) for v in values], "median": round(statistics.median(values), 4),
            "min": round(min(values), 4), "max": round(max(values), 4), "pairs": len(values),
            "median_90": [round(v, 4) for v in interval] if interval else None}


def compare(pairs: list[tuple[dict, dict]], metrics: tuple[str, ...]) -> dict:
    """Per metric, the ratio B/A of each pair that has both numbers."""
    out = {}
    for metric in metrics:
        values = [ratio(a.get(metric), b.get(metric)) for a, b in pairs]
        out[metric] = spread([v for v in values if v is not None])
    return out


def comparisons(sequence: list[dict], base_arm: str, arms: tuple[str, ...],
                metrics: tuple[str, ...]) -> dict:
    """{"ARM/BASE": compare(...)} for each traced arm, empty where it has no pair."""
    pairs = bracketed_pairs(sequence, base_arm, metrics)
    return {f"{arm}/{base_arm}": compare(pairs.get(arm, []), metrics) for arm in arms}
