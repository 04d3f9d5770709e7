"""Two recordings side by side: the same metrics, their ratio, the biggest changes first."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from innostall.names import server_label

from .metrics import numeric_metrics
from .recording import Recording


def compare(a: pd.Series, b: pd.Series) -> pd.DataFrame:
    """One row per metric: a, b, ratio b/a and change = |log2 ratio|, sorted biggest change
    first. A metric that went from zero to something (or back), or changed sign (a growth
    rate, say), is an infinite change; one missing on either side has no ratio and goes last."""
    table = pd.concat({"a": a, "b": b}, axis=1).rename_axis("metric")
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = table["b"] / table["a"]
    both_zero = (table["a"] == 0) & (table["b"] == 0)
    table["ratio"] = ratio.mask(both_zero, 1.0)
    ratio = table["ratio"].astype("float64")
    with np.errstate(divide="ignore", invalid="ignore"):
        table["change"] = np.abs(np.log2(ratio)).mask(ratio < 0, np.inf)
    table = table.reset_index()
    return table.sort_values(["change", "metric"], ascending=[False, True], na_position="last",
                             kind="stable").reset_index(drop=True)


def diff(rec_a: Recording, rec_b: Recording) -> pd.DataFrame:
    return compare(numeric_metrics(rec_a), numeric_metrics(rec_b))


def describe(rec: Recording) -> dict:
    target = rec.meta.get("target", {})
    return {"path": rec.path, "server": server_label(target.get("family"), target.get("version")),
            "duration_s": round(rec.duration_s, 3), "interval_s": rec.meta.get("interval_s")}


def ratio_text(row) -> str:
    if pd.isna(row.a) or pd.isna(row.b):
        return "only in A" if pd.isna(row.b) else "only in B"
    if math.isinf(row.ratio) or (row.a == 0 and row.b != 0):
        return "new in B"
    if row.ratio == 0:
        return "gone in B"
    return f"x{row.ratio:.3g}"


def number(value) -> str:
    if pd.isna(value):
        return "-"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.4g}"


def render_text(table: pd.DataFrame, rec_a: Recording, rec_b: Recording) -> str:
    lines = ["innostall diff (biggest changes first; ratio is B/A)"]
    for tag, rec in (("A", rec_a), ("B", rec_b)):
        d = describe(rec)
        lines.append(f"  {tag}  {d['path']}: {d['server']}, {d['duration_s']:.1f} s")
    width = max([len(m) for m in table["metric"]] + [6])
    lines += ["", f"  {'metric':<{width}}  {'A':>12}  {'B':>12}  B/A"]
    for row in table.itertuples():
        lines.append(f"  {row.metric:<{width}}  {number(row.a):>12}  {number(row.b):>12}  {ratio_text(row)}")
    return "\n".join(lines)


def to_json(table: pd.DataFrame, rec_a: Recording, rec_b: Recording) -> dict:
    """JSON has no infinity: an infinite ratio is null, and 'change' says what happened."""
    def finite(x):
        return None if pd.isna(x) or math.isinf(x) else round(float(x), 6)

    rows = [{"metric": r.metric, "a": finite(r.a), "b": finite(r.b), "ratio": finite(r.ratio),
             "log2_ratio": finite(np.log2(r.ratio)) if pd.notna(r.ratio) and r.ratio > 0 else None,
             "change": ratio_text(r)} for r in table.itertuples()]
    return {"a": describe(rec_a), "b": describe(rec_b), "metrics": rows}
