"""MySQL's read views by SQL (collector/server/view_names.py, collector/server/sql.py), in a
user's recording, against INNODB_TRX and performance_schema.threads read independently by
the test: a REPEATABLE READ snapshot opened before the recording (so no probe sees it open)
pins purge under a write load while its connection runs a statement with a literal; a READ
COMMITTED transaction open as long, idle between statements, holds no view.

The report must name the snapshot as the view that pinned purge, as it does on MariaDB from
memory: its connection and OS thread and user as the server's tables give them, its statement
with the literal stripped (recordings are private by default), its opening no earlier than
the transaction's start and within its second (trx_started has whole seconds); and never
the READ COMMITTED one."""
from __future__ import annotations

import contextlib
import json
import threading
import time

import pymysql
import pytest

from conftest import innostall, stop_load
from recordings import NO_PATIENCE

SERVERS = ["mysql-8.0.15", "mysql-9.7.4"]
SECRET = "a-private-literal"
RECORD_S = 8


def the_servers_own(conn, connection_id: int) -> dict:
    """INNODB_TRX's transaction of a connection, with its thread from performance_schema."""
    with conn.cursor() as cur:
        cur.execute("SELECT x.trx_mysql_thread_id, UNIX_TIMESTAMP(x.trx_started), x.trx_isolation_level, "
                    "t.THREAD_OS_ID, t.PROCESSLIST_USER FROM information_schema.INNODB_TRX x "
                    "JOIN performance_schema.threads t ON t.PROCESSLIST_ID = x.trx_mysql_thread_id "
                    "WHERE x.trx_mysql_thread_id = %s", (connection_id,))
        row = cur.fetchone()
    assert row, f"connection {connection_id} has no transaction in INNODB_TRX"
    return {"connection_id": int(row[0]), "started_s": float(row[1]), "isolation": row[2],
            "tid": int(row[3]), "user": row[4]}


def connection_id(conn) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        return int(cur.fetchone()[0])


@pytest.mark.parametrize("server_name", SERVERS)
def test_the_view_that_pins_purge_is_named_by_sql(servers, server_name, tmp_path):
    srv = servers(server_name)
    test_conn, snapshot, committed = srv.connect(), srv.connect(), srv.connect()
    snapshot_id, committed_id = connection_id(snapshot), connection_id(committed)
    with committed.cursor() as cur:
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        cur.execute("BEGIN")
        cur.execute("SELECT COUNT(*) FROM sbtest1 WHERE id < 10")
    with snapshot.cursor() as cur:
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.execute("SELECT COUNT(*) FROM sbtest1")
    own, other = the_servers_own(test_conn, snapshot_id), the_servers_own(test_conn, committed_id)
    assert (own["isolation"], other["isolation"]) == ("REPEATABLE READ", "READ COMMITTED")

    def run_statement():
        with contextlib.suppress(pymysql.MySQLError):  # killed at the end, as it should be
            with snapshot.cursor() as cur:
                cur.execute(f"SELECT SLEEP(600), '{SECRET}'")  # killed once recorded: a start may take 40 s

    running = threading.Thread(target=run_statement)
    running.start()
    time.sleep(2.5)  # open a while before the recording: only SQL can tell of it
    out = tmp_path / "rec"
    load = srv.sysbench("oltp_update_non_index", RECORD_S + 30, "--threads=2")
    try:
        made = innostall("record", "--pid", str(srv.pid), "--duration", str(RECORD_S), *NO_PATIENCE,
                         "-o", str(out), timeout=RECORD_S + 90)
    finally:
        stop_load(load)
        with test_conn.cursor() as cur:
            cur.execute(f"KILL QUERY {snapshot_id}")
        running.join()
        snapshot.rollback()
        committed.rollback()
    assert made.returncode == 0, made.stderr
    told = json.loads(innostall("report", "--json", str(out)).stdout)
    meta = json.loads((out / "meta.json").read_text())
    pinned_by = told["purge"]["pinned_by"]
    print(f"{server_name}: the server's own {own}; pinned_by {pinned_by}")
    assert pinned_by, "no view pinned purge"
    view = pinned_by[0]
    assert (view["connection_id"], view["tid"], view["user"]) == (own["connection_id"], own["tid"], own["user"])
    assert SECRET not in json.dumps(told) and view["statement"].startswith("SELECT SLEEP")
    opened_epoch_s = meta["start_real_ns"] / 1e9 + view["opened_s"]
    assert own["started_s"] - 0.5 <= opened_epoch_s <= own["started_s"] + 1.5, (opened_epoch_s, own["started_s"])
    assert committed_id not in {v["connection_id"] for v in pinned_by}
