"""innostall diff: the same metrics of two recordings side by side, biggest changes first."""
from __future__ import annotations

import json
import math
import shutil

import pandas as pd

import recordings
from cli_output import run_diff
from conftest import REPO, innostall
from innostall.analysis import diff


REAL = REPO / "tests" / "data" / "purge-stall"


def test_biggest_changes_lead_by_log_ratio():
    a = pd.Series({"halved": 10.0, "same": 5.0, "tripled": 2.0, "both_zero": 0.0, "appeared": 0.0,
                   "vanished": 4.0, "only_a": 1.0})
    b = pd.Series({"halved": 5.0, "same": 5.0, "tripled": 6.0, "both_zero": 0.0, "appeared": 3.0,
                   "vanished": 0.0, "only_b": 1.0})
    table = diff.compare(a, b)
    assert table["metric"].tolist() == ["appeared", "vanished", "tripled", "halved", "both_zero",
                                        "same", "only_a", "only_b"]
    row = table.set_index("metric")
    assert row.loc["tripled", "ratio"] == 3 and math.isclose(row.loc["tripled", "change"], math.log2(3))
    assert row.loc["both_zero", "ratio"] == 1 and math.isinf(row.loc["appeared", "change"])
    assert [diff.ratio_text(r) for r in table.itertuples()] == [
        "new in B", "gone in B", "x3", "x0.5", "x1", "x1", "only in A", "only in B"]


def test_cli_diff_of_recordings_with_three_times_the_activity(tmp_path):
    # (latch waits left out: the summary rounds their milliseconds, which blurs the ratios)
    a = recordings.synthetic(tmp_path / "a", scale=1, latches=False)
    b = recordings.synthetic(tmp_path / "b", scale=3, latches=False)
    text = run_diff(a, b)
    lines = text.splitlines()
    assert lines[0].startswith("innostall diff") and str(a) in lines[1] and str(b) in lines[2]
    ratios = [line.split()[-1] for line in lines[5:]]
    tripled = ratios.count("x3")  # every count and rate; latencies and depths stay as they were
    assert tripled >= 10 and ratios[:tripled] == ["x3"] * tripled
    assert set(ratios[tripled:]) == {"x1"}
    doc = json.loads(run_diff(a, b, "--json"))
    assert doc["a"]["path"] == str(a) and doc["b"]["duration_s"] == 6.0
    metrics = {m["metric"]: m for m in doc["metrics"]}
    assert metrics["purge.pages"] == {"metric": "purge.pages", "a": 90000.0, "b": 270000.0,
                                      "ratio": 3.0, "log2_ratio": round(math.log2(3), 6), "change": "x3"}
    changes = [abs(m["log2_ratio"]) for m in doc["metrics"] if m["log2_ratio"] is not None]
    assert changes == sorted(changes, reverse=True)


def test_a_real_recording_against_its_copy_changes_nothing(tmp_path):
    shutil.copytree(REAL, tmp_path / "copy")
    doc = json.loads(run_diff(REAL, tmp_path / "copy", "--json"))
    assert doc["metrics"] and {m["change"] for m in doc["metrics"]} == {"x1"}
    assert {"purge.batches", "counter.purge_pages.per_s", "hist.purge_batch_pages.p99"} <= \
        {m["metric"] for m in doc["metrics"]}


def test_new_counters_appear_only_in_b(tmp_path):
    a = recordings.synthetic(tmp_path / "a", walks=False)
    b = recordings.synthetic(tmp_path / "b", walks=True)
    doc = json.loads(run_diff(a, b, "--json"))
    tail = [m for m in doc["metrics"] if m["change"] == "only in B"]
    assert {"counter.version_walks.per_s", "hist.version_walk_depth.count"} <= {m["metric"] for m in tail}
    assert doc["metrics"][-len(tail):] == tail


def test_bad_recording_is_one_line(tmp_path):
    done = innostall("diff", REAL, tmp_path / "nope")
    assert done.returncode == 1
    assert done.stderr == f"innostall: {tmp_path / 'nope'}: no such recording directory\n"
