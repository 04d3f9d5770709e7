import pandas as pd
import pytest

from innostall.analysis.histogram import format_log2, percentile, slot_bounds


def test_slot_bounds_follow_log2():
    assert slot_bounds(0) == (0, 1)
    assert slot_bounds(1) == (2, 3)
    assert slot_bounds(10) == (1024, 2047)


def test_percentile_interpolates_inside_the_slot():
    hist = pd.Series({10: 100})  # 100 values in [1024, 2047]
    assert percentile(hist, 0.5) == pytest.approx(1024 + 1023 * 0.5)
    assert percentile(hist, 1.0) == 2047


def test_percentile_walks_slots_in_order():
    hist = pd.Series({3: 90, 1: 10})
    assert slot_bounds(1)[0] <= percentile(hist, 0.05) <= slot_bounds(1)[1]
    assert slot_bounds(3)[0] <= percentile(hist, 0.99) <= slot_bounds(3)[1]
    assert percentile(pd.Series(dtype="int64"), 0.5) is None


def test_format_log2_scales_bars_to_the_peak():
    text = format_log2(pd.Series({0: 0, 2: 5, 3: 10}), "usecs")
    lines = text.splitlines()
    assert "usecs" in lines[0] and "distribution" in lines[0]
    assert len(lines) == 1 + 4  # slots 0..3
    assert lines[3].split("|")[1].strip() == "*" * 20
    assert lines[4].split("|")[1] == "*" * 40
    assert "(no events)" in format_log2(pd.Series(dtype="int64"), "usecs")
