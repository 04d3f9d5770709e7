"""Which latch is that? The naming logic, checked without a server on memory laid out by
hand; deep walks named on real servers. The hot-row naming truth (the top block named with
its table and PRIMARY, 95% of wait time named) rides on test_block_lock.py's recordings."""
from __future__ import annotations

import pytest

from innostall.analysis import recording
from innostall.analysis.summary import summary
from innostall.collector.discovery import discover, target
from innostall.collector.recorder import recorder


SERVERS = ["mariadb-11.4.5", "mysql-8.0.15", "mariadb-10.2.11", "mysql-9.7.4"]
DEEP_ROW, DEEP = 7, 300


@pytest.mark.parametrize("server_name", SERVERS)
def test_deep_walks_name_their_table_and_scan(servers, server_name, tmp_path):
    """A snapshot reads one row updated 300 times since, once by its primary key and once
    through the secondary index k_1: both walks build versions of sbtest1's PRIMARY records;
    the second was scanning k_1, and says so."""
    srv = servers(server_name)
    tgt = target.from_pid(srv.pid)
    probes = discover.resolve(tgt, ["version_walk", "version_step", "secondary_lookup"])
    assert all(p.ok for p in probes), [p.reason for p in probes if not p.ok]
    reader, writer = srv.connect(), srv.connect()
    with reader.cursor() as cur:
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.execute("SELECT k FROM sbtest1 WHERE id = %s", (DEEP_ROW,))
        k, = cur.fetchone()
    with writer.cursor() as cur:
        for _ in range(DEEP):
            cur.execute("UPDATE sbtest1 SET k = k + 1 WHERE id = %s", (DEEP_ROW,))

    def on_event(snapshot):
        if snapshot["type"] == "attached":
            with reader.cursor() as cur:
                cur.execute("SELECT k FROM sbtest1 FORCE INDEX (PRIMARY) WHERE id = %s", (DEEP_ROW,))
                cur.execute("SELECT COUNT(*) FROM sbtest1 FORCE INDEX (k_1) WHERE k = %s", (k,))
                assert cur.fetchone()[0] >= 1  # the snapshot still sees the row's old k

    try:
        recorder.record(tgt, probes, str(tmp_path / "rec"), duration_s=3, on_event=on_event)
    finally:
        reader.rollback()
    deepest = summary(recording.load(str(tmp_path / "rec")))["version_walk"]["deepest"]
    walks = sorted((w["depth"], w["table"], w["index"], w["versions_of"], w["scan"]) for w in deepest)
    print(server_name, walks)
    assert walks == [(DEEP, "sbtest/sbtest1", "PRIMARY", "PRIMARY", "clustered index"),
                     (DEEP, "sbtest/sbtest1", "k_1", "PRIMARY", "secondary index")]
