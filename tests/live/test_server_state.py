"""The server's state read from its memory (collector/server/state.py) against what the
server itself prints in SHOW ENGINE INNODB STATUS and INNODB_METRICS, on every fixture with
DWARF.

Sandwiched, so no tolerance is needed under load: the LSN and the checkpoint LSN only grow,
so the server's figure, taken between two reads of ours, lies between them. Levels that go
up and down (dirty, free and data pages, the history) are compared once the load has
stopped and the server gives the same figure before and after our read: then ours must be
that figure exactly. The redo a recording reports is checked in test_redo_writers.

The undo pages in the buffer pool, counted by walking the pool (pool_walk.py), against
INFORMATION_SCHEMA.INNODB_BUFFER_PAGE's UNDO_LOG pages, the same way: a snapshot held
through the load keeps the undo logs, and so their pages, once it stops."""
from __future__ import annotations

import re
import time

import pytest

from conftest import stop_load
from innostall.collector.discovery.target import from_pid
from innostall.collector.server.pool_walk import undo_pages_cached
from innostall.collector.server.state import POOL_GAUGE, open_state, state_plan

SERVERS = ["mariadb-11.4.5", "mariadb-10.2.11", "mariadb-10.4.6", "mariadb-10.11.5"]
STATUS = {"lsn": r"Log sequence number\s+(\d+)", "checkpoint_lsn": r"Last checkpoint at\s+(\d+)",
          "dirty_pages": r"Modified db pages\s+(\d+)", "free_pages": r"Free buffers\s+(\d+)",
          "lru_pages": r"Database pages\s+(\d+)", "history": r"History list length\s+(\d+)"}
LEVELS = ("dirty_pages", "free_pages", "lru_pages", "history", "undo_pages")


def innodb_status(conn) -> dict[str, int]:
    """The server's figures: SHOW ENGINE INNODB STATUS's, and the rollback segments' size
    (INNODB_METRICS trx_rseg_current_size, their curr_size added up; the fixtures enable it)."""
    with conn.cursor() as cur:
        cur.execute("SHOW ENGINE INNODB STATUS")
        text = cur.fetchone()[2]
        cur.execute("SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_current_size'")
        undo_pages = int(cur.fetchone()[0])
    return {**{name: int(re.search(pattern, text)[1]) for name, pattern in STATUS.items()}, "undo_pages": undo_pages}


def undo_pages_in_pool(conn) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM information_schema.INNODB_BUFFER_PAGE WHERE PAGE_TYPE = 'UNDO_LOG'")
        return int(cur.fetchone()[0])


@pytest.mark.parametrize("server_name", SERVERS)
def test_the_state_read_from_memory_is_what_the_server_prints(servers, server_name):
    srv = servers(server_name)
    places = state_plan(from_pid(srv.pid))[0]
    state = open_state(srv.pid, places)
    assert state is not None and {*STATUS, *LEVELS} <= set(state.places), f"{server_name}: {state and list(state.places)}"
    assert POOL_GAUGE in places, f"{server_name}: the pool's layout was not found"
    conn, snapshot = srv.connect(), srv.connect()
    with snapshot.cursor() as cur:  # keeps the load's undo logs until the end
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    load = srv.sysbench("oltp_write_only", 30, "--threads=2")
    try:
        time.sleep(1)
        for _ in range(20):
            before, server, after = state.read(), innodb_status(conn), state.read()
            for name in ("lsn", "checkpoint_lsn"):
                assert before[name] <= server[name] <= after[name], (name, before[name], server[name], after[name])
            assert after["checkpoint_lsn"] <= after["lsn"]
            time.sleep(0.05)
        grew = after["lsn"] - before["lsn"]
    finally:
        stop_load(load)
    compared = {}
    deadline = time.monotonic() + 30
    while set(compared) != set(LEVELS) and time.monotonic() < deadline:
        first, ours, second = innodb_status(conn), state.read(), innodb_status(conn)
        compared.update({name: (ours[name], first[name]) for name in LEVELS if first[name] == second[name]})
        for name, (mine, theirs) in compared.items():
            assert mine == theirs, (name, mine, theirs)
        time.sleep(0.2)
    cached = None
    while cached is None and time.monotonic() < deadline:
        first, ours, second = undo_pages_in_pool(conn), undo_pages_cached(state.memory, srv.pid, places[POOL_GAUGE]), \
            undo_pages_in_pool(conn)
        cached = (ours, first) if first == second else None
    snapshot.close()
    state.close()
    print(f"{server_name}: the LSN grew {grew:,} bytes over one read; levels {compared}; undo pages cached {cached}")
    assert set(compared) == set(LEVELS), "the server's figures never held still for a read"
    assert cached is not None, "the undo pages in the pool never held still for a read"
    assert cached[0] == cached[1] > 0, cached
