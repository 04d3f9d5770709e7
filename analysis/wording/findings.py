"""The findings: what a recording's figures mean, in plain words, each read from the
summary's figures so that no view words them differently (each section of analysis/sections/
asks for its own); and the purge headline the text and HTML open their purge section with."""
from __future__ import annotations

import pandas as pd

from ..flush_batches import slow_batch_findings
from .estimate_words import estimate_words
from ..recording import Recording
from ..timeline import per_interval
from .numbers import latency
from ..sampling import EXACT


def purge_headline(purge: dict, duration_s: float) -> str:
    """The purge section's first line, in the text and the HTML alike."""
    if not purge["recorded"]:
        return "Purge was not recorded: its probe (purge_batch) was not attached."
    per_s = purge["batches"] / duration_s if duration_s else 0
    per_batch = purge["pages"] / purge["batches"] if purge["batches"] else 0
    text = (f"{purge['batches']:,} purge batches ({per_s:.1f}/s), {purge['empty_batches']:,} of them "
            f"empty; {purge['pages']:,} undo pages ({per_batch:.1f} per batch).")
    if "batches_coverage" in purge:  # the governor detached its probe for part of the time
        whole = estimate_words(purge["batches_estimated"], {"batches": "batches", "empty_batches": "empty",
                                                            "pages": "undo pages"})
        text += (f" [sampled: the batches' probe attached {100 * purge['batches_coverage']:.0f}% of the "
                 f"time; the counts are of the batches it watched{'; in all: ' + whole if whole else ''}]")
    if purge["batches"] and purge["latency_us"]["p50"] is not None:
        text += f" Batch latency {latency(purge['latency_us'])}."
    return text


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
    found = findings(per_interval(rec, ["purge_batches", "purge_empty_batches", "purge_pages"]))
    if "batches_coverage" not in purge or not found:
        return found
    # the governor detached the batches' probe for part of the time: what it did not watch is unknown
    watched = f"{100 * purge['batches_coverage']:.0f}% of the time"
    if found[0].startswith("No purge batch ran"):
        return [f"No purge batch was seen in the {watched} their probe was attached."]
    return [f"{found[0]} (Of the batches watched, in the {watched} their probe was attached.)"]


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


NEAR_ASYNC = 0.9  # a checkpoint age at this share of the async flush point is pressing on it


def flush_findings(told: dict) -> list[str]:
    """The checkpoint age near or past the server's own flush points (analysis/redo.py):
    InnoDB's meaning of each point, and what the buffer pool held meanwhile. Servers flush
    hard as the age nears the async point, so its top is often just under it."""
    cp, pool = told.get("checkpoint"), told.get("buffer_pool")
    if not cp or not cp["async_flush_age"] or cp["age_max_bytes"] < NEAR_ASYNC * cp["async_flush_age"]:
        return []
    share = cp["age_max_bytes"] / cp["async_flush_age"]  # from the bytes: the summary's share is rounded
    mib = 2**20
    text = (f"The checkpoint age reached {cp['age_max_bytes'] / mib:.1f} MiB in the interval ending "
            f"{cp['age_max_at_s']:.1f} s, {share:.0%} of the async flush point "
            f"({cp['async_flush_age'] / mib:.1f} MiB)")
    if cp["async_s"]:
        text += f"; it reached that point in intervals totalling {cp['async_s']:.1f} s"
    if cp["sync_s"]:
        text += f", the sync flush point ({cp['sync_flush_age'] / mib:.1f} MiB) in {cp['sync_s']:.1f} s"
    text += (": from the first InnoDB flushes dirty pages regardless of innodb_io_capacity, from "
             "the second writers wait for that flushing.")
    if pool:
        text += f" Dirty pages peaked at {pool['dirty_pages_max']:,}."
    return [text]


PURGE_REDO_SAID = 0.1  # purge's share of the redo from which a finding says it


def purge_redo_findings(told: dict) -> list[str]:
    """What purge cost the redo log, from the redo_write probe (analysis/redo.py)."""
    redo = told.get("redo") or {}
    parts, total = redo.get("by_role"), redo.get("payload_bytes")
    if not parts or not total:
        return []
    # from the bytes, not by_role_share: a share kept to 4 decimals, printed to 3, is rounded twice
    coordinator, workers = parts["purge coordinator"] / total, parts["purge worker"] / total
    if coordinator + workers < PURGE_REDO_SAID:
        return []
    mib = 2**20
    purge_bytes = parts["purge coordinator"] + parts["purge worker"]
    return [f"Purge wrote {coordinator + workers:.1%} of the redo ({purge_bytes / mib:.1f} of {total / mib:.1f} MiB: "
            f"its coordinator {coordinator:.1%}, its workers {workers:.1%})."]


