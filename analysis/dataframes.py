"""A recording as pandas tables in one call, for notebooks and scripts."""
from __future__ import annotations

import pandas as pd

from . import metrics, purge, report_tables
from .recording import load


def load_frames(path: str) -> dict[str, pd.DataFrame]:
    """Every table of the recording directory at path, by name:

        counters   interval, t_s, name, value: per-interval counter deltas (tidy)
        hists      interval, t_s, name, slot, count: per-interval log2 histogram deltas
        walks      t_s, tid, depth, latency_us, stack: deep version walks (empty if none)
        pages      space, page_no, waits, wait_us: buffer blocks whose latch was waited for
        wait_stacks  mode, stack, waits, wait_us: user stacks of latch waits
        latch_holders  latch, mode, thread, role, stack, waits, wait_us: the threads that
                   woke latch waiters (released the latch), by the waiting they caused
        redo_writers  tid, thread, role, stack, bytes, purge_bytes, writes: the threads that
                   wrote redo (with the redo_write probe)
        flush_waits  kind, thread, role, stack, waits, wait_us: writers' waits for flushing
        appliers   tid, thread, role, events, apply_ns: a replica's applier threads
        work_latches  interval, t_s, owner, name, kind, mode, waits, wait_us: the latches
                   purge's work and the applier's waited on, per interval
        read_views interval, t_s, tid, opened_s, age_s, history_at_open, stack, connection_id,
                   user, statement, source, open: the oldest read views at each snapshot
        purge      one row per interval: the history (its level, and history_end at the
                   interval's end; NaN where unknown), its pinned and purgeable parts, the
                   oldest view, purge's counters and time split
        intervals  one row per interval (index t_s, its end in seconds from the attach),
                   one column per counter delta
        probes     name, attached, symbol, reason ...: what was traced, from meta.json
        summary    metric, value: the report summary (report --json) flattened

    t_s counts seconds from the attach. A recording that cannot be read raises
    innostall.errors.UserError with a one-line reason."""
    rec = load(path)
    return {
        "counters": rec.counters,
        "hists": rec.hists,
        "walks": rec.walks,
        "pages": rec.pages,
        "wait_stacks": rec.wait_stacks,
        "latch_holders": rec.latch_holders,
        "read_views": rec.read_views,
        "redo_writers": rec.redo_writers,
        "flush_waits": rec.flush_waits,
        "appliers": rec.appliers,
        "work_latches": rec.work_latches,
        "purge": purge.purge_table(rec),
        "intervals": report_tables.interval_table(rec),
        "probes": pd.DataFrame(rec.meta.get("probes", [])),
        "summary": metrics.summary_rows(rec),
    }
