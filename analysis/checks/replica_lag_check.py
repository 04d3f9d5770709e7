"""The replica's lag finding read back (replica_check.finding_claims holds it): the lag's
rise as the replica itself read it at each snapshot, summed here on its own; the phases the
finding names, each overlapping that rise, watched ones with their split and unwatched ones
as such; and the largest part of the watched ones' time, from their intervals' counters."""
from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from . import check_numbers as vc
from ..replica_time import BOUND, DOING, PARTS, UNSPLIT, UNWATCHED


LAG = "server.replica_lag_s"  # the replica's own reading of its lag, at each snapshot
LAG_GREW_MIN_S = 2  # a rise of the lag smaller than this is a replica keeping up


def lag_readings(rec) -> pd.Series:
    rows = rec.counters[rec.counters["name"] == LAG]
    return rows.groupby("t_s")["value"].last().sort_index()


def own_rise(rec) -> tuple | None:
    """(low, its time, peak, its time): the lag's rise to its first peak from the last
    lowest reading before it; None when it rose less than LAG_GREW_MIN_S."""
    lag = lag_readings(rec)
    if lag.empty:
        return None
    peak_t = lag.idxmax()
    before = lag[:peak_t]
    low_t = before[before == before.min()].index[-1]
    return None if lag[peak_t] - lag[low_t] < LAG_GREW_MIN_S else (lag[low_t], low_t, lag[peak_t], peak_t)


def span_list(text: str | None) -> list[tuple[float, float]]:
    return [] if not text else [tuple(float(x) for x in part.removesuffix(" s").split("–"))
                                for part in text.split(", ")]


def lag_finding_holds(rec, told: dict, g: tuple, phase_split: Callable[[dict], dict[str, float]],
                      lasted: Callable[[str, str, float], bool], margin: float) -> bool:
    """The lag's rise as the replica read it; the phases it names, each overlapping that
    rise, watched ones with their split and unwatched ones with theirs; the largest part of
    the watched ones' time (phase_split: a phase's parts in seconds from its intervals'
    counters, replica_check's), each duration as printed (lasted), within margin."""
    rise, replica = own_rise(rec), told.get("replica") or {}
    if rise is None or not all(vc.said(x, real) for x, real in zip(g[:4], rise)):
        return False
    phases = replica.get("phases", [])

    def phase_of(span: tuple[float, float]) -> dict | None:
        found = [p for p in phases if vc.said(f"{span[0]:.1f}", p["from_s"]) and vc.said(f"{span[1]:.1f}", p["to_s"])]
        inside = found and found[0]["from_s"] < rise[3] and found[0]["to_s"] > rise[1]
        return found[0] if inside else None
    watched, unwatched = [phase_of(s) for s in span_list(g[4])], [phase_of(s) for s in span_list(g[9])]
    if None in watched or None in unwatched or any(p["verdict"] not in BOUND.values() for p in watched) \
            or any(p["verdict"] not in (UNWATCHED, UNSPLIT) for p in unwatched):
        return False
    if not watched:
        return g[5] is None
    splits = [phase_split(p) for p in watched]
    parts = {part: sum(split[part] for split in splits) for part in PARTS}
    part = {words: name for name, words in DOING.items()}[g[5]]
    return parts[part] >= max(parts.values()) * (1 - margin) and lasted(g[6], g[7], parts[part]) \
        and lasted(g[8][0], g[8][1], sum(parts.values()))