STALL_SAID_S = 0.1  # waits for flushing from which a finding says them


def wait_finding(waits: dict | None, who_waited_for: str, why: str) -> list[str]:
    """'WHO waited S s for WHAT (N waits: roles): WHY' for one kind of wait for flushing
    (analysis/redo.py's flushing), when it took STALL_SAID_S or more."""
    if not waits or waits["wait_s"] < STALL_SAID_S:
        return []
    who, what = who_waited_for.split(" ", 1)
    roles = ", ".join(f"{role} {s:.1f} s" for role, s in waits["by_role_s"].items())
    return [f"{who} waited {waits['wait_s']:.1f} s {what} ({waits['waits']:,} waits"
            + (f": {roles}" if roles else "") + f"): {why}"]


def log_room_findings(told: dict) -> list[str]:
    """Writers stopped until the page cleaners made room in the log, or until they had
    made the checkpoint themselves (MariaDB 10.6+, where the two are told apart)."""
    room = (told.get("flushing") or {}).get("log_room")
    part = room and room.get("cleaners")
    if not part:
        return wait_finding(room, "Writers for the log to make room",
                            "the checkpoint age reached the point where InnoDB stops writers until the page "
                            "cleaners have flushed the oldest dirty pages.")
    return wait_finding(room, "Writers for the log to make room",
                        f"the checkpoint age reached the point where InnoDB stops writers; {part['wait_s']:.1f} s "
                        f"of it in {part['waits']:,} waits for the page cleaners to flush the oldest dirty pages, "
                        f"{part['own_s']:.1f} s writing the log and making the checkpoint themselves (a log write and an "
                        "fsync of every data file, long on a disk slow to sync).")


def free_page_findings(told: dict) -> list[str]:
    """Threads that needed a page in the buffer pool and found none to take."""
    return wait_finding((told.get("flushing") or {}).get("free_page"), "Threads for a free page in the buffer pool",
                        "none was free and none clean at the LRU list's tail, so each waited for a dirty page to "
                        "be written out and evicted (a buffer pool too small for the working set, or page "
                        "cleaners that do not keep up).")


def batch_findings(told: dict) -> list[str]:
    """The page cleaners' batches, when one was slow (analysis/flush_batches.py)."""
    batches = (told.get("flushing") or {}).get("batches")
    return slow_batch_findings(batches, sampled=bool(batches) and batches.get("coverage", 1.0) < EXACT)


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
# From this share of the block-latch wait time on pages being written out, the waits are
# the disk's (the flusher holds a page's latch until its write completes), and the hottest
# page is where the writes queued, not a hot spot.
WRITE_BOUND_SHARE = 0.5


def write_share(locks: dict) -> float:
    """The share of the block-latch wait time on pages being written out (0 when unknown)."""
    written = locks.get("page_write_wait_s") or 0.0  # None: a recording before they were told
    return written / locks["total_wait_s"] if locks["total_wait_s"] else 0.0


def block_lock_findings(locks: dict, stacks: pd.DataFrame, duration_s: float) -> list[str]:
    """Plain-words reading of the block-latch waits."""
    if not locks["waits"]:
        return []
    found = [f"Threads waited {locks['total_wait_s']:.2f} s in all on buffer-block "
             f"latches ({locks['waits']} wait{'s' if locks['waits'] != 1 else ''} in {duration_s:.0f} s)."]
    if locks.get("estimated"):  # sampled: what was seen is a floor
        found[0] = found[0][:-1] + (
            f" while their probes were attached, {100 * locks['coverage']:.0f}% of the time: "
            f"{estimate_words(locks['estimated'], {'total_wait_s': 's', 'waits': 'waits'})} in all, "
            "estimated interval by interval.")
    if write_share(locks) >= WRITE_BOUND_SHARE:
        found[0] += (f" {locks['page_write_wait_s']:.2f} s of it ({100 * write_share(locks):.0f}%) was on pages "
                     "being written to disk: the flusher holds a page's latch until its write completes, so "
                     "most of the time went to waiting for the disk's writes, not for other threads.")
    elif locks["top_page_pct"] is not None and locks["waits"] >= HOT_SPOT_WAITS:
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
