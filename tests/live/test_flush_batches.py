"""The page cleaners' batches (probes flush_batch, flush_lru_batch; probes/flush_batch.bpf.c)
against the server's own counts of the pages they wrote.

Flushing made quiet first (innodb_max_dirty_pages_pct 0: the page cleaners write every
dirty page, and the counts stop moving), so that no batch straddles an edge of the
window; then, recording, a write load of 3 s with the dirty-page limit still 0 keeps the
cleaners writing; the window closes once flushing is quiet again. Counted over it:
- INNODB_METRICS buffer_flush_batch_total_pages, incremented by each flush-list batch's
  pages, equals the probe's flush-list pages; buffer_LRU_batch_flush_total_pages its LRU
  pages (both counters kept by the very function probed, or its caller, per batch);
- Innodb_buffer_pool_pages_flushed equals the two together where every page the load
  writes is a batch's (no single-page flush in this load), but on MariaDB 10.2, whose
  buf_flush_lists does not add its batches' pages to it (measured: 341 against 927);
- the pages made dirty (probe page_dirtied, where the build has a call to probe: MySQL,
  MariaDB before 10.6) equal Innodb_pages_written, every page write of any kind: with no
  dirty page at either edge, every page put on the flush list in the window was written
  once in it (by a batch, or by a thread needing a free page).
An edge is quiet when the counts and the dirty pages read at it are read again unchanged
once the probes are attached (or detached); a background page write or dirtying across it
(purge working off the load's history, the master thread) makes the try start again, up to
3 times. In a fresh root, before these checks, one try on MariaDB 10.2.11 counted 241 more
pages made dirty than its batches wrote, and one on MySQL 9.7.4 4 batch pages more than the
server's count: a background write or dirtying across an edge, or, on 10.2, writes by
threads needing a free page, which Innodb_pages_written counts and the batches do not.
Measured equal on all five fixtures (MySQL 8.0.15: 1,101 pages in 9 batches; it probes
the same function as 9.7.4, so the suite leaves it out). No LRU batch ran in this load on
any of them (a pool larger than the table): the LRU figures are checked as 0 = 0 only."""
from __future__ import annotations

import signal
import subprocess

import pytest

from conftest import INNOSTALL, stop_load
from innostall.analysis import recording
from polling import settled
from test_record_purge import wait_for_line

# Each of the three ways a batch is probed: 10.5+ (the pages returned), 10.3-10.4 (a clone
# returns them; the LRU's through a pointer), MySQL (through a pointer, either list).
# MariaDB 10.2.11, probed as MySQL is, passes here (4 runs: 927, 861, 846 and 864 pages,
# equal to its counts), but in a fresh root its background page writes crossed an edge of
# the window in 3 tries of 3: no quiet edge there, so the suite leaves it out.
SERVERS = ["mariadb-11.4.5", "mariadb-10.4.6", "mysql-9.7.4"]
FLUSHED_UNCOUNTED = {"mariadb-10.2.11"}  # its status counter misses buf_flush_lists' batches
INLINE_DIRTYING = {"mariadb-11.4.5"}  # puts pages on the flush list inline: no page_dirtied
METRICS = ("buffer_flush_batch_total_pages", "buffer_LRU_batch_flush_total_pages")


STATUS = ("Innodb_buffer_pool_pages_flushed", "Innodb_pages_written", "Innodb_buffer_pool_pages_dirty")
TRIES = 3


def written(srv, conn) -> tuple[int, ...]:
    """(flush-list pages, LRU pages, pages flushed, pages written, dirty pages), as the
    server counts them."""
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN (%s, %s, %s)", STATUS)
        status = dict(cur.fetchall())
    return (*(srv.metric(conn, m) for m in METRICS), *(int(status[name]) for name in STATUS))


def quiet(srv, conn) -> tuple[int, ...]:
    """The counts once every dirty page is written and they have not moved for 2 s."""
    counts, ok = settled(lambda: written(srv, conn), quiet_s=2, timeout_s=60, every_s=0.25,
                         moved=lambda a, b: a[:4] != b[:4] or b[4] > 0)
    assert ok, f"flushing did not go quiet within 60 s: {counts}"
    return counts


def recorded_window(srv, conn, probes: str, out) -> tuple[dict, dict] | None:
    """The probe's counts and the server's over a recording of the load, or None when a
    background thread (purge working off the load's history, the master thread) wrote or
    dirtied a page across an edge: between a quiet reading and the recording's attach, or
    after the last reading."""
    before = quiet(srv, conn)
    record = subprocess.Popen(INNOSTALL + ["record", "--pid", str(srv.pid), "--probes", probes, "--exact",
                                           "--duration", "120", "-o", str(out)], stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(out / "journal.jsonl", "interval")
        if written(srv, conn) != before:  # a page written, or made dirty, before the probes saw it
            return None
        load = srv.sysbench("oltp_write_only", 3, "--threads=4")
        try:
            load.wait(timeout=30)
        finally:
            stop_load(load)
        after = quiet(srv, conn)
    finally:
        record.send_signal(signal.SIGINT)
        assert record.wait(timeout=60) == 0, record.stderr.read()
    if written(srv, conn) != after:  # a page written, or made dirty, after the last reading
        return None
    rec = recording.load(str(out))
    probe = {name: rec.counter_total(name) for name in
             ("flush_list_pages", "flush_lru_pages", "flush_list_batches", "flush_lru_batches", "flush_batches_empty",
              "pages_dirtied")}
    return probe, dict(zip(("list", "lru", "flushed", "written"), (a - b for a, b in zip(after, before))))


@pytest.fixture
def flush_everything(servers, server_name):
    """innodb_max_dirty_pages_pct (and its low-water mark) at 0 for the test."""
    srv = servers(server_name)
    conn = srv.connect()
    with conn.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.innodb_max_dirty_pages_pct, @@GLOBAL.innodb_max_dirty_pages_pct_lwm")
        pct, lwm = cur.fetchone()
        cur.execute("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0")
        cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    try:
        yield srv, conn
    finally:
        with conn.cursor() as cur:
            cur.execute(f"SET GLOBAL innodb_max_dirty_pages_pct = {pct}")
            cur.execute(f"SET GLOBAL innodb_max_dirty_pages_pct_lwm = {lwm}")


@pytest.mark.parametrize("server_name", SERVERS)
def test_batch_pages_against_the_servers_counts(flush_everything, server_name, tmp_path):
    srv, conn = flush_everything
    probes = "flush_batch,flush_lru_batch" + ("" if server_name in INLINE_DIRTYING else ",page_dirtied")
    found = None
    for attempt in range(TRIES):
        found = recorded_window(srv, conn, probes, tmp_path / f"rec{attempt}")
        if found:
            break
    assert found, f"a background page write crossed an edge of the window in all {TRIES} tries"
    probe, server = found
    print(f"{server_name}: probe {probe}; server {server}")
    assert probe["flush_list_pages"] > 0
    assert probe["flush_list_pages"] == server["list"]
    assert probe["flush_lru_pages"] == server["lru"]
    if server_name not in INLINE_DIRTYING:
        assert probe["pages_dirtied"] == server["written"]
    if server_name not in FLUSHED_UNCOUNTED:
        assert probe["flush_list_pages"] + probe["flush_lru_pages"] == server["flushed"]
