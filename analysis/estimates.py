"""What a sampled count stands for. A sampled group is attached at each interval's start
until it has spent its allowance (collector/loader/governor.c), so each interval says how
many events it saw in how much of its time: scaled by that share, interval by interval,
the seen count becomes an estimate of the whole. An interval watched for less than
MIN_SHARE of its time says too little to be scaled: it is taken at the rate of the watched
ones.

It is a floor, not the whole. The intervals the governor watches least are the busiest
(a group that overspent is kept detached until its debt is paid), and a burst that sets it
off is then missed whole; spans (a wait's time) count only when whole inside a window, so
the long ones are under-seen most. Against an --exact recording of the same moments
(scripts/bench/sampled_vs_exact.py, bench/results/2026-11-27/sampled-estimates.md) the
estimate came to 0.37-0.63 of the whole for latch waits and versions built, 0.11-0.40 for
undo records and page reads, and 0.00-0.05 for version walks (a scan's burst), where the
seen count was 0.2-10% of it. No interval around it is given: one built from the watched
intervals excluded the whole in 14 of 16 counts."""
from __future__ import annotations

import pandas as pd

from .cost import EXACT, coverage, group_of
from .recording import Recording
from .report_tables import interval_lengths
from .timeline import per_interval

MIN_SHARE = 0.02  # of an interval watched, below which it is not scaled on its own


def attached_share(rec: Recording, probe: str) -> pd.Series | None:
    """The share of each interval the probe's group was attached (index: interval end);
    None when it was never sampled."""
    group = group_of(rec, probe)
    name = f"governor.attached_ns.{group}"
    if not group or coverage(rec, probe) >= EXACT:
        return None
    attached = per_interval(rec, [name])[name]
    lengths = interval_lengths(attached.to_frame())
    return (attached / (lengths * 1e9)).clip(upper=1.0)[lengths.notna()]


def estimated_total(rec: Recording, names: list[str], probe: str) -> dict | None:
    """The whole of counters (their sum) that probe's group counted while attached,
    estimated interval by interval: {"seen", "estimated"}; None when the group was never
    sampled (the count is the whole) or never watched."""
    share = attached_share(rec, probe)
    return None if share is None else scaled_total(rec, names, share)


def scaled_total(rec: Recording, names: list[str], share: pd.Series) -> dict | None:
    """estimated_total for a group attached `share` of each interval (attached_share)."""
    seen = per_interval(rec, names).sum(axis=1).reindex(share.index, fill_value=0)
    lengths = interval_lengths(share.to_frame())
    watched = share >= MIN_SHARE
    if not watched.any():
        return None
    scaled = seen[watched] / share[watched]
    rate = scaled.sum() / lengths[watched].sum()
    unwatched = (rate * lengths[~watched]).combine(seen[~watched], max)
    return {"seen": float(seen.sum()), "estimated": float(scaled.sum() + unwatched.sum())}


def estimated_figures(rec: Recording, probe: str, figures: dict[str, tuple[list[str], float]]) -> dict | None:
    """A section's sampled figures, each estimated in the section's own unit: {figure:
    value} for figures {name: (counters, unit scale)}; None when the probe's group was never
    sampled (its figures are whole). The group's share of each interval is read once."""
    share = attached_share(rec, probe)
    out = {}
    for figure, (names, scale) in figures.items():
        found = None if share is None else scaled_total(rec, names, share)
        if found is None:
            return None
        out[figure] = round(found["estimated"] * scale, 6)
    return out

def estimate_words(estimated: dict | None, units: dict[str, str]) -> str:
    """'at least about 1,234 waits, 1.620 s', from estimated_figures; units gives each
    figure's words: a noun ('waits'), or 's' for seconds."""
    if not estimated:
        return ""
    parts = [f"{estimated[figure]:.3f} s" if unit == "s" else f"{estimated[figure]:,.0f} {unit}"
             for figure, unit in units.items()]  # a thousandth of a second: a quiet minute's waits
    return "at least about " + ", ".join(parts)
