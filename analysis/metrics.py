"""A recording as a flat list of named numbers: the report summary, the rate of every
counter and the percentiles of every histogram. The export's CSV and the diff use it."""
from __future__ import annotations

import pandas as pd

from . import report_tables
from .recording import Recording

PERCENTILES = ("p50", "p99", "max")  # of a histogram, given once, under hist.NAME
# The summary's figures read from the tables the recorder keeps for the whole recording only
# (window.whole_only): the hottest page's share of the block-latch waiting (pages), the
# latches by name (latches), the flush waits' time by thread role (flush_waits) and the
# redo by writer's role (redo_writers; a window's lumps the threads' part into "other"; purge's
# parts, from counters, stay compared as counter.redo_bytes_purge_*.per_s).
# A window of a recording cannot tell them for itself, so a diff with a window leaves them out.
WHOLE_ONLY_METRICS = ("block_lock.top_page_pct", "latches.", "flushing.log_room.by_role_s.",
                      "flushing.free_page.by_role_s.", "redo.by_role.", "redo.by_role_share.")


def flatten(tree: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}; lists and other leaves are kept as they are."""
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def summary_rows(told: dict) -> pd.DataFrame:
    """The summary (summary.summary's) as metric/value rows, in its own order."""
    flat = flatten(told)
    return pd.DataFrame({"metric": list(flat), "value": list(flat.values())})


def numeric_metrics(rec: Recording, told: dict) -> pd.Series:
    """Every number worth comparing between recordings, by name: the summary's numbers,
    each counter's mean rate (counter.NAME.per_s), each gauge's levels (gauge.NAME.mean,
    .max, .last: a level compared as a level, never as a rate) and each histogram's event
    count and percentiles (hist.NAME.p50 ...). The summary's own percentiles come from the
    same histograms, so they are left to the hist.NAME rows. told is the recording's summary
    (summary.summary), which its callers make: the summary stands above this module."""
    flat = {k: v for k, v in flatten(told).items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
            and not k.startswith(("server.", "window."))  # which server, which window: no measurement
            and not k.endswith(tuple(f".{p}" for p in PERCENTILES))}
    overview = report_tables.counter_overview(rec)
    for name, row in overview.iterrows():
        if pd.notna(row["per_s"]):  # running maxima have no rate
            flat[f"counter.{name}.per_s"] = row["per_s"]
    for name, row in report_tables.gauge_overview(rec).iterrows():
        flat.update({f"gauge.{name}.{stat}": row[stat] for stat in ("mean", "max", "last")})
    for name in report_tables.hist_names(rec):
        for stat, value in report_tables.hist_stats(rec, name).items():
            flat[f"hist.{name}.{stat}"] = value
    return pd.Series(flat, dtype="float64")


def whole_only(names) -> list[str]:
    """Of these metric names, those a window reads from the whole recording (WHOLE_ONLY_METRICS)."""
    return sorted(n for n in names if n.startswith(WHOLE_ONLY_METRICS))
