"""Optional SQL access (collector/server/sql.py): on real servers, a connection holding a consistent
snapshot is found by the OS thread id the server itself reports for it; the socket is found
from the server's pid, also in a chroot; the ways it fails are one line each."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time

import pymysql
import pytest

from fixture_servers import restart
from innostall.collector.server import sql


SERVERS = ["mariadb-11.4.5", "mariadb-10.2.11", "mysql-8.0.15", "mysql-9.7.4"]


def one_value(conn, statement: str):
    with conn.cursor() as cur:
        cur.execute(statement)
        return cur.fetchone()[0]


def own_tid(conn) -> int:
    """The OS thread serving conn, as the server reports it (MariaDB and Percona: PROCESSLIST.TID,
    MySQL: performance_schema.threads.THREAD_OS_ID)."""
    try:
        return int(one_value(conn, "SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()"))
    except pymysql.MySQLError:
        return int(one_value(conn, "SELECT THREAD_OS_ID FROM performance_schema.threads "
                                   "WHERE PROCESSLIST_ID = CONNECTION_ID()"))


@contextlib.contextmanager
def snapshot(srv, tid_known: bool = True):
    """A connection holding a consistent snapshot: (conn, connection id, tid, epoch s when opened)."""
    conn = srv.connect()
    try:
        cid = int(one_value(conn, "SELECT CONNECTION_ID()"))
        tid = own_tid(conn) if tid_known else None
        conn.autocommit(False)
        opened = time.time()
        with conn.cursor() as cur:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            cur.execute("SELECT COUNT(*) FROM sbtest1")
        yield conn, cid, tid, opened
        conn.rollback()
    finally:
        conn.close()


@contextlib.contextmanager
def session_of(srv, dsn: str | None = None, keep_literals: bool = False):
    session, reason = sql.connect(srv.pid, dsn, keep_literals)
    assert session is not None, reason
    with session:
        yield session


def started_when_opened(started: int | None, opened: float) -> bool:
    """INNODB_TRX keeps whole seconds: the start is the second the snapshot opened in."""
    return started is not None and int(opened) - 1 <= started <= opened + 1


@pytest.mark.parametrize("server_name", SERVERS)
def test_the_socket_is_found_from_the_pid_and_root_gets_in(servers, server_name):
    srv = servers(server_name)
    with session_of(srv) as session:
        # The fixture's socket as the host sees it (under the chroot for mysql-9.7.4).
        assert os.path.samefile(session.socket, srv.socket)
        assert session.user == "root"
        print(f"{server_name}: {session.server} via {session.socket}, tids from {session.tid_source}")
        assert session.tid_source in ("information_schema.PROCESSLIST.TID",
                                      "performance_schema.threads.THREAD_OS_ID")


@pytest.mark.parametrize("server_name", SERVERS)
def test_threads_names_the_connection_that_holds_a_snapshot(servers, server_name):
    srv = servers(server_name)
    with session_of(srv) as session, snapshot(srv) as (_, cid, tid, opened):
        assert os.path.exists(f"/proc/{srv.pid}/task/{tid}")  # a thread of the server
        found = session.threads([tid, 1])  # 1: init, no thread of the server
        print(f"{server_name}: tid {tid} -> {found}")
        assert set(found) == {tid}
        assert found[tid]["connection_id"] == cid
        assert found[tid]["user"] == "innostall"
        assert started_when_opened(found[tid]["trx_started_epoch_s"], opened)


@pytest.mark.parametrize("server_name", SERVERS)
def test_old_transactions_list_the_open_snapshot(servers, server_name):
    srv = servers(server_name)
    with session_of(srv) as session, snapshot(srv) as (_, cid, tid, opened):
        open_now = session.old_transactions()
    print(f"{server_name}: {open_now}")
    mine = [t for t in open_now if t["connection_id"] == cid]
    assert len(mine) == 1
    assert mine[0]["tid"] == tid and mine[0]["user"] == "innostall"
    assert started_when_opened(mine[0]["trx_started_epoch_s"], opened)


def statement_seen(srv, statement: bytes, keep_literals: bool = True) -> str | None:
    """What threads() shows as the statement of a connection while it runs statement (a
    SLEEP(20), asked after for up to 15 s however slowly this host starts it, then killed),
    its literals kept (record --keep-literals; tests/pure/test_fingerprint.py fingerprints it)."""
    conn = srv.connect()
    tid, cid = own_tid(conn), int(one_value(conn, "SELECT CONNECTION_ID()"))

    def run():
        with contextlib.suppress(pymysql.MySQLError):  # killed, as it should be
            conn.query(statement)

    runner = threading.Thread(target=run)
    runner.start()
    try:
        with session_of(srv, keep_literals=keep_literals) as session:
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                if seen := session.threads([tid]).get(tid, {}).get("statement"):
                    return seen
                time.sleep(0.05)
    finally:
        with srv.connect() as killer, killer.cursor() as cur:
            cur.execute(f"KILL QUERY {cid}")
        runner.join()
        conn.close()
    return None


@pytest.mark.parametrize("server_name", SERVERS)
def test_statement_is_the_running_one_cut_to_its_first_characters(servers, server_name):
    srv = servers(server_name)
    statement = "SELECT SLEEP(20), '" + "é" * 300 + "'"
    seen = statement_seen(srv, statement.encode())
    print(f"{server_name}: {seen!r}")
    assert seen == statement[:sql.STATEMENT_CHARS] + "…"


@pytest.mark.parametrize("server_name", ["mariadb-11.4.5", "mysql-8.0.15"])
def test_a_statement_is_read_as_its_fingerprint_by_default(servers, server_name):
    """What a recording keeps of a running statement unless --keep-literals: no literal."""
    srv = servers(server_name)
    seen = statement_seen(srv, b"SELECT SLEEP(20), 'alice@example.com' /* token 8f3a */ FROM DUAL "
                               b"WHERE 2 IN (1, 2, 3)", keep_literals=False)
    print(f"{server_name}: {seen!r}")
    assert seen == "SELECT SLEEP(?), ? FROM DUAL WHERE ? IN (?+)"


@pytest.mark.parametrize("server_name", SERVERS)
def test_statement_bytes_that_are_not_utf8_are_kept_as_text(servers, server_name):
    srv = servers(server_name)
    seen = statement_seen(srv, b"SELECT SLEEP(20) /* \xff\xfe\xc3 */")
    print(f"{server_name}: {seen!r}")
    # MySQL cuts the text at the first byte that is not UTF-8; MariaDB shows "?" for each.
    assert seen is not None and seen.startswith("SELECT SLEEP(20) /* ")


@pytest.mark.parametrize("server_name", ["mariadb-11.4.5", "mysql-9.7.4"])
def test_a_dsn_logs_in_as_its_user(servers, server_name):
    srv = servers(server_name)
    with session_of(srv, f"innostall@{srv.socket}") as session, snapshot(srv) as (_, cid, tid, _):
        assert session.user == "innostall"
        assert session.threads([tid])[tid]["connection_id"] == cid


def alter_root(srv, *statements: str) -> None:
    with srv.connect() as conn, conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)


def test_root_gets_in_by_mariadb_unix_socket_authentication(servers):
    srv = servers("mariadb-11.4.5")
    alter_root(srv, "ALTER USER root@localhost IDENTIFIED VIA unix_socket")
    try:
        with session_of(srv) as session:
            assert one_value(session.conn, "SELECT CURRENT_USER()") == "root@localhost"
            assert one_value(session.conn, "SELECT plugin FROM mysql.user WHERE user = 'root' "
                                           "AND host = 'localhost'") == "unix_socket"
    finally:
        alter_root(srv, "ALTER USER root@localhost IDENTIFIED VIA mysql_native_password USING ''")


def test_root_gets_in_by_mysql_auth_socket(servers):
    srv = servers("mysql-9.7.4")
    alter_root(srv, "INSTALL PLUGIN auth_socket SONAME 'auth_socket.so'",
               "ALTER USER root@localhost IDENTIFIED WITH auth_socket")
    try:
        with session_of(srv) as session:
            assert one_value(session.conn, "SELECT CURRENT_USER()") == "root@localhost"
    finally:
        alter_root(srv, "ALTER USER root@localhost IDENTIFIED WITH caching_sha2_password BY ''",
                   "UNINSTALL PLUGIN auth_socket")


def test_a_socket_served_by_another_process_is_not_taken(servers):
    srv = servers("mariadb-11.4.5")
    # A process whose command line names the server's socket, as a second server's could.
    other = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(30)",
                              f"--socket={srv.socket}"], stdout=subprocess.PIPE, text=True)
    try:
        # Right after exec its /proc/PID/cmdline can still read empty: wait until it runs.
        assert other.stdout.readline().strip() == "ready"
        session, reason = sql.connect(other.pid)
    finally:
        other.kill()
        other.wait()
    print(reason)
    assert session is None
    assert f"{srv.socket} is served by pid {srv.pid}, not {other.pid}" in reason


def test_root_with_a_password_is_one_line_naming_the_way_out(servers):
    srv = servers("mysql-8.0.15")
    alter_root(srv, "ALTER USER root@localhost IDENTIFIED BY 'not-empty'")
    try:
        session, reason = sql.connect(srv.pid)
    finally:
        alter_root(srv, "ALTER USER root@localhost IDENTIFIED BY ''")
    print(reason)
    assert session is None
    assert reason.startswith("no SQL access: root@") and "Access denied" in reason
    assert "--sql" in reason and "\n" not in reason


def test_without_performance_schema_mysql_says_so_and_still_lists_transactions(servers):
    srv = servers("mysql-8.0.15")
    restart(srv.name, "--performance-schema=OFF")
    try:
        with session_of(srv) as session, snapshot(srv, tid_known=False) as (_, cid, _, opened):
            assert session.tid_source is None
            assert "performance_schema is off" in session.note
            assert session.threads([srv.pid]) == {}
            mine = [t for t in session.old_transactions() if t["connection_id"] == cid]
        assert len(mine) == 1 and mine[0]["tid"] is None and mine[0]["user"] == "innostall"
        assert started_when_opened(mine[0]["trx_started_epoch_s"], opened)
    finally:
        restart(srv.name)
