"""The summary of one recording: the numbers `report --json` prints and the findings, in
plain words, that the views (text, HTML, export, diff) show. Rendering lives elsewhere."""
from __future__ import annotations

import pandas as pd

from innostall.format import writing
from innostall.format.journal_lines import MISSING_SEGMENTS
from innostall.format.writer_tables import PURGE_ONLY
from innostall.names import demangle, is_address_name, short_frame

from .cost import cost_summary, coverage
from .estimates import estimated_figures
from .holders import named_holders, top_holders
from .histogram import percentile, stats
from .purge import purge_story
from .recording import Recording
from .redo import redo_summary
from .replica import replica_summary
from .window import trigger_words
from .wording.findings import all_findings
from .work_latches import work_latches

OTHER_LATCHES = "other"  # the wait mode of every latch but a buffer block's (innostall.h)


def latency_summary(rec: Recording, names: str | list[str]) -> dict:
    """p50, p99 and max of one log2 histogram, or of several summed slot by slot."""
    return stats(rec.hist(names))


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


def page_name(latches: pd.DataFrame, space: int, page_no: int) -> str:
    """A page as the latch table names its block: `block 8:4 sbtest/sbtest1 PRIMARY`, or
    `block 8:4` where nothing said more of it."""
    bare = f"block {space}:{page_no}"
    names = latches.loc[latches["kind"] == "block", "name"].astype(str)
    named = [n for n in names if n == bare or n.startswith(bare + " ")]
    return max(named, key=len) if named else bare


def top_pages(rec: Recording, top: int = 10) -> list[dict]:
    pages = rec.pages.nlargest(top, "wait_us")
    return [{"space": int(p.space), "page_no": int(p.page_no), "name": page_name(rec.latches, p.space, p.page_no),
             "waits": int(p.waits), "wait_us": round(float(p.wait_us), 1)} for p in pages.itertuples()]


def block_modes(rec: Recording) -> list[str]:
    """The wait modes of block latches (S, X, SX): every mode but the other latches'."""
    return [mode for mode in rec.schema.wait_modes if mode != OTHER_LATCHES]


def page_io_split(rec: Recording) -> dict:
    """The block-latch waits' time on pages being read in, and their count and time on pages
    being written out (the flusher holds the latch until the write completes); None in a
    recording made before they were told apart."""
    if "block_write_waits" not in rec.schema.counters:
        return {"page_read_wait_s": None, "page_write_waits": None, "page_write_wait_s": None}
    return {"page_read_wait_s": round(rec.counter_total("block_read_wait_ns") / 1e9, 6),
            "page_write_waits": rec.counter_total("block_write_waits"),
            "page_write_wait_s": round(rec.counter_total("block_write_wait_ns") / 1e9, 6)}


def block_lock_summary(rec: Recording) -> dict:
    by_mode = {mode: rec.counter_total(f"block_waits_{mode.lower()}") for mode in block_modes(rec)}
    top, total_us = top_pages(rec), rec.counter_total("block_wait_ns") / 1000
    hottest_us = float(rec.pages["wait_us"].max()) if len(rec.pages) else 0.0  # unrounded, as total_us
    return {
        "recorded": rec.probe_attached("block_lock_s") or rec.probe_attached("block_lock_x"),
        "waits": sum(by_mode.values()),
        "by_mode": by_mode,
        "wait_us": latency_summary(rec, rec.schema.hists_of("block_latch")),
        "total_wait_ms": round(rec.counter_total("block_wait_ns") / 1e6, 1),
        # for the words: 334.95 ms rounded to 335.0 and then to 0.34 s says what 0.33 s is
        "total_wait_s": round(rec.counter_total("block_wait_ns") / 1e9, 6),
        "page_io_waits": rec.counter_total("block_io_waits"),  # on pages being read in
        **page_io_split(rec),
        "top_pages": top,
        # the share of all block-latch wait time on the hottest page: both unrounded, so that a
        # page of 52.448 us in 62.056 reads 85%, not the 84% of its table's 52.4
        "top_page_pct": round(100 * hottest_us / total_us, 3) if top and total_us else None,
        "map_full": rec.counter_total("latch_map_full"),
        "coverage": coverage(rec, "block_lock_s"),
        "estimated": estimated_figures(rec, "block_lock_s", {
            "waits": ([f"block_waits_{mode.lower()}" for mode in block_modes(rec)], 1),
            "total_wait_s": (["block_wait_ns"], 1e-9)}),
    }


def other_latch_summary(rec: Recording) -> dict:
    return {"waits": rec.counter_total("other_latch_waits"),
            "wait_us": latency_summary(rec, "other_latch_wait"),
            "total_wait_ms": round(rec.counter_total("other_latch_wait_ns") / 1e6, 1),
            # of which pthread mutexes (MariaDB 10.6+'s mysql_mutex_t), waited for in libc
            "mutex_waits": rec.counter_total("mutex_waits"),
            "mutex_wait_ms": round(rec.counter_total("mutex_wait_ns") / 1e6, 1)}


def latch_waiters(rec: Recording, name: str, kind: str, top: int = 3) -> list[dict]:
    stacks = rec.latch_stacks
    mine = stacks[(stacks["name"] == name) & (stacks["kind"] == kind)]
    mine = mine.groupby("stack", as_index=False)["wait_us"].sum().nlargest(top, "wait_us")
    return [{"stack": s.stack, "wait_ms": round(float(s.wait_us) / 1000, 3)} for s in mine.itertuples()]


