"""Offline analysis of recordings: pandas tables, reports.

load_frames, the one-call helper for notebooks and scripts (innostall.analysis.load_frames),
is the package's own: it joins the summary and the tables, so it stands on the top floor
with the views (scripts/import_floors.py), and its imports wait for its first call, so that
pandas and the summary stay out of processes that only need a light module of the package."""
from __future__ import annotations


def load_frames(path: str) -> dict:
    """Every table of the recording directory at path, by name (pandas DataFrames):

        counters, hists, walks, block_pages, wait_stacks, read_views, latches,
        latch_timeline, latch_stacks, latch_holders, redo_writers, flush_waits, appliers,
        work_latches, and any other table of the recording's schema: its Parquet table
        (docs/recording-format.md gives their columns), by the table's name
        purge      one row per interval: the history (its level, and history_end at the
                   interval's end; NaN where unknown), its pinned and purgeable parts, the
                   oldest view, purge's counters and time split
        intervals  one row per interval (index t_s, its end in seconds from the attach),
                   one column per counter delta
        probes     name, attached, symbol, reason ...: what was traced, from meta.json
        summary    metric, value: the report summary (report --json) flattened

    t_s counts seconds from the attach. A recording that cannot be read raises
    innostall.errors.UserError with a one-line reason."""
    import pandas as pd

    from . import metrics, purge_history, report_tables
    from .recording import load
    from .summary import summary

    rec = load(path)
    return {
        "counters": rec.counters,
        "hists": rec.hists,
        **rec.tables,
        "pages": rec.pages,  # block_pages, as it was named here before
        "purge": purge_history.purge_table(rec),
        "intervals": report_tables.interval_table(rec),
        "probes": pd.DataFrame(rec.meta.get("probes", [])),
        "summary": metrics.summary_rows(summary(rec)),
    }
