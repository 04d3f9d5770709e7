"""A recording's own facts, said in the same words in every view (the text's header, the
HTML's, the JSON's summary): how it ended, what the reader should know before the figures,
and the header's facts. They read the recording alone, no section's figures: the summary
and the renderers both stand on them."""
from __future__ import annotations

import pandas as pd

from innostall.format import writing
from innostall.format.journal_lines import MISSING_SEGMENTS

from .recording import Recording


def longest_interval_s(rec: Recording) -> float:
    ends = pd.Series(sorted(rec.counters["t_s"].unique()))
    return float(ends.diff().fillna(ends).max()) if len(ends) else 0.0


def warnings(rec: Recording) -> list[str]:
    """What the reader should know before the figures: lines of the journal read around,
    and intervals the recorder fell behind on (their counts are whole, spread over more
    time)."""
    found = list(rec.warnings)
    longest, nominal = longest_interval_s(rec), float(rec.meta.get("interval_s") or 0)
    if nominal and longest > 2 * nominal + 0.5:
        why = ("a journal segment is missing (above)" if any(w.startswith(MISSING_SEGMENTS) for w in found)
               else "the recorder fell behind (stopped or starved)")
        found.append(f"one interval lasted {longest:.1f} s instead of {nominal:g} s: {why}; its counts "
                     "are whole, over that time")
    return found


def ended_by(rec: Recording) -> str:
    """How the recording ended, in the same words in every view. One whose meta.json is
    unfinished is still being written while its recorder holds it (innostall/format/writing.py)."""
    if rec.meta.get("end_reason"):
        return rec.meta["end_reason"]
    if not rec.meta.get("complete") and writing.in_progress(rec.path):
        return "still recording (this report reads it up to its last interval)"
    return "cut short (recorder killed)"


def header_facts(rec: Recording) -> dict:
    """The recording's own facts the header shows: where it is, its meta.json, its length
    unrounded, its window, its warnings and how it ended."""
    return {"path": rec.path, "meta": rec.meta, "duration_s": rec.duration_s, "window": rec.window,
            "warnings": warnings(rec), "ended_by": ended_by(rec)}
