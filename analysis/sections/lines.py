"""What the sections' figures and text lines share: a histogram's percentiles, a finding as
the text shows it, a histogram read and drawn in bcc's layout, the estimate under a sampled
count, and the latch-wait stacks' table."""
from __future__ import annotations

import pandas as pd

from innostall.format.schema import bcc_unit
from innostall.names import leaf_path

from ..wording.estimate_words import estimate_words
from ..histogram import format_log2, stats
from ..recording import Recording


def latency_summary(rec: Recording, names: str | list[str]) -> dict:
    """p50, p99 and max of one log2 histogram, or of several summed slot by slot."""
    return stats(rec.hist(names))


def finding_lines(found: list[str]) -> list[str]:
    """Findings as the text shows them, each in its section (the summary's findings list
    them all, in the sections' order, for JSON and HTML)."""
    return [f"  finding: {text}" for text in found]


def histogram(rec: Recording, names: str | list[str]) -> tuple[pd.Series, str]:
    """One histogram, or several added up, with the unit it counts (bcc's word for it)."""
    first = names if isinstance(names, str) else names[0]
    return rec.hist(names), bcc_unit(rec.schema.hist_unit(first))


def log2_text(shown: tuple[pd.Series, str]) -> str:
    """A histogram (histogram()) in bcc's layout."""
    return format_log2(*shown)


def estimate_line(estimated: dict | None, units: dict[str, str]) -> list[str]:
    """The whole a sampled count stands for (analysis/estimates.py), under its line."""
    words = estimate_words(estimated, units)
    return [f"  in all, estimated interval by interval: {words}"] if words else []


def wait_stack_lines(stacks: pd.DataFrame, top: int = 5, frames: int = 5) -> list[str]:
    return [f"  {w.mode:<3} {w.wait_us / 1000:9.1f} ms {w.waits:>8} waits  {leaf_path(w.stack, frames)}"
            for w in stacks.nlargest(top, "wait_us").itertuples()]
