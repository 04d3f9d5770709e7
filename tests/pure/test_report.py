import pandas as pd

from innostall.analysis.wording.findings import findings
from innostall.analysis.timeline import sparkline


def series(batches, empty, pages):
    return pd.DataFrame({"purge_batches": batches, "purge_empty_batches": empty,
                         "purge_pages": pages})


def test_stalled_purge_is_named_with_its_extent():
    text, = findings(series([1, 1, 1, 1, 900, 0], [1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 9000, 0]))
    assert text.startswith("In 4 of 6 intervals every purge batch found nothing to purge")
    assert "1 interval(s): 9000 undo pages" in text


def test_healthy_purge_has_no_finding():
    assert findings(series([50, 60, 55], [0, 1, 0], [600, 700, 650])) == []


def test_no_purge_at_all_is_said():
    assert "No purge batch ran" in findings(series([0, 0], [0, 0], [0, 0]))[0]


def test_sparkline_scales_to_peak():
    assert sparkline(pd.Series([0, 4, 8])) == " ▄█"
    assert sparkline(pd.Series([0, 0])) == "  "


def test_long_sparklines_keep_each_buckets_peak():
    values = pd.Series([0] * 3600)
    values[1234] = 7  # one burst in an hour
    line = sparkline(values)
    assert len(line) == 100 and line.count("█") == 1
