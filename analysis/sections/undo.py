"""The undo section: physical page reads and undo page lookups by who caused them (a
version walk, purge, anything else; figures under undo), its finding and its text lines."""
from __future__ import annotations

from ..cost import coverage, sampled_note
from ..estimates import estimated_figures
from ..recording import Recording
from ..wording.findings import undo_findings
from ..wording.numbers import latency
from .lines import estimate_line, finding_lines, histogram, latency_summary, log2_text

KEYS = ("undo",)
CAUSES = ("walk", "purge", "other")


def figures(rec: Recording) -> dict:
    return {"undo": {
        "recorded": rec.probe_attached("undo_read"),
        "fetches": {c: rec.counter_total(f"undo_fetches_{c}") for c in CAUSES},
        "page_reads": {c: rec.counter_total(f"page_reads_{c}") for c in CAUSES},
        "read_latency_us": latency_summary(rec, "page_read_latency"),
        "coverage": coverage(rec, "undo_read"),
        "estimated": estimated_figures(rec, "undo_read", {
            "page_reads": ([f"page_reads_{c}" for c in CAUSES], 1)}),
    }}


def findings(rec: Recording, told: dict) -> list[str]:
    return undo_findings(told["undo"])


def shown(rec: Recording) -> dict:
    """What its lines show beyond the summary's figures: how much of the time its probe was
    attached, whether the lookups were watched, the read latency's histogram."""
    return {"sampled": sampled_note(rec, "undo_read"),
            "lookups": rec.probe_attached("undo_fetch") or rec.probe_attached("purge_undo_fetch"),
            "latency": histogram(rec, "page_read_latency")}


def text_lines(told: dict, drawn: dict, found: list[str]) -> list[str]:
    undo = told["undo"]
    if not undo["recorded"]:
        return ["", "Undo page reads: not recorded (probe undo_read)"]
    reads, fetches, lat = undo["page_reads"], undo["fetches"], undo["read_latency_us"]
    lines = ["", "Undo page reads (by who caused them)" + drawn["sampled"],
             f"  physical reads inside version walks {reads['walk']} (undo pages), inside purge "
             f"batches {reads['purge']} (the coordinator's undo and index pages), elsewhere "
             f"{reads['other']} (any page)"]
    lines += estimate_line(undo.get("estimated"), {"page_reads": "physical reads"})
    if drawn["lookups"]:
        lines.append(f"  undo page lookups: version walks {fetches['walk']}, purge {fetches['purge']}, "
                     f"other {fetches['other']}")
    if sum(reads.values()):
        lines.append(f"  read latency {latency(lat)}")
        lines += finding_lines(found)
        lines += ["", "Physical page read latency", log2_text(drawn["latency"])]
    return lines
