"""Threads' waits for a free page in the buffer pool (probe free_page_wait,
probes/flush.bpf.c) against the server's own count of them, Innodb_buffer_pool_wait_free.

Induced: an 8 MB buffer pool, a table four times its size updated at random by 4
connections (each update reads a page in, so needs a free one, and leaves a dirty one
behind), innodb_flush_log_at_trx_commit 0 (so that the writers wait on pages, not on the
log), and where the page cleaners keep up at full speed, the server's writes held to a
few a second (cgroup v1 blkio, scripts/slow_disk.py) so that they cannot. Counted over a
recording: the server's count is read after the attach and before the load, and again
once the load has ended and the count has held still for 2 s, before the detach. No wait
is in flight at either reading (no load), so every wait the server counts between them
began and ended while the probe was attached.

Recorded as a DBA would, with the default set at the default budget: the probe is never
sampled, so the stall is whole there, and it traps only the waits it measures, two hits a
wait (its entry and its end). The probe hits once per count, where the server counts:
MariaDB 11.4.5 counts each timed wait on buf_pool.done_free under buf_pool.mutex (the
probe: buf_LRU_get_free_block's call of pthread_cond_timedwait on that condition, and the
instruction after it; as a uprobe on libc's function it had trapped every timed wait of the
server, hundreds a second for these few, issue 44); MySQL 9.7.4 counts each page a waiting
thread writes out itself (the probe: buf_flush_single_page_from_LRU, entry and return),
right after the write. Measured equal in every run: MariaDB 11.4.5 74, 8, 9 and 9 waits with
its writes held to 30 a second, 231, 22 and 221 at 15 (how many varies with what the pool
holds when the load starts: only more than 0 is asked); MySQL 9.7.4 321, 355 and 466, in
loads of 10 s. Ended 3 s after the first wait (below): MariaDB 11.4.5 25, 20 and 11, MySQL
9.7.4 68 (2026-12-01). The MySQL counter is a plain add (not atomic): two threads counting
at once could lose one, so the server's figure could only be lower than the probe's there;
it never was.

The load runs until the server has counted a wait, at most LOAD_S: on MariaDB 11.4.5 the
first came 0.5 s into a slowed load begun right after the table's fill, and 19-33 s into one
begun 5 s later, once the page cleaner had written the fill's pages and the pool had 300-360
pages free again (2026-12-01, without innostall): fixed loads of 10 s, three tries, had made
none in most runs (a fresh root's 165 updates in 10 s). So the updates first run UNSLOWED_S
at full speed, which dirties pages faster than a slowed load can, and then slowed: the first
wait came 6.5-17 s later. The load goes on WAITING_S past the first wait, and the limit is
lifted before the updates are stopped (a statement held behind the slowed writes took up to
45 s to end). Where none comes within LOAD_S there is nothing to compare, which the test
says as a skip (the probe's count is then in the message).
"""
from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import INNOSTALL
from innostall.analysis import cost, recording
from polling import settled
from test_record_purge import wait_for_line

import slow_disk

SERVERS = ["mariadb-11.4.5", "mysql-9.7.4"]
ROWS_LOG2 = 16  # 65,536 rows of 200 bytes and more: about 4 times the pool
# MariaDB 11.4.5's page cleaner keeps pages free at full disk speed (0 waits in 10 s):
# slowed, it cannot. MySQL 9.7.4's threads find none free at full speed; slowed, they wait
# on the log and the doublewrite buffer instead (116 updates in 10 s, no free-page wait).
SLOW_IOPS = {"mariadb-11.4.5": 15, "mysql-9.7.4": None}
LOAD_S = 45  # at most, until the server has counted a wait (the first came 6.5-17 s into the slowed load)
WAITING_S = 3  # the load goes on this long after the first wait: several waits compared, not one
UNSLOWED_S = 2  # the updates' first seconds at full speed: they dirty the pool the fill left clean
THREADS = 4


def fill_table(conn) -> None:
    """fw.big, doubled until it holds 2**ROWS_LOG2 rows (the same SQL on both families)."""
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE IF NOT EXISTS fw")
        cur.execute("DROP TABLE IF EXISTS fw.big")
        cur.execute("CREATE TABLE fw.big (id INT AUTO_INCREMENT PRIMARY KEY, k INT, pad CHAR(200)) ENGINE=InnoDB")
        cur.execute("INSERT INTO fw.big (k, pad) VALUES (1, REPEAT('x', 200))")
        for _ in range(ROWS_LOG2):
            cur.execute("INSERT INTO fw.big (k, pad) SELECT k, pad FROM fw.big")