def latch_holders_of(rec: Recording, name: str, top: int = 3) -> list[dict]:
    """Who held the latch while others waited: the wakers' stacks, weighted by the waiting
    they ended, with their role. Holders are matched by name, so none for `unknown`, which
    may be several latches."""
    mine = named_holders(rec.latch_holders, name)
    if mine.empty:
        return []
    mine = mine.groupby(["stack", "role"], as_index=False)["wait_us"].sum().nlargest(top, "wait_us")
    return [{"stack": h.stack, "wait_ms": round(float(h.wait_us) / 1000, 3), "role": h.role}
            for h in mine.itertuples()]


def unstacked_waits(rec: Recording) -> dict | None:
    """The latch waits too short for a stack (record --latch-stack-threshold): counted and
    timed with their latch, absent from the stack tables and flame graphs. None where every
    wait kept its stack."""
    threshold = rec.setting("latch_stack_threshold_us", 0)
    if not threshold or "latch_waits_unstacked" not in rec.schema.counters:
        return None
    waited_ns = rec.counter_total("block_wait_ns") + rec.counter_total("other_latch_wait_ns")
    ns = rec.counter_total("latch_unstacked_ns")
    return {"threshold_us": threshold, "waits": rec.counter_total("latch_waits_unstacked"),
            "wait_ms": round(ns / 1e6, 1), "wait_pct": round(100 * ns / waited_ns, 1) if waited_ns else None}


def latches_summary(rec: Recording, top: int = 10) -> dict:
    """The most contended latches by wait time, each named (`unknown` where nothing could
    name it), with its waiters' stacks and its holders' (latch_holders_of)."""
    latches = rec.latches
    total_us = float(latches["wait_us"].sum())
    named = (latches["name"] != "unknown") & ~latches["name"].map(is_address_name).astype(bool)
    named_us = float(latches.loc[named, "wait_us"].sum())
    rows = latches.nlargest(top, "wait_us")
    return {
        "wait_ms": round(total_us / 1000, 1),
        "unstacked": unstacked_waits(rec),
        "named_pct": round(100 * named_us / total_us, 1) if total_us else None,
        "top": [{"name": r.name, "kind": r.kind, "waits": int(r.waits),
                 "wait_ms": round(float(r.wait_us) / 1000, 3), "p99_us": float(r.p99_us),
                 "max_us": round(float(r.max_us), 1), "holders": latch_holders_of(rec, r.name),
                 "waiters": latch_waiters(rec, r.name, r.kind)} for r in rows.itertuples()],
    }


def undo_summary(rec: Recording) -> dict:
    causes = ("walk", "purge", "other")
    return {
        "recorded": rec.probe_attached("undo_read"),
        "fetches": {c: rec.counter_total(f"undo_fetches_{c}") for c in causes},
        "page_reads": {c: rec.counter_total(f"page_reads_{c}") for c in causes},
        "read_latency_us": latency_summary(rec, "page_read_latency"),
        "coverage": coverage(rec, "undo_read"),
        "estimated": estimated_figures(rec, "undo_read", {
            "page_reads": ([f"page_reads_{c}" for c in causes], 1)}),
    }


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


def measured(rec: Recording) -> dict:
    """The summary's figures, which the findings are read from."""
    batches = rec.counter_total("purge_batches")
    noted = warnings(rec)
    return {**({"warnings": noted} if noted else {}),
        "server": rec.meta["target"],
        "duration_s": round(rec.duration_s, 3),
        **({"window": rec.window} if rec.window else {}),
        **({"trigger": trigger_words(rec.meta)} if trigger_words(rec.meta) else {}),
        "complete": bool(rec.meta.get("complete")),
        "ended_by": ended_by(rec),
        "purge": {
            "batches": batches,
            "empty_batches": rec.counter_total("purge_empty_batches"),
            "pages": rec.counter_total("purge_pages"),
            "records": rec.counter_total("purge_records"),
            "latency_us": latency_summary(rec, "purge_batch_latency"),
            "dml_delays": rec.counter_total("dml_delays"),
            "dml_delay_ms": round(rec.counter_total("dml_delay_us") / 1000, 1),
            "records_coverage": coverage(rec, "purge_record"),
            "records_estimated": estimated_figures(rec, "purge_record", {"records": (["purge_records"], 1)}),
            "dml_delay_coverage": coverage(rec, "dml_delay"),
            **purge_story(rec),
            "latches": work_latches(rec, PURGE_ONLY),
        },
        "version_walk": version_walk_summary(rec),
        "undo": undo_summary(rec),
        "block_lock": block_lock_summary(rec),
        "other_latch": other_latch_summary(rec),
        "latches": latches_summary(rec),
        "latch_holders": top_holders(rec.latch_holders),
        **redo_summary(rec),
        "replica": replica_summary(rec),
        "drops": rec.counter_total("drops"),
        "governor": cost_summary(rec),
    }


def summary(rec: Recording) -> dict:
    """What `report --json` prints; its findings are the sentences every view shows."""
    told = measured(rec)
    return {**told, "findings": all_findings(rec, told)}
