"""innostall diff: the same metrics of two recordings side by side, biggest changes first."""
from __future__ import annotations

import json
import math
import shutil
import subprocess
import time

import pandas as pd

import recordings
from conftest import INNOSTALL, REPO, fixture, innostall, stop_load
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


def run_diff(a, b, *extra):
    done = innostall("diff", a, b, *extra)
    assert done.returncode == 0, done.stderr
    return done.stdout


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


# --- two real recordings: one purge thread against four -----------------------------------

SERVER = "mariadb-11.4.5"


def record_under_load(srv, out, purge_threads: int) -> int:
    """Restart the server with this many purge threads, then record 8 s of hot-row updates."""
    fixture(SERVER, "stop")
    fixture(SERVER, "start", f"--innodb-purge-threads={purge_threads}")
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT @@innodb_purge_threads")
        effective = int(cur.fetchone()[0])
    load = srv.sysbench("oltp_update_non_index", 20, "--threads=4")
    try:
        time.sleep(2)  # let history build up so purge has work
        done = subprocess.run(INNOSTALL + ["record", "--pid", str(srv.pid), "--duration", "8",
                                           "-o", str(out)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    finally:
        stop_load(load)
    return effective


def test_diff_of_real_recordings_with_one_and_four_purge_threads(servers, tmp_path):
    srv = servers(SERVER)
    try:
        threads = {tag: record_under_load(srv, tmp_path / tag, n) for tag, n in (("a", 1), ("b", 4))}
    finally:  # the other tests expect the server as the session fixture started it
        fixture(SERVER, "stop")
        fixture(SERVER, "start")
    assert threads == {"a": 1, "b": 4}
    text = run_diff(tmp_path / "a", tmp_path / "b")
    print(text)
    doc = json.loads(run_diff(tmp_path / "a", tmp_path / "b", "--json"))
    metrics = {m["metric"]: m for m in doc["metrics"]}
    assert metrics["purge.batches"]["a"] > 0 and metrics["purge.batches"]["b"] > 0
    assert metrics["purge.pages"]["a"] > 0 and metrics["purge.pages"]["b"] > 0
    ranked = [abs(m["log2_ratio"]) for m in doc["metrics"] if m["log2_ratio"] is not None]
    assert ranked == sorted(ranked, reverse=True)
    assert text.splitlines()[5].split()[0] == doc["metrics"][0]["metric"]