@contextlib.contextmanager
def updating_at_random(srv):
    """THREADS connections updating random rows of fw.big until the block ends; yields a
    list whose one item is the updates done, once the block has ended."""
    done, stop, lock = [0], threading.Event(), threading.Lock()

    def work():
        conn = srv.connect()
        ids, n = 1 << ROWS_LOG2, 0
        with conn.cursor() as cur:
            while not stop.is_set():
                cur.execute("UPDATE fw.big SET k = k + 1 WHERE id = %s", (random.randint(1, ids),))
                n += 1
        conn.close()
        with lock:
            done[0] += n

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    for t in threads:
        t.start()
    try:
        yield done
    finally:
        stop.set()
        for t in threads:
            t.join()


def until_the_server_counts_a_wait(srv, conn, before: int, iops: int | None) -> tuple[float, int]:
    """Load the server until WAITING_S after it has counted a free-page wait, or LOAD_S, its
    writes slowed to iops after UNSLOWED_S when asked: the seconds it took and the updates."""
    with updating_at_random(srv) as updates:
        begun = time.monotonic()
        if iops:
            time.sleep(UNSLOWED_S)
        with slow_disk.slow_writes(srv.pid, data_dir(srv.pid), iops) if iops else contextlib.nullcontext():
            deadline = begun + LOAD_S
            while srv.status(conn, "Innodb_buffer_pool_wait_free") <= before and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(max(0.0, min(WAITING_S, deadline - time.monotonic())))
        took = time.monotonic() - begun
    return took, updates[0]


@pytest.mark.parametrize("small_pool_server", SERVERS, indirect=True)
def test_free_page_waits_are_the_servers(small_pool_server, tmp_path):
    srv = small_pool_server
    iops = SLOW_IOPS[srv.name]
    if iops and not slow_disk.available():
        pytest.skip("no cgroup v1 blkio controller to slow the server's writes with")
    conn = srv.connect()
    fill_table(conn)
    with conn.cursor() as cur:
        cur.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 0")
    out = tmp_path / "rec"
    record = subprocess.Popen(INNOSTALL + ["record", "--pid", str(srv.pid), "--duration", "120", "-o", str(out)],
                              stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(out / "journal.jsonl", "interval")
        before = srv.status(conn, "Innodb_buffer_pool_wait_free")
        took, updates = until_the_server_counts_a_wait(srv, conn, before, iops)
        after, still = settled(lambda: srv.status(conn, "Innodb_buffer_pool_wait_free"), quiet_s=2, timeout_s=60)
        assert still, "the server's count of free-page waits never held still"
    finally:
        record.send_signal(signal.SIGINT)
        assert record.wait(timeout=60) == 0, record.stderr.read()
    rec = recording.load(str(out))
    probed, wait_s = rec.counter_total("free_page_waits"), rec.counter_total("free_page_wait_ns") / 1e9
    table = rec.flush_waits[rec.flush_waits["kind"] == "free page"]
    hits = rec.counter_total("hits.free_page_wait")
    print(f"{srv.name}: {updates} updates in {took:.1f} s; free-page waits: server {after - before}, probe {probed} "
          f"({wait_s:.1f} s; by role {table.groupby('role')['waits'].sum().to_dict()}); probe hits {hits} "
          f"in {rec.duration_s:.0f} s; estimate {cost.cost_summary(rec)['overhead_ms']:.0f} ms of a "
          f"{cost.cost_summary(rec)['budget_ms']:.0f} ms budget")
    assert cost.coverage(rec, "free_page_wait") == 1.0  # never sampled: the default tells the stall whole
    assert hits == 2 * probed  # an entry and an end a wait, no other caller's: bounded by the event
    if after == before:  # the load stalled elsewhere (the log, the doublewrite buffer): nothing to compare
        pytest.skip(f"no free-page wait in {LOAD_S} s of load ({updates} updates); the probe counted {probed}")
    assert probed == after - before
    assert int(table["waits"].sum()) == probed  # every wait in the table, with its stack and role
    assert wait_s > 0


def data_dir(pid: int) -> Path:
    """The server's data directory: its working directory (mysqld and mariadbd chdir there)."""
    return Path(os.readlink(f"/proc/{pid}/cwd"))
