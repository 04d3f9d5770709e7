"""What the cost governor's sampling means for a figure, from plain values: the group a probe
was attached in (meta.json's governor attachments), the share of the recording a group was
attached, and the coverage from which a group counts as attached all along (EXACT).
cost.coverage reads those values from a recording; the estimates and the words that need
only these import this module, which imports nothing of the analysis, so that they stay a
floor below cost.py's figures (scripts/import_floors.py)."""
from __future__ import annotations

EXACT = 0.995  # coverage from which a group counts as attached all along


def group_of(meta: dict, probe: str) -> str:
    """The sampling group a probe was attached in ("" = never sampled), from the recording's
    meta.json."""
    for attachment in meta.get("governor", {}).get("attachments", []):
        if probe in attachment["probes"]:
            return attachment["group"]
    return ""


def covered(group: str, attached_ns: int, duration_s: float) -> float:
    """Share of the recording a group was attached (attached_ns: its governor.attached_ns
    counter's total): 1.0 for a probe never sampled (group "") or a recording of no length."""
    if not group or not duration_s:
        return 1.0
    return round(min(1.0, attached_ns / (duration_s * 1e9)), 4)


def sampled_words(share: float) -> str:
    """' [sampled: attached 37% of the time, least when busiest: a floor]', or '' for a
    share from EXACT up (see cost.sampled_note)."""
    return "" if share >= EXACT else f" [sampled: attached {100 * share:.0f}% of the time, least when busiest: a floor]"
