"""The summary of one recording: the numbers `report --json` prints and the findings, in
plain words, that the views (text, HTML, export, diff) show. Rendering lives elsewhere."""
from __future__ import annotations

import pandas as pd

from .cost import cost_summary, coverage
from .holders import top_holders
from .histogram import percentile, stats
from .purge import purge_story
from .recording import Recording
from .timeline import per_interval

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
        "deepest": deepest_walks(rec),
    }


SECONDARY_SCAN = ("row_sel_get_clust_rec_for_mysql", "Row_sel_get_clust_rec_for_mysql")


def deepest_walks(rec: Recording, top: int = 10) -> list[dict]:
    """The deepest walks kept: their table; the index the read was scanning (a secondary
    index when its stack passes through the clustered-record lookup of a secondary-index
    scan, named by that lookup's argument where it was seen, else the clustered index);
    the clustered index whose records' versions they built."""
    def text(value):
        return None if pd.isna(value) else str(value)
    walks = rec.walks.nlargest(top, "depth")
    out = []
    for w in walks.itertuples():
        secondary = any(f in str(w.stack) for f in SECONDARY_SCAN)
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
        "page_io_waits": rec.counter_total("block_io_waits"),
        "top_pages": top,
        # the share of all block-latch wait time on the hottest page: both unrounded, so that a
        # page of 52.448 us in 62.056 reads 85%, not the 84% of its table's 52.4
        "top_page_pct": round(100 * hottest_us / total_us, 3) if top and total_us else None,
        "map_full": rec.counter_total("latch_map_full"),
        "coverage": coverage(rec, "block_lock_s"),
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
    holders = rec.latch_holders
    if name == "unknown" or holders is None or not len(holders) or "name" not in holders:
        return []
    mine = holders[holders["name"] == name]
    mine = mine.groupby(["stack", "role"], as_index=False)["wait_us"].sum().nlargest(top, "wait_us")
    return [{"stack": h.stack, "wait_ms": round(float(h.wait_us) / 1000, 3), "role": h.role}
            for h in mine.itertuples()]


def latches_summary(rec: Recording, top: int = 10) -> dict:
    """The most contended latches by wait time, each named (`unknown` where nothing could
    name it), with its waiters' stacks and its holders' (latch_holders_of)."""
    latches = rec.latches
    total_us = float(latches["wait_us"].sum())
    # a global and an offset into it (lock_sys+128) is an address, not a name
    named = (latches["name"] != "unknown") & ~latches["name"].astype(str).str.contains(r"\+\d+$", regex=True)
    named_us = float(latches.loc[named, "wait_us"].sum())
    rows = latches.nlargest(top, "wait_us")
    return {
        "wait_ms": round(total_us / 1000, 1),
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
        found.append(f"one interval lasted {longest:.1f} s instead of {nominal:g} s: the recorder "
                     "fell behind (stopped or starved); its counts are whole, over that time")
    return found


def ended_by(rec: Recording) -> str:
    """How the recording ended, in the same words in every view."""
    return rec.meta.get("end_reason") or "cut short (recorder killed)"


def measured(rec: Recording) -> dict:
    """The summary's figures, which the findings are read from."""
    batches = rec.counter_total("purge_batches")
    noted = warnings(rec)
    return {**({"warnings": noted} if noted else {}),
        "server": rec.meta["target"],
        "duration_s": round(rec.duration_s, 3),
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
            "dml_delay_coverage": coverage(rec, "dml_delay"),
            **purge_story(rec),
        },
        "version_walk": version_walk_summary(rec),
        "undo": undo_summary(rec),
        "block_lock": block_lock_summary(rec),
        "other_latch": other_latch_summary(rec),
        "latches": latches_summary(rec),
        "latch_holders": top_holders(rec.latch_holders),
        "drops": rec.counter_total("drops"),
        "governor": cost_summary(rec),
    }


def summary(rec: Recording) -> dict:
    """What `report --json` prints; its findings are the sentences every view shows."""
    told = measured(rec)
    return {**told, "findings": all_findings(rec, told)}


