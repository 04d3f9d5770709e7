"""Writers stopped by flushing (probes/flush.bpf.c, probe log_room_wait), against the
server's own count of those waits.

A disk too slow for the page cleaners: the server's writes throttled to 50 a second
(scripts/slow_disk.py), its redo log at its least (16 MiB on MariaDB, 8 MiB on MySQL),
innodb_io_capacity 100, and commits that do not write the log or the binary log themselves
(innodb_flush_log_at_trx_commit=0, sync_binlog=0), so that the slow disk holds back the
page cleaners, not the commits. Eight connections update random rows of a
200,000-row table for 2 s on the fast disk, which brings the checkpoint age near the
point where InnoDB flushes hard, then for 8 s on the slow one, dirtying pages faster than
50 writes a second can clean them: the age reaches the point where InnoDB stops writers
until the oldest pages are flushed. Then the throttle is lifted, the waits end, and the
recording stops.

- MySQL counts every call of the wait (log_on_file_space_waits + _no_waits in
  INNODB_METRICS): the probe's count is that, exactly;
- MariaDB (10.6+) counts a call that found pages older than its target still dirty
  (buffer_flush_sync_waits), just before waiting for the page cleaners in buf_flush_wait:
  the probe's count of calls that entered that wait (probe log_room_cleaner) is the
  server's, exactly, and every call is at least that. A call that found them written still
  writes the log and makes the checkpoint itself when the last one is older than its
  target, an fsync of every data file on the slowed disk: a wait the server does not count
  (on some disks every wait of a try is of that kind), which the report gives as the rest;
- no wait outlasts the time from the disk's slowing to the waits' end, and one of 2.1 s or
  more was seen in progress by a snapshot (the loader reads the waits still open);
- user connections are among the waiters, and the words hold against the tables."""
from __future__ import annotations

import json
import math
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import slow_disk
from conftest import INNOSTALL
from innostall.analysis import recording
from innostall.analysis.checks.verdict_check import check
from innostall.analysis.wording.phases import FLUSH_BOUND_SHARE
from polling import settled
from test_record_purge import wait_for_line

SERVERS = ["mariadb-11.4.5", "mysql-9.7.4"]  # both resize their redo log online
ROWS, THREADS, IOPS = 200_000, 8, 50
WARM_S, SLOW_S = 2, 8  # the load first dirties pages on a fast disk, then the disk slows
TRIES = 3
MONITOR = {"mariadb": ["buffer_flush_sync_waits"],
           "mysql": ["log_on_file_space_waits", "log_on_file_space_no_waits"]}
SMALL_LOG = {"mariadb": ("innodb_log_file_size", 16 << 20), "mysql": ("innodb_redo_log_capacity", 8 << 20)}
FILL = {"mariadb": "INSERT INTO flushbig (id, k) SELECT seq, seq FROM seq_1_to_{n}",
        "mysql": "INSERT INTO flushbig (id, k) WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL "
                 "SELECT i + 1 FROM n WHERE i < {n}) SELECT i, i FROM n"}
UPDATES = """CREATE PROCEDURE flushbig_updates(seconds INT) BEGIN
  DECLARE t_end DATETIME(6) DEFAULT NOW(6) + INTERVAL seconds SECOND;
  DECLARE row_id INT;
  WHILE NOW(6) < t_end DO
    SET row_id = 1 + FLOOR(RAND() * {n});
    UPDATE flushbig SET k = k + 1 WHERE id = row_id;
  END WHILE;
END"""


def hists_at_least(out: Path, name: str, us: int) -> int:
    """The histogram's counts in slots wholly at or above us (slot s holds [2^s, 2^(s+1)))."""
    rec = recording.load(str(out))
    slots = rec.hist(name)
    return int(slots[slots.index >= math.ceil(math.log2(us))].sum())


def family(server_name: str) -> str:
    return server_name.split("-")[0]


def one(conn, sql: str, *args):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchone()


def prepare_table(conn, kind: str) -> None:
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS flushbig")
        cur.execute("DROP PROCEDURE IF EXISTS flushbig_updates")
        cur.execute("CREATE TABLE flushbig (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(120) NOT NULL DEFAULT '', "
                    "pad CHAR(60) NOT NULL DEFAULT '') ENGINE=InnoDB")
        if kind == "mysql":
            cur.execute(f"SET SESSION cte_max_recursion_depth = {ROWS}")
        cur.execute(FILL[kind].format(n=ROWS))
        cur.execute(UPDATES.format(n=ROWS))


def monitor(conn, kind: str) -> int:
    names = MONITOR[kind]
    marks = ", ".join(["%s"] * len(names))
    return int(one(conn, f"SELECT SUM(COUNT) FROM information_schema.INNODB_METRICS WHERE NAME IN ({marks})",
                   *names)[0])


def settings(conn, kind: str) -> dict[str, int]:
    names = [SMALL_LOG[kind][0], "innodb_flush_log_at_trx_commit", "sync_binlog", "innodb_io_capacity",
             "innodb_io_capacity_max"]
    return dict(zip(names, one(conn, "SELECT " + ", ".join(f"@@{n}" for n in names))))


def set_globals(conn, values: dict[str, int]) -> None:
    with conn.cursor() as cur:
        # io_capacity may not pass io_capacity_max: lower it first, raise the maximum first
        order = sorted(values, key=lambda n: (n == "innodb_io_capacity_max") == (values[n] > 100))
        for name in order:
            cur.execute(f"SET GLOBAL {name} = {int(values[name])}")


