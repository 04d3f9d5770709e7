"""Undo page reads on real servers: with a small buffer pool and a long history, a long
snapshot scan reads undo pages from disk inside its version walks. The server's own count
of undo pages read (INNODB_METRICS buffer_page_read_undo_log) is the ground truth."""
from __future__ import annotations

import threading
import time

import pytest

from conftest import fixture
from innostall.analysis import recording
from innostall.collector import discover, recorder, target

SERVERS = ["mariadb-11.4.5", "mysql-8.0.15", "mariadb-10.2.11", "mysql-9.7.4"]
UNDO_PROBES = ["version_walk", "version_step", "undo_fetch", "purge_batch", "undo_read"]


@pytest.fixture
def small_pool_server(servers, request):
    srv = servers(request.param)
    fixture(srv.name, "stop")
    fixture(srv.name, "start", "--innodb-buffer-pool-size=8M")
    yield srv
    fixture(srv.name, "stop")
    fixture(srv.name, "start")


def open_snapshot(srv):
    conn = srv.connect()
    conn.autocommit(False)
    cur = conn.cursor()
    cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    cur.execute("SELECT COUNT(*) FROM sbtest1")
    return conn, cur


@pytest.mark.parametrize("small_pool_server", SERVERS, indirect=True)
def test_snapshot_scan_reads_undo_pages_from_disk(small_pool_server, tmp_path):
    srv = small_pool_server
    snapshot, cur = open_snapshot(srv)
    history = srv.sysbench("oltp_update_non_index", 12, "--threads=4", "--rand-type=uniform")
    assert history.wait(timeout=60) == 0, history.stderr.read()
    metrics = srv.connect()
    seen = {}

    def on_event(snap):
        seen[snap["type"]] = srv.metric(metrics, "buffer_page_read_undo_log")
        if snap["type"] == "attached":  # the scan walks every updated row's versions
            seen["scan"] = threading.Thread(target=cur.execute, args=(
                "SELECT AVG(k) FROM sbtest1 FORCE INDEX (PRIMARY)",))
            seen["scan"].start()

    tgt = target.from_pid(srv.pid)
    probes = discover.resolve(tgt, UNDO_PROBES)
    assert all(p.ok for p in probes), [p.reason for p in probes if not p.ok]
    # exact: this compares with the server's own count; the scan would be sampled in budget
    recorder.record(tgt, probes, str(tmp_path / "rec"), duration_s=8, on_event=on_event,
                    budget_pct=None)
    seen["scan"].join()
    snapshot.rollback()
    rec = recording.load(str(tmp_path / "rec"))
    ours = {k: rec.counter_total(k) for k in ("undo_fetches_walk", "page_reads_walk",
                                              "page_reads_purge", "page_reads_other")}
    theirs = seen["final"] - seen["attached"]
    print(f"{srv.name}: {ours}, server undo pages read {theirs}")
    assert ours["undo_fetches_walk"] > 1000
    assert ours["page_reads_walk"] > 100
    # every undo page the walks read is one the server counted as read (synchronously,
    # by this thread); the server also counts read-ahead and reads by other threads
    assert ours["page_reads_walk"] <= theirs
    assert ours["page_reads_walk"] >= 0.5 * theirs