def findings(series) -> list[str]:
    """Plain-words reading of the purge series (one row per interval)."""
    if not series["purge_batches"].sum():
        return ["No purge batch ran: purge had no history to work on, or it is disabled."]
    stalled = (series["purge_batches"] > 0) & (series["purge_empty_batches"] == series["purge_batches"])
    if stalled.sum() >= max(2, len(series) // 5):
        working = series[~stalled & (series["purge_pages"] > 0)]
        text = (f"In {stalled.sum()} of {len(series)} intervals every purge batch found nothing "
                "to purge: an old read view (a long transaction or consistent snapshot) kept the "
                "history from being purged.")
        if len(working):
            text += (f" Purge did its work in {len(working)} interval(s): "
                     f"{working['purge_pages'].sum()} undo pages.")
        return [text]
    return []


def purge_findings(rec: Recording, purge: dict) -> list[str]:
    """The empty-batch finding, for recordings without the history length: with it, the
    verdict's phases say the same, and more precisely."""
    if purge["history"]["last"] is not None or not purge["recorded"]:
        return []
    return findings(per_interval(rec, ["purge_batches", "purge_empty_batches", "purge_pages"]))


def throttle_findings(purge: dict) -> list[str]:
    if not purge["dml_delays"]:
        return []
    return [f"purge lag throttled DML: {purge['dml_delays']} inserts/updates slept "
            f"{purge['dml_delay_ms'] / 1000:.2f} s in all (innodb_max_purge_lag)."]


def undo_findings(undo: dict) -> list[str]:
    reads = undo["page_reads"]
    if not undo["recorded"] or reads["walk"] <= max(10, 0.2 * sum(reads.values())):
        return []
    return [f"version walks read {reads['walk']} undo pages from disk: the history they need no "
            "longer fits the buffer pool, so old snapshots make reads wait for I/O."]


def all_findings(rec: Recording, told: dict) -> list[str]:
    """Every finding, in the report's order: purge's, the version walks', the undo reads'
    and the latches'. The text shows each in its section, HTML and JSON all together."""
    found = purge_findings(rec, told["purge"]) + throttle_findings(told["purge"])
    if told["version_walk"]["recorded"]:
        found += walk_findings(told["version_walk"], told["drops"])
    found += undo_findings(told["undo"])
    if told["block_lock"]["recorded"]:
        found += block_lock_findings(told["block_lock"], rec.wait_stacks, rec.duration_s)
    return found


def walk_findings(walks: dict, drops: int) -> list[str]:
    """Plain-words reading of the version-walk summary."""
    found = []
    if walks["deep_walks"]:
        found.append(f"{walks['deep_walks']} read(s) walked >= {walks['deep_walk_threshold']} "
                     f"row versions; the deepest walked {walks['max_depth']}: a long-running "
                     "snapshot is reading rows updated since it started, rebuilding each old "
                     "version from undo.")
    if drops:
        found.append(f"{drops} event(s) were lost (ring buffer or state map full): the deep-walk "
                     "table is incomplete; counters and histograms are not affected.")
    return found


HOT_SPOT_WAITS = 10  # fewer waits in all make no hot spot, whatever share one page had


def block_lock_findings(locks: dict, stacks: pd.DataFrame, duration_s: float) -> list[str]:
    """Plain-words reading of the block-latch waits."""
    if not locks["waits"]:
        return []
    found = [f"Threads waited {locks['total_wait_s']:.2f} s in all on buffer-block "
             f"latches ({locks['waits']} wait{'s' if locks['waits'] != 1 else ''} in {duration_s:.0f} s)."]
    if locks["top_page_pct"] is not None and locks["waits"] >= HOT_SPOT_WAITS:
        hottest = locks["top_pages"][0]
        found[0] += (f" {locks['top_page_pct']:.0f}% of that time was on one page, {hottest['name']}: a hot spot "
                     "(hot rows, a small table or an index root).")
    purge_us = stacks.loc[stacks["stack"].str.contains("row_purge", regex=False), "wait_us"].sum()
    if purge_us > 0.05 * locks["total_wait_ms"] * 1000:
        found.append(f"Purge itself waited {purge_us / 1e6:.2f} s on block latches: it contends "
                     "with user DML for the same pages, which slows it down.")
    if locks["page_io_waits"]:
        found.append(f"{locks['page_io_waits']} waits were for a page being read from disk "
                     "(page I/O, not latch contention).")
    return found
