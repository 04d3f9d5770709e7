"""The version walks section: the consistent reads that built old row versions, how deep
they walked and how long they took, the deepest ones kept with their stacks (figures
under version_walk), their findings and their text lines."""
from __future__ import annotations

import pandas as pd

from innostall.names import demangle, leaf_path, short_frame

from ..cost import coverage, sampled_note
from ..estimates import estimated_figures
from ..histogram import percentile
from ..recording import Recording
from ..wording.findings import walk_findings
from ..wording.numbers import latency
from .lines import estimate_line, finding_lines, histogram, latency_summary, log2_text

KEYS = ("version_walk",)


def depth_summary(rec: Recording, max_depth: int) -> dict:
    """Depth percentiles from the log2 histogram, never above the exact maximum."""
    hist = rec.hist("version_walk_depth")
    if hist.empty or not hist.sum():
        return {"p50": None, "p99": None}
    return {q: round(min(percentile(hist, f), max_depth), 1) for q, f in (("p50", 0.5), ("p99", 0.99))}


def version_walk_summary(rec: Recording) -> dict:
    # version_walk_max_depth is a running maximum, so its deltas sum to it. A recording cut
    # short can hold deep-walk events newer than its last snapshot: count those too.
    kept = rec.walks["depth"]
    max_depth = max(rec.counter_total("version_walk_max_depth"), int(kept.max()) if len(kept) else 0)
    return {
        "recorded": rec.probe_attached("version_walk") and rec.probe_attached("version_step"),
        "reads": rec.counter_total("version_walks"),
        "reads_without_versions": rec.counter_total("version_walks_zero"),
        "reads_unstepped": rec.counter_total("version_walks_unstepped"),
        "versions": rec.counter_total("version_steps"),
        "steps_outside": rec.counter_total("version_steps_outside"),
        "max_depth": max_depth,
        "depth": depth_summary(rec, max_depth),
        "latency_us": latency_summary(rec, "version_walk_latency"),
        "deep_walk_threshold": rec.setting("deep_walk_threshold", 100),
        "deep_walks": max(rec.counter_total("deep_walks"), len(kept)),
        "deep_walks_kept": len(rec.walks),
        "coverage": coverage(rec, "version_walk"),
        # the whole, where sampled: interval by interval (estimates.py)
        "estimated": estimated_figures(rec, "version_walk", {"reads": (["version_walks"], 1)}),
        "deepest": deepest_walks(rec),
    }


def figures(rec: Recording) -> dict:
    return {"version_walk": version_walk_summary(rec)}


def findings(rec: Recording, told: dict) -> list[str]:
    walks = told["version_walk"]
    return walk_findings(walks, told["drops"]) if walks["recorded"] else []


def secondary_lookups(rec: Recording) -> frozenset[str]:
    """The functions through which a secondary-index read fetches its clustered record, as
    the recording's probe list names them (the catalog's secondary_lookup probe)."""
    return frozenset(short_frame(demangle(p["symbol"])) for p in rec.meta.get("probes", [])
                     if p.get("name") == "secondary_lookup" and p.get("symbol"))


def scans_secondary(stack, lookups: frozenset[str]) -> bool:
    """Whether a walk's read was a secondary-index scan: its stack passes through a lookup."""
    return any(short_frame(f) in lookups for f in str(stack).split(";"))


def deepest_walks(rec: Recording, top: int = 10) -> list[dict]:
    """The deepest walks kept: their table; the index the read was scanning (a secondary
    index when its stack passes through the clustered-record lookup of a secondary-index
    scan, named by that lookup's argument where it was seen, else the clustered index);
    the clustered index whose records' versions they built."""
    def text(value):
        return None if pd.isna(value) else str(value)
    walks, lookups = rec.walks.nlargest(top, "depth"), secondary_lookups(rec)
    out = []
    for w in walks.itertuples():
        secondary = scans_secondary(w.stack, lookups)
        scanned = text(w.scan_index) if secondary else text(w.index)
        out.append({"depth": int(w.depth), "table": text(w.table), "index": scanned,
                    "versions_of": text(w.index),
                    "scan": "secondary index" if secondary else "clustered index",
                    "stack": str(w.stack)})
    return out


def walk_where(w, lookups: frozenset[str]) -> str:
    """'sbtest/sbtest1 via k_1' (a secondary-index read: the index it scanned), or
    'sbtest/sbtest1 PRIMARY'; empty when the walk's index could not be read."""
    table, index = getattr(w, "table", None), getattr(w, "index", None)
    if pd.isna(table) or pd.isna(index):
        return ""
    scanned = getattr(w, "scan_index", None)
    if scans_secondary(w.stack, lookups):
        return f"{table} via {'a secondary index' if pd.isna(scanned) else scanned}  "
    return f"{table} {index}  "


WALKS_SHOWN = 5  # the deepest walks the text lists, with their stacks


def shown(rec: Recording) -> dict:
    """What its lines show beyond the summary's figures: how much of the time its probe was
    attached, its two histograms, and the deepest walks kept, each with where it read."""
    lookups = secondary_lookups(rec)
    deepest = rec.walks.nlargest(WALKS_SHOWN, "depth")
    return {"duration_s": rec.duration_s,  # unrounded, for the rate (the summary's is to the ms)
            "sampled": sampled_note(rec, "version_walk"),
            "depth": histogram(rec, "version_walk_depth"), "latency": histogram(rec, "version_walk_latency"),
            "kept": len(rec.walks), "deepest": [(w, walk_where(w, lookups)) for w in deepest.itertuples()]}


def walk_lines(deepest: list[tuple], frames: int = 4) -> list[str]:
    return [f"  depth {w.depth:<7} {w.latency_us:9.0f} us  tid {w.tid:<8} at {w.t_s:6.1f} s  "
            f"{where}{leaf_path(w.stack, frames)}" for w, where in deepest]


def text_lines(told: dict, drawn: dict, found: list[str]) -> list[str]:
    walks, drops, duration_s = told["version_walk"], told["drops"], drawn["duration_s"]
    if not walks["recorded"]:
        return ["", "Version-chain walks: not recorded (probes version_walk and version_step)"]
    per_s = walks["reads"] / duration_s if duration_s else 0
    lines = ["", "Version-chain walks (consistent reads building old row versions)"
             + drawn["sampled"],
             f"  reads that built versions {walks['reads']} ({per_s:.1f}/s), versions built "
             f"{walks['versions']}, max depth {walks['max_depth']}"]
    lines += estimate_line(walks.get("estimated"), {"reads": "reads that built versions"})
    if walks["reads"] and walks["depth"]["p50"] is not None:  # None: its histogram is empty (damaged)
        depth, lat = walks["depth"], walks["latency_us"]
        lines.append(f"  depth p50 ~{depth['p50']:.0f}, p99 ~{depth['p99']:.0f}; latency {latency(lat)}")
    lines.append(f"  version steps outside consistent reads (purge, locking, DDL) "
                 f"{walks['steps_outside']}; reads that needed no version {walks['reads_without_versions']}")
    lines.append(f"  deep walks (>= {walks['deep_walk_threshold']} versions) {walks['deep_walks']}, "
                 f"with stacks {walks['deep_walks_kept']}; events lost {drops}")
    lines += finding_lines(found)
    if walks["reads"]:
        lines += ["", "Version-walk depth", log2_text(drawn["depth"]),
                  "", "Version-walk latency", log2_text(drawn["latency"])]
    if drawn["kept"]:
        lines += ["", "Deepest walks (stack leaf first)"] + walk_lines(drawn["deepest"])
    return lines