def settled_count(conn, kind: str) -> int:
    """The server's count once it has stopped moving for 2 s (at most 30 s): the waits of
    the threads besides the load (purge, the master thread) end once the page cleaners
    catch up, and the server counts a wait when it ends, as the probe does."""
    return settled(lambda: monitor(conn, kind), quiet_s=2, timeout_s=30)[0]


def settle(conn, kind: str, log_size: int) -> None:
    """Wait for the checkpoint to come within the smaller log (MySQL: the table's filling
    left more redo than it holds, and every writer waits until it does), at most 30 s."""
    if kind != "mysql":
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and int(one(
            conn, "SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = 'log_lsn_checkpoint_age'")[0]) \
            > log_size // 4:
        time.sleep(0.2)


def stalled_recording(srv, kind: str, conn, data_dir: Path, out: Path) -> tuple[int, float]:
    """One try: a recording of the load on a disk slowed after WARM_S; (the waits the
    server counted, the seconds from the slowing to their end)."""
    record = subprocess.Popen(INNOSTALL + ["record", "--pid", str(srv.pid), "--duration", "120", "-o", str(out)],
                              stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(out / "journal.jsonl", "interval")
        counted = monitor(conn, kind)
        load = [threading.Thread(target=lambda: srv.connect().cursor().execute(
            "CALL flushbig_updates(%s)", (WARM_S + SLOW_S,))) for _ in range(THREADS)]
        for thread in load:
            thread.start()
        time.sleep(WARM_S)
        with slow_disk.slow_writes(srv.pid, data_dir, IOPS):
            slowed = time.monotonic()
            time.sleep(SLOW_S)
        for thread in load:
            thread.join(timeout=120)
        counted = settled_count(conn, kind) - counted
        stall_s = time.monotonic() - slowed
    finally:
        record.send_signal(signal.SIGINT)
    assert record.wait(timeout=60) == 0, record.stderr.read()
    return counted, stall_s


@pytest.mark.skipif(not slow_disk.available(), reason="needs the cgroup v1 blkio controller to slow a disk")
@pytest.mark.parametrize("server_name", SERVERS)
def test_writers_waiting_for_the_log_against_the_servers_count(servers, server_name, tmp_path):
    srv, kind = servers(server_name), family(server_name)
    conn = srv.connect()
    prepare_table(conn, kind)
    data_dir = Path(f"/proc/{srv.pid}/root") / one(conn, "SELECT @@datadir")[0].lstrip("/")
    before = settings(conn, kind)
    log_name, log_size = SMALL_LOG[kind]
    set_globals(conn, {log_name: log_size, "innodb_flush_log_at_trx_commit": 0, "sync_binlog": 0,
                       "innodb_io_capacity": 100, "innodb_io_capacity_max": 100})
    try:
        # Whether the age passes the point within the slow seconds depends on how many
        # updates met a page the page cleaners were writing (they wait for it), and whether
        # a waiter finds pages to wait for depends on the disk: tries are made until the
        # server counts a wait and the stall is one (a phase flush-bound: in a fresh root a
        # try whose 2 waits took 0.3 s of a 10.4-s stall made none), and the last one is
        # kept if none is.
        for attempt in range(TRIES):
            settle(conn, kind, log_size)
            out = tmp_path / f"rec{attempt}"
            counted, stall_s = stalled_recording(srv, kind, conn, data_dir, out)
            report = json.loads(subprocess.run(INNOSTALL + ["report", str(out), "--json"], capture_output=True,
                                               text=True, check=True).stdout)
            if counted and any("flush-bound" in p["detail"] for p in report["purge"]["phases"]):
                break
    finally:
        set_globals(conn, before)
    room = report["flushing"]["log_room"]
    print(f"{server_name}: try {attempt + 1}: the server counted {counted}, the probe {room['waits']} waits, "
          f"{room['wait_s']} s by {room['by_role_s']} in a {stall_s:.1f} s stall; for the page cleaners "
          f"{room['cleaners']}")
    assert room["waits"] >= 1, f"in {TRIES} tries the slow disk never made a writer wait: the test's premise failed"
    if kind == "mysql":
        assert room["waits"] == counted
        assert room["cleaners"] is None  # all of MySQL's wait is the page cleaners'
    else:
        assert room["cleaners"]["waits"] == counted <= room["waits"]
        assert room["cleaners"]["wait_s"] <= room["wait_s"]
        assert room["cleaners"]["own_s"] == pytest.approx(room["wait_s"] - room["cleaners"]["wait_s"], abs=2e-3)
    assert 0 < room["wait_s"] <= room["waits"] * stall_s
    # a wait of 2.1 s or more spans a whole 1 s interval: a snapshot saw it in progress
    if hists_at_least(out, "log_room_wait", 2**21):
        rec = recording.load(str(out))
        assert rec.counters.loc[rec.counters["name"] == "log_room_waits_open", "value"].max() >= 1
    assert room["by_role_s"].get("user connection", 0) > 0
    # a phase that took the waits says it is flush-bound, and names the writers' waits for
    # the log where they took FLUSH_BOUND_SHARE of it (the rule: in a fresh root the page
    # writes they queued behind took 26.0 s of a 12-s phase, and the log's 8 waits 1.0 s)
    phases = report["purge"]["phases"]
    assert any("flush-bound" in p["detail"] for p in phases), [p["detail"] for p in phases]
    named = [p for p in phases if (p["figures"].get("log_room") or {}).get("wait_s", 0)
             >= FLUSH_BOUND_SHARE * (p["to_s"] - p["from_s"])]
    assert all("flush-bound: writers waited" in p["detail"] for p in named), [p["detail"] for p in named]
    assert any(f.startswith("Writers waited") for f in report["findings"])
    assert check(str(out)) == []
