"""Block-lock waits on real servers: many threads updating a few hot rows wait on buffer
block latches, through the B-tree page access code; one read-only thread hardly waits.
Which latch is that? The most contended block latch is named with its table (sbtest1 or
sbtest2, as the server's own dictionary has them) and PRIMARY, and at least 95% of all
latch wait time carries a name, an offset into a global (lock_sys+128) not counting as one
(the same recordings; naming logic without a server: test_latch_names.py). The other 5%:
latches the catalog, the dictionary and the build's DWARF all leave unplaced (on MariaDB
10.11.5, before flush_lock and purge_worker_task were read from DWARF, 3.3%)."""
from __future__ import annotations

import re

import pytest

from conftest import stop_load
from innostall.analysis import recording
from innostall.analysis.summary import summary
from innostall.collector.discovery import discover, target
from procmem import code_byte, file_byte
from test_record_purge import wait_until_purge_idle
from recordings import record_at_once

SERVERS = ["mariadb-11.4.5", "mysql-8.0.15", "mariadb-10.2.11", "mysql-9.7.4", "mariadb-10.11.5",
           "mariadb-10.4.6"]
# whose globals and mutexes the catalog names ([[latch_names]]); the others get block names only
NAMED = {"mariadb-11.4.5", "mysql-8.0.15", "mariadb-10.2.11", "mysql-9.7.4", "mariadb-10.11.5"}
LATCH_PROBES = ["block_lock_s", "block_lock_x", "block_lock_sx", "latch_sleep"]
PAGE_ACCESS = ("buf_page_get_gen", "btr_cur", "btr_pcur", "row_upd", "row_ins", "row_search")


def record_under(srv, test: str, threads: int, out: str, *extra: str):
    tgt = target.from_pid(srv.pid)
    probes = discover.resolve(tgt, LATCH_PROBES)
    assert all(p.ok for p in probes), [p.reason for p in probes if not p.ok]
    load = srv.sysbench(test, 30, f"--threads={threads}", *extra)
    try:
        # at once (recordings.record_at_once): this load never leaves idle CPU
        record_at_once(tgt, probes, out, duration_s=6)
    finally:
        stop_load(load)
    for p in probes:  # nothing left behind in the server's code
        assert code_byte(srv.pid, p.offset) == file_byte(tgt.path, p.offset)
    return recording.load(out)


@pytest.mark.parametrize("server_name", SERVERS)
def test_hot_rows_wait_on_block_latches_read_only_does_not(servers, hot_rows, server_name, tmp_path):
    srv = servers(server_name)
    hot, _ = hot_rows(server_name)
    # purge done with the hot rows' history first: its batches latch the same pages
    wait_until_purge_idle(srv, srv.connect())
    quiet = record_under(srv, "oltp_read_only", 1, str(tmp_path / "quiet"))
    hot_locks, quiet_locks = summary(hot)["block_lock"], summary(quiet)["block_lock"]
    print(f"{server_name}: hot rows {hot_locks['waits']} block waits "
          f"({hot_locks['by_mode']}, {hot_locks['total_wait_ms']} ms), "
          f"other latches {summary(hot)['other_latch']['waits']}; read-only {quiet_locks['waits']}; "
          f"top page {hot_locks['top_pages'][:1]}")
    assert hot_locks["waits"] > 100
    assert quiet_locks["waits"] <= max(5, hot_locks["waits"] // 100)
    # the waits happen where pages are looked up, in the B-tree code
    # ("[unknown]": waits whose stack the kernel could not take; they must stay a minority)
    block_stacks = hot.wait_stacks[hot.wait_stacks["mode"] != "other"]
    unknown = block_stacks["stack"] == "[unknown]"
    assert block_stacks.loc[unknown, "wait_us"].sum() < 0.5 * block_stacks["wait_us"].sum()
    top = block_stacks[~unknown].nlargest(5, "wait_us")["stack"]
    assert all(any(frame in stack for frame in PAGE_ACCESS) for stack in top), list(top)
    # the contended pages are pages of the sbtest tables, as the server's dictionary numbers
    # their tablespaces: what says the struct layout the latch programs read is right
    assert hot_locks["top_pages"] and hot_locks["top_pages"][0]["space"] in sbtest_spaces(srv)
    check_names(srv, hot, quiet)
    assert srv.serves()


def check_names(srv, hot, quiet) -> None:
    latches, quiet_latches = summary(hot)["latches"], summary(quiet)["latches"]
    top = latches["top"]
    print(f"{srv.name}: {latches['wait_ms']} ms of latch waits, {latches['named_pct']}% named; "
          + "; ".join(f"{t['name']} ({t['kind']}) {t['waits']} waits {t['wait_ms']:.1f} ms" for t in top[:6])
          + f"; read-only: {quiet_latches['wait_ms']} ms")
    # Blocks are named "block SPACE:PAGE TABLE INDEX": the table and index must be one of the
    # server's own (its dictionary), and the hot rows' clustered page among the top ones.
    # The top one need not be PRIMARY: oltp_update_index changes k, and MySQL 8.0.15's k_2
    # page once waited longest.
    blocks = [m.groups() for t in top if t["kind"] == "block"
              and (m := re.fullmatch(r"block \d+:\d+ (\S+) (\S+)", t["name"]))]
    indexes = sbtest_indexes(srv)
    assert blocks and blocks[0] in indexes, (blocks[:1], indexes)
    assert any(index == "PRIMARY" for _, index in blocks[:5]), blocks[:5]
    if srv.name in NAMED:
        assert latches["named_pct"] >= 95
    # each has its waiters' stacks, unless every one of its waits was too short for one
    threshold_us = hot.setting("latch_stack_threshold_us", 0)
    assert all(t["waiters"] or t["max_us"] < threshold_us for t in top), top
    # the per-interval timeline adds up to the whole
    assert abs(hot.latch_timeline["wait_us"].sum() - hot.latches["wait_us"].sum()) < 1


def sbtest_indexes(srv) -> set[tuple[str, str]]:
    """(table, index) of every index of the sbtest tables, from the server's dictionary (not
    ours): INNODB_INDEXES/INNODB_TABLES (MySQL 8.0+), INNODB_SYS_* (MariaDB, 5.7)."""
    with srv.connect() as conn, conn.cursor() as cur:
        for prefix in ("INNODB_", "INNODB_SYS_"):
            try:
                cur.execute(f"SELECT t.NAME, i.NAME FROM information_schema.{prefix}INDEXES i "
                            f"JOIN information_schema.{prefix}TABLES t ON t.TABLE_ID = i.TABLE_ID "
                            "WHERE t.NAME LIKE 'sbtest/%'")
            except Exception:  # pymysql.err.ProgrammingError: the other family's table
                continue
            return {(table, index) for table, index in cur.fetchall()}
    return set()


def sbtest_spaces(srv) -> set[int]:
    """Tablespace ids of the sbtest tables (MySQL 8.0+: INNODB_TABLESPACES; MariaDB and 5.7:
    INNODB_SYS_TABLESPACES)."""
    with srv.connect() as conn, conn.cursor() as cur:
        for table in ("INNODB_TABLESPACES", "INNODB_SYS_TABLESPACES"):
            try:
                cur.execute(f"SELECT SPACE FROM information_schema.{table} WHERE NAME LIKE 'sbtest/%'")
            except Exception:  # pymysql.err.ProgrammingError: the other family's table
                continue
            return {int(space) for space, in cur.fetchall()}
    return set()
