"""What a sampled count stands for. A sampled group is attached once an interval, from a
random point of it until it has spent its allowance (collector/loader/governor.c), so each
interval says how many events it saw in how much of its time: scaled by that share,
interval by interval, the seen count becomes an estimate of the whole. An interval watched
for less than MIN_SHARE of its time says too little to be scaled: it is taken at the rate
of the watched ones.

It is an estimate, and the report says how far this estimator strayed where it was
measured: make bench's accuracy phase sets each estimated count against an --exact
recording of the same moments (scripts/bench/accuracy.py), and the range of its errors over
the runs kept (analysis/measured_errors.json, written by scripts/bench/estimate_errors.py)
is said beside the figure: "about 5,124 reads that built versions (make bench: 65-76%
low)" (wording/estimate_words.py). The errors lean low where events come in bursts: a
window that closes once it has spent its allowance ends inside the burst that spent it, and
the intervals a stall elsewhere left unwatched are filled at the watched ones' rate. No interval is built from
the watched intervals alone: one such held the whole in 2 of 16 counts."""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pandas as pd

from .recording import Recording
from .sampling import EXACT, covered, group_of
from .timeline import interval_lengths, per_interval

MIN_SHARE = 0.02  # of an interval watched, below which it is not scaled on its own
MEASURED_ERRORS = Path(__file__).with_name("measured_errors.json")
# Each estimated figure's name in make bench's accuracy rows, by (probe of its group, figure)
BENCH_FIGURES = {("version_walk", "reads"): "version walks", ("purge_record", "records"): "undo records to purge",
                 ("block_lock_s", "waits"): "block-latch waits", ("block_lock_s", "total_wait_s"): "block-latch wait ms",
                 ("undo_read", "page_reads"): "undo page reads"}


def attached_share(rec: Recording, probe: str) -> pd.Series | None:
    """The share of each interval the probe's group was attached (index: interval end);
    None when it was never sampled."""
    group = group_of(rec.meta, probe)
    name = f"governor.attached_ns.{group}"
    if not group or covered(group, rec.counter_total(name), rec.duration_s) >= EXACT:
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
    out["errors"] = {figure: measured_error(probe, figure) for figure in figures}
    return out


@cache
def measured_errors() -> dict:
    """make bench's errors per figure (analysis/measured_errors.json); {} where none is kept."""
    try:
        return json.loads(MEASURED_ERRORS.read_text())["figures"]
    except (OSError, ValueError, KeyError):
        return {}


def measured_error(probe: str, figure: str) -> dict | None:
    """{low, high, runs}: the range of the estimate's error against --exact over make
    bench's runs (-0.65: 65% low); None where make bench does not measure it."""
    return measured_errors().get(BENCH_FIGURES.get((probe, figure), ""))
