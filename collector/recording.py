"""The recording format: a directory a DBA can carry to another machine.

    meta.json         what was traced, how, when, and how it ended (versioned)
    journal.jsonl     the loader's cumulative snapshots, appended as they arrive, so a
                      recording cut short stays readable up to its last complete line
    counters.parquet  per-interval deltas: interval, t_s, name, value
    hists.parquet     per-interval log2 histogram deltas: interval, t_s, name, slot, count
"""
from __future__ import annotations

import json
import os

import pandas as pd

FORMAT = "innostall-recording"
FORMAT_VERSION = 1
META, JOURNAL = "meta.json", "journal.jsonl"
COUNTERS, HISTS = "counters.parquet", "hists.parquet"


def write_meta(directory: str, meta: dict) -> None:
    """Replace meta.json atomically: a crash leaves the old or the new one, never half."""
    tmp = os.path.join(directory, META + ".tmp")
    with open(tmp, "w") as f:
        json.dump({"format": FORMAT, "version": FORMAT_VERSION, **meta}, f, indent=2)
        f.write("\n")
    os.replace(tmp, os.path.join(directory, META))


def read_journal(path: str) -> list[dict]:
    """Snapshots in order; a torn last line (the recorder was killed) is dropped."""
    snapshots = []
    with open(path) as f:
        for line in f:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                break
            if record.get("type") in ("attached", "interval", "final"):
                snapshots.append(record)
    return snapshots


def journal_to_tables(snapshots: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Turn cumulative snapshots into tidy per-interval deltas (counters, hists)."""
    start = next((s["mono_ns"] for s in snapshots if s["type"] == "attached"), None)
    samples = [s for s in snapshots if s["type"] != "attached"]
    if start is None and samples:
        start = samples[0]["mono_ns"]
    counter_rows, hist_rows = [], []
    prev_counters: dict[str, int] = {}
    prev_hists: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        t = (s["mono_ns"] - start) / 1e9
        for name, value in s["counters"].items():
            counter_rows.append((i, t, name, value - prev_counters.get(name, 0)))
        for name, slots in s["hists"].items():
            before = prev_hists.get(name, [0] * len(slots))
            hist_rows.extend((i, t, name, slot, n - b)
                             for slot, (n, b) in enumerate(zip(slots, before)) if n != b)
        prev_counters, prev_hists = s["counters"], s["hists"]
    counters = pd.DataFrame(counter_rows, columns=["interval", "t_s", "name", "value"])
    hists = pd.DataFrame(hist_rows, columns=["interval", "t_s", "name", "slot", "count"])
    return _typed(counters, "value"), _typed(hists, "count")


def _typed(df: pd.DataFrame, count_column: str) -> pd.DataFrame:
    types = {"interval": "int32", "t_s": "float64", "name": "category", count_column: "int64"}
    if "slot" in df:
        types["slot"] = "int8"
    return df.astype(types)


def write_tables(directory: str) -> None:
    counters, hists = journal_to_tables(read_journal(os.path.join(directory, JOURNAL)))
    counters.to_parquet(os.path.join(directory, COUNTERS), index=False)
    hists.to_parquet(os.path.join(directory, HISTS), index=False)
