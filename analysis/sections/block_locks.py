"""The block locks section: waits on buffer-block latches by mode, on pages being read in
or written out, the most contended pages (figures under block_lock), the other latches'
waits counted apart (other_latch), its findings and its text lines, which end with the
threads that released the latches waited on (the latches section's latch_holders)."""
from __future__ import annotations

import pandas as pd

from innostall.names import leaf_path

from ..cost import coverage, sampled_note
from ..estimates import estimated_figures
from ..recording import Recording
from ..wording.findings import block_lock_findings
from ..wording.numbers import latency
from .lines import estimate_line, finding_lines, histogram, latency_summary, log2_text, wait_stack_lines

KEYS = ("block_lock", "other_latch")
OTHER_LATCHES = "other"  # the wait mode of every latch but a buffer block's (innostall.h)


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


def figures(rec: Recording) -> dict:
    return {"block_lock": block_lock_summary(rec), "other_latch": other_latch_summary(rec)}


def findings(rec: Recording, told: dict) -> list[str]:
    locks = told["block_lock"]
    return block_lock_findings(locks, rec.wait_stacks, rec.duration_s) if locks["recorded"] else []


def page_io_words(locks: dict) -> str:
    """'on pages being read in 3 (1.2 ms), being written out 8 (8087.6 ms)'; the read count
    alone in a recording made before the two were told apart."""
    if locks["page_write_waits"] is None:
        return f"{locks['page_io_waits']} on page I/O"
    return (f"on pages being read in {locks['page_io_waits']} ({locks['page_read_wait_s'] * 1e3:.1f} ms), "
            f"being written out {locks['page_write_waits']} ({locks['page_write_wait_s'] * 1e3:.1f} ms)")


def unstacked_lines(unstacked: dict | None) -> list[str]:
    """What the stack tables leave out: the waits shorter than the recording's threshold."""
    if not unstacked or not unstacked["waits"]:
        return []
    share = f", {unstacked['wait_pct']:.1f}% of the time waited" if unstacked["wait_pct"] is not None else ""
    return [f"  (waits of {unstacked['threshold_us']} µs or more: {unstacked['waits']} shorter waits, "
            f"{unstacked['wait_ms']:.1f} ms{share}, are counted with their latch, without a stack)"]


def holder_lines(latches: list[dict], frames: int = 6) -> list[str]:
    """The latches whose waits lasted longest, each with the threads that released it to
    its waiters (the wakeup relation), by the waiting they ended."""
    if not latches:
        return []
    lines = ["", "Latch holders: who released the latches others waited on (leaf first)"]
    for latch in latches:
        lines.append(f"  {latch['name']} ({latch['latch']}): {latch['wait_ms']:.1f} ms waited")
        lines += [f"    {h['role']:<20} {h['wait_ms']:9.1f} ms {h['waits']:>7} waits  "
                  f"{leaf_path(h['stack'], frames)}" for h in latch["holders"]]
    return lines


def shown(rec: Recording) -> dict:
    """What its lines show beyond the summary's figures: how much of the time its probes were
    attached, the waits' histogram (all modes), the stacks of the block-latch waits."""
    return {"sampled": sampled_note(rec, "block_lock_s"),
            "wait_time": histogram(rec, rec.schema.hists_of("block_latch")),
            "stacks": rec.wait_stacks[rec.wait_stacks["mode"] != OTHER_LATCHES]}


def text_lines(told: dict, drawn: dict, found: list[str]) -> list[str]:
    locks, others = told["block_lock"], told["other_latch"]
    if not locks["recorded"]:
        return ["", "Block-lock waits: not recorded (probes block_lock_s, block_lock_x)"]
    lat, modes = locks["wait_us"], locks["by_mode"]
    lines = ["", "Block-lock waits (buffer-block latches, slow paths only)" + drawn["sampled"],
             f"  waits {locks['waits']} (S {modes['S']}, X {modes['X']}, SX/U {modes['SX']}), "
             f"{locks['total_wait_ms']:.1f} ms in all; " + page_io_words(locks)]
    lines += estimate_line(locks.get("estimated"), {"waits": "waits", "total_wait_s": "s"})
    if locks["waits"]:
        lines.append(f"  wait time {latency(lat)}")
    lines.append(f"  other latches (index, lock system, purge, dictionary ...): {others['waits']} "
                 f"waits, {others['total_wait_ms']:.1f} ms, counted apart")
    lines += finding_lines(found)
    lines += ["", "Block-lock wait time", log2_text(drawn["wait_time"])]
    if locks["top_pages"]:
        lines += ["", "Most contended pages (by wait time)",
                  f"  {'space':>6} {'page':>8} {'waits':>8} {'wait ms':>10}  latch"]
        lines += [f"  {p['space']:>6} {p['page_no']:>8} {p['waits']:>8} {p['wait_us'] / 1000:>10.1f}  {p['name']}"
                  for p in locks["top_pages"][:5]]
    block_stacks = drawn["stacks"]
    if len(block_stacks):
        lines += ["", "Stacks waiting longest (leaf first)"] + unstacked_lines(told["latches"]["unstacked"])
        lines += wait_stack_lines(block_stacks)
    return lines + holder_lines(told["latch_holders"])
