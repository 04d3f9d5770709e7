"""Two recordings, or two windows of recordings (of the same one, say), side by side: the
same metrics, their ratio, the biggest changes first."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from innostall.errors import UserError
from innostall.names import server_label

from . import recording, window
from .metrics import numeric_metrics, whole_only
from .recording import Recording
from .summary import summary

WHOLE_ONLY_WORDS = "read from the tables kept for the whole recording only, which a window does not cut"


def load_side(tag: str, path: str, shared: tuple[str | None, str | None],
              own: tuple[str | None, str | None]) -> Recording:
    """One side of a diff (tag 'a' or 'b'): the recording at path, cut to its window when
    one is asked for, each bound its own (--a-from, --a-to) where given, else the one both
    sides share (--from, --to). A bad time is one line naming the side and the option."""
    rec = recording.load(path)
    bounds = [(f"--{tag}-{end}", mine) if mine is not None else (f"--{end}", both)
              for end, both, mine in zip(("from", "to"), shared, own)]
    (from_option, start), (to_option, end) = bounds
    if start is None and end is None:
        return rec
    try:
        return window.window(rec, start, end, (from_option, to_option))
    except UserError as e:
        raise UserError(f"{tag.upper()} ({path}): {e}") from None


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


class Comparison(NamedTuple):
    table: pd.DataFrame  # compare()'s
    left_out: list[str]  # metrics not compared: with a window, those it reads from the whole recording


def diff(rec_a: Recording, rec_b: Recording) -> Comparison:
    """The metrics compared; with a window on either side, without those a window reads from
    the whole recording (metrics.whole_only), so that none is shown as a window's."""
    a, b = numeric_metrics(rec_a, summary(rec_a)), numeric_metrics(rec_b, summary(rec_b))
    if rec_a.window is None and rec_b.window is None:
        return Comparison(compare(a, b), [])
    left_out = whole_only(a.index.union(b.index))
    return Comparison(compare(a.drop(left_out, errors="ignore"), b.drop(left_out, errors="ignore")), left_out)


def describe(rec: Recording) -> dict:
    """Which recording, and which part of it: window is None for the whole, else
    {from_s, to_s, recording_s} in the recording's seconds."""
    target = rec.meta.get("target", {})
    told = None if rec.window is None else {k: rec.window[k] for k in ("from_s", "to_s", "recording_s")}
    return {"path": rec.path, "server": server_label(target.get("family"), target.get("version")),
            "duration_s": round(rec.duration_s, 3), "interval_s": rec.meta.get("interval_s"), "window": told}


def span_text(told: dict) -> str:
    """'6.0 s' for a whole recording; '0.0–3,600.0 s of 28,800.0 s' for a window of one."""
    if told["window"] is None:
        return f"{told['duration_s']:,.1f} s"
    w = told["window"]
    return f"{w['from_s']:,.1f}–{w['to_s']:,.1f} s of {w['recording_s']:,.1f} s"


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


def render_text(compared: Comparison, rec_a: Recording, rec_b: Recording) -> str:
    table, left_out = compared
    lines = ["innostall diff (biggest changes first; ratio is B/A)"]
    for tag, rec in (("A", rec_a), ("B", rec_b)):
        d = describe(rec)
        lines.append(f"  {tag}  {d['path']}: {d['server']}, {span_text(d)}")
    if left_out:
        lines.append(f"  left out: {', '.join(left_out)} ({WHOLE_ONLY_WORDS})")
    width = max([len(m) for m in table["metric"]] + [6])
    lines += ["", f"  {'metric':<{width}}  {'A':>12}  {'B':>12}  B/A"]
    for row in table.itertuples():
        lines.append(f"  {row.metric:<{width}}  {number(row.a):>12}  {number(row.b):>12}  {ratio_text(row)}")
    return "\n".join(lines)


def to_json(compared: Comparison, rec_a: Recording, rec_b: Recording) -> dict:
    """JSON has no infinity: an infinite ratio is null, and 'change' says what happened."""
    table, left_out = compared

    def finite(x):
        return None if pd.isna(x) or math.isinf(x) else round(float(x), 6)

    rows = [{"metric": r.metric, "a": finite(r.a), "b": finite(r.b), "ratio": finite(r.ratio),
             "log2_ratio": finite(np.log2(r.ratio)) if pd.notna(r.ratio) and r.ratio > 0 else None,
             "change": ratio_text(r)} for r in table.itertuples()]
    return {"a": describe(rec_a), "b": describe(rec_b), "left_out": list(left_out), "metrics": rows}
