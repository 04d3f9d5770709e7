"""Per-interval series cut to a bounded number of points for the HTML report's charts. An
8-hour recording at 1 s has 28,800 intervals, many more than a chart has pixels; drawn
whole, its charts made a 96 MB page that took a minute to write (issue 30).

A series is cut into buckets of consecutive intervals, and each bucket is drawn by its
lowest and its highest value, at the times they were seen (the M4 idea, without the
first and last): the line keeps its shape and a one-interval spike stays on the chart.
A histogram over time adds its counts up per bucket. A chart drawn from buckets says so
in its title (note())."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

POINTS = 1000  # buckets at most: about one per pixel of a chart
DIGITS = 6  # significant digits a bucketed value keeps (the charts' hover shows 4)


def bucket_size(rows: int, limit: int = POINTS) -> int:
    """Intervals per bucket: 1 while the series fits."""
    return max(1, math.ceil(rows / limit))


def envelope_positions(values: np.ndarray, limit: int = POINTS) -> np.ndarray:
    """The positions of each bucket's lowest and highest value, in order; a bucket with no
    known value (all NaN) keeps its first position, so the chart shows the gap."""
    rows, size = len(values), bucket_size(len(values), limit)
    if size == 1:
        return np.arange(rows)
    buckets = math.ceil(rows / size)
    padded = np.full(buckets * size, np.nan)
    padded[:rows] = values
    grid = padded.reshape(buckets, size)
    unknown = np.isnan(grid)
    starts = np.arange(buckets) * size
    lows = starts + np.where(unknown, np.inf, grid).argmin(axis=1)
    highs = starts + np.where(unknown, -np.inf, grid).argmax(axis=1)
    return np.unique(np.concatenate([lows, highs]).clip(max=rows - 1))


def envelope(series: pd.Series, limit: int = POINTS) -> pd.Series:
    """The series (by time) kept at each bucket's lowest and highest value; when bucketed,
    its times to the millisecond and its values to DIGITS significant digits: in the page's
    JSON each number then takes half the characters."""
    if bucket_size(len(series), limit) == 1:
        return series
    kept = series.iloc[envelope_positions(series.to_numpy(dtype="float64"), limit)]
    return pd.Series(significant(kept.to_numpy(dtype="float64")), index=np.round(kept.index.to_numpy(dtype="float64"), 3),
                     name=series.name)


def significant(values: np.ndarray, digits: int = DIGITS) -> np.ndarray:
    """values rounded to `digits` significant digits (NaN and 0 kept)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(values != 0, np.floor(np.log10(np.abs(values))), 0)
    factor = 10.0 ** (digits - 1 - np.nan_to_num(scale))
    return np.round(values * factor) / factor


def envelope_rows(frame: pd.DataFrame, column: str, limit: int = POINTS) -> pd.DataFrame:
    """Whole rows of a frame, at each bucket's lowest and highest value of one column: for
    series drawn stacked, which must share their times (the history's two parts)."""
    return frame.iloc[envelope_positions(frame[column].to_numpy(dtype="float64"), limit)]


def bucket_sums(frame: pd.DataFrame, limit: int = POINTS) -> pd.DataFrame:
    """Counts per interval (rows by time) added up per bucket, each at its last interval's
    time."""
    size = bucket_size(len(frame), limit)
    if size == 1:
        return frame
    ids = np.arange(len(frame)) // size
    summed = frame.groupby(ids).sum()
    summed.index = pd.Index(frame.index.to_series().groupby(ids).max().to_numpy(), name=frame.index.name)
    return summed


def note(rows: int, how: str = "lowest and highest", limit: int = POINTS) -> str:
    """' (28,800 intervals, drawn as the lowest and highest of every 20)', or '' when the
    series is drawn whole."""
    size = bucket_size(rows, limit)
    return f" ({rows:,} intervals, drawn as the {how} of every {size})" if size > 1 else ""
