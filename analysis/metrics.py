"""A recording as a flat list of named numbers: the report summary, the rate of every
counter and the percentiles of every histogram. The export's CSV and the diff use it."""
from __future__ import annotations

import pandas as pd

from . import report, views
from .recording import Recording

# histograms whose percentiles the summary already gives, under these keys
SUMMARIZED_HISTS = {"purge_batch_latency": "purge.latency_us", "version_walk_depth": "version_walk.depth",
                    "version_walk_latency": "version_walk.latency_us",
                    "other_latch_wait": "other_latch.wait_us"}


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


def summary_rows(rec: Recording) -> pd.DataFrame:
    """report.summary() as metric/value rows, in its own order."""
    flat = flatten(report.summary(rec))
    return pd.DataFrame({"metric": list(flat), "value": list(flat.values())})


def numeric_metrics(rec: Recording) -> pd.Series:
    """Every number worth comparing between recordings, by name: the summary's numbers,
    each counter's mean rate (counter.NAME.per_s) and each histogram's event count and
    percentiles (hist.NAME.p50 ...)."""
    flat = {k: v for k, v in flatten(report.summary(rec)).items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
            and not k.startswith("server.")}  # identity (pid), not a measurement
    overview = views.counter_overview(rec)
    for name, row in overview.iterrows():
        if pd.notna(row["per_s"]):  # running maxima have no rate
            flat[f"counter.{name}.per_s"] = row["per_s"]
    for name in views.hist_names(rec):
        summarized = f"{SUMMARIZED_HISTS.get(name)}.p50" in flat
        for stat, value in views.hist_stats(rec, name).items():
            if stat == "count" or not summarized:
                flat[f"hist.{name}.{stat}"] = value
    return pd.Series(flat, dtype="float64")
