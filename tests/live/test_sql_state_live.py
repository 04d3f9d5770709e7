"""MySQL's state read by SQL (collector/server/sql_state.py) in a real recording, against
the server's own figures read independently by the test: SHOW ENGINE INNODB STATUS (a
statement the recorder does not run while INNODB_METRICS or the status give the LSN), polled
every POLL_S from a session of the test's own, through the recording, under a write load.

The recorder reads by SQL when a snapshot (stamped at monotonic time M by the loader)
reaches it, and waits up to FRESH_WAIT_S for the answer, else takes the read the snapshot
before asked for. So the figure it holds is the server's at some moment of
[M - interval, M + FRESH_WAIT_S], which the test brackets by its last poll read before that
window and its first poll begun after it. The LSN and the checkpoint LSN only grow: each
must lie between the lowest and the highest of the bracket's polls. The levels (dirty and
free pages, the history) can rise and fall back between two polls (a fresh root saw the
dirty pages at 0, 5 read by us, 0), so they are compared only in a bracket through which
the LSN held still: no redo written, so no page dirtied and no undo log added to the
history or purged from it. Pages are then only cleaned or read in, so the history holds and
the dirty and free pages can only fall (the LRU frees no page while the free list is longer
than its scan depth, as a quiet fixture's is), and ours must lie between the bracket's
lowest and highest. The load stops LOAD_S into the recording and the recording goes on
QUIET_S past it, so such brackets come. No tolerance beyond the bracket, which holds on any
machine where one read takes less than an interval (measured: 14 ms at worst on the loaded
2-core fixture host; docs/overhead.md); no figure hard-coded: each is the server's."""
from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import INNOSTALL, innostall, stop_load
from innostall.analysis import recording
from innostall.analysis.redo import redo_summary
from innostall.analysis.wording.redo_words import redo_lines
from innostall.collector.discovery import discover
from innostall.collector.discovery.target import from_pid
from innostall.collector.server import sql
from innostall.collector.server import state as memory_state
from innostall.collector.server.latch_names import ServerMemory
from innostall.collector.server.sql_state import FRESH_WAIT_S, SQL_GAUGES, SqlState
from test_record_purge import wait_for_line
from recordings import record_at_once

SERVERS = ["mysql-8.0.15", "mysql-9.7.4"]
POLL_S = 0.1
INTERVAL_S = 1.0
LOAD_S, QUIET_S = 4, 8  # the load's seconds into the recording, and the recording's after it
GROWING = ("lsn", "checkpoint_lsn")
LEVELS = ("dirty_pages", "free_pages", "history")
MONITOR = {"lsn": r"^Log sequence number\s+(\d+)", "checkpoint_lsn": r"^Last checkpoint at\s+(\d+)",
           "dirty_pages": r"^Modified db pages\s+(\d+)", "free_pages": r"^Free buffers\s+(\d+)",
           "history": r"^History list length\s+(\d+)"}


class Poller(threading.Thread):
    """The server's figures from SHOW ENGINE INNODB STATUS every POLL_S:
    [(began, read, {name: value})], the figures being the server's at a moment in [began, read]."""

    def __init__(self, conn):
        super().__init__(daemon=True)
        self.conn, self.seen, self.stopping = conn, [], threading.Event()

    def run(self):
        while not self.stopping.wait(POLL_S):
            began = time.monotonic()
            with self.conn.cursor() as cur:
                cur.execute("SHOW ENGINE INNODB STATUS")
                text = cur.fetchone()[2]
            figures = {name: int(re.search(p, text, re.MULTILINE)[1]) for name, p in MONITOR.items()}
            self.seen.append((began, time.monotonic(), figures))

    def until(self, moment: float) -> None:
        """Wait for a poll begun at `moment` or later."""
        while self.is_alive() and not (self.seen and self.seen[-1][0] >= moment):
            time.sleep(POLL_S)

    def bracket(self, start: float, end: float) -> list[dict] | None:
        """The polls from the last read before `start` to the first begun after `end`; None
        when the test has no poll on one side."""
        before = [i for i, (_, read, _) in enumerate(self.seen) if read <= start]
        after = [i for i, (began, _, _) in enumerate(self.seen) if began >= end]
        if not before or not after:
            return None
        return [figures for _, _, figures in self.seen[before[-1]:after[0] + 1]]

    def around(self, name: str, at: float) -> list[tuple[float, int]]:
        """The polls of the two seconds before `at` and the one after, as (seconds from at, value)."""
        return [(round(read - at, 3), figures[name]) for _, read, figures in self.seen if at - 2 <= read <= at + 1]


def snapshots(out: str) -> list[dict]:
    lines = [json.loads(line) for line in Path(out, "journal.jsonl").read_text().splitlines()]
    return [rec for rec in lines if rec.get("type") in ("interval", "final") and rec.get("server")]


@pytest.mark.parametrize("route", ["sql", "memory"])
@pytest.mark.parametrize("server_name", SERVERS)
def test_the_state_read_by_sql_is_the_servers_own(servers, server_name, route, tmp_path, monkeypatch):
    """route "sql": every figure by SQL (the offsets from the build's code set aside);
    "memory": with --no-sql, the LSN and the checkpoint LSN read through log_sys, the dirty
    and free pages through buf_pool_ptr, at the offsets the build's machine code gave
    (collector/discovery/log_code.py, pool_code.py), and the history through trx_sys at the
    catalog's offset the code confirmed (machine_code.py): the same bounds."""
    srv = servers(server_name)
    tgt = from_pid(srv.pid)
    if route == "sql":
        monkeypatch.setattr(memory_state, "code_places", lambda target, bias: ({}, {"note": "set aside by the test"}))
    probes = [p for p in discover.resolve(tgt, ["purge_batch"]) if p.ok]
    out = str(tmp_path / "rec")
    poller = Poller(srv.connect())
    poller.start()
    load = srv.sysbench("oltp_write_only", 60, "--threads=2")
    stopped_at = []

    def stop():
        stop_load(load)
        stopped_at.append(time.monotonic())

    # LOAD_S from the attach, however long the start took (on a busy 2-core host, the load
    # timed from before the start was over before the first snapshot)
    stopper = threading.Timer(LOAD_S, stop)

    def on_event(event: dict):
        if event.get("type") == "attached" and not stopper.is_alive():
            stopper.start()

    try:
        # at once (recordings.record_at_once): the state is read from the attach on
        meta = record_at_once(tgt, probes, out, duration_s=LOAD_S + QUIET_S, interval_s=INTERVAL_S,
                              use_sql=route == "sql", on_event=on_event)
        poller.until(time.monotonic() + FRESH_WAIT_S)  # a poll after the last snapshot's window
    finally:
        stopper.cancel()
        if stopper.is_alive():
            stopper.join()
        stop_load(load)
        poller.stopping.set()
        poller.join()
    state = meta["server_state"]
    read = MONITOR  # by SQL, or from memory at offsets the build's code gave (or confirmed: the history)
    assert {name: state["sources"].get(name) for name in MONITOR} == {name: route if name in read else None
                                                                       for name in MONITOR}, state
    taken = snapshots(out)
    assert len(taken) >= 4, f"{len(taken)} snapshots carried the state"
    compared = {name: 0 for name in read}
    for rec in taken:
        at = rec["mono_ns"] / 1e9
        polls = poller.bracket(at - INTERVAL_S, at + FRESH_WAIT_S)
        assert polls, f"the test read no figure on each side of {at}"
        lsn_held = polls[0]["lsn"] == polls[-1]["lsn"]
        for name in read:
            if name in GROWING or lsn_held:
                low, high = min(p[name] for p in polls), max(p[name] for p in polls)
                assert low <= rec["server"][name] <= high, (
                    server_name, name, rec["server"][name], (low, high), poller.around(name, at),
                    stopped_at and round(stopped_at[0] - at, 3), [round(r["mono_ns"] / 1e9 - at, 3) for r in taken])
                compared[name] += 1
        assert rec["server"]["checkpoint_lsn"] <= rec["server"]["lsn"]
    assert all(compared.values()), f"{server_name}: a level never compared at a snapshot: {compared}"
    summary = redo_summary(recording.load(out))
    first, last = taken[0]["server"]["lsn"], taken[-1]["server"]["lsn"]
    assert summary["redo"]["bytes"] == last - first > 0
    assert summary["checkpoint"]["age_max_bytes"] > 0
    if route == "memory":
        said = state["from_code"]["log_t"]
        assert said["sn"].split()[1] == "from" and said["last_checkpoint_lsn"].split()[1] == "from", said
        assert state["from_code"]["buf_pool_t"].startswith("from "), state["from_code"]
        assert state["from_code"]["trx_rseg_t"].startswith("from "), state["from_code"]
        assert summary["buffer_pool"]["dirty_pages_max"] > 0
        print(f"{server_name}: the LSN, checkpoint and pool lists from memory, compared {compared}; offsets {said}, "
              f"pool lists {state['from_code']['buf_pool_t']}")
        return
    assert summary["checkpoint"]["async_flush_age"] and summary["checkpoint"]["sync_flush_age"]  # the fixtures enable the metrics
    assert summary["buffer_pool"]["dirty_pages_max"] > 0 and summary["buffer_pool"]["free_pages_min"] is not None
    assert summary["undo_space"] and summary["undo_space"]["file_bytes_max"] > 0
    assert any("read by SQL" in line for line in redo_lines(summary)), redo_lines(summary)
    print(f"{server_name}: figures compared {compared}; redo {summary['redo']['bytes']:,} bytes, "
          f"checkpoint age at most {summary['checkpoint']['age_max_bytes']:,}, dirty pages at most "
          f"{summary['buffer_pool']['dirty_pages_max']:,}, undo files {summary['undo_space']['file_bytes_max']:,} bytes")


# The counters a real server may have disabled (innodb_monitor_disable): without them the LSN
# comes from 8.0.30+'s status, or from SHOW ENGINE INNODB STATUS before it.
OPTIONAL_METRICS = ("log_lsn_current", "log_lsn_last_checkpoint", "trx_rseg_history_len",
                    "log_max_modified_age_async", "log_max_modified_age_sync")


def monitor_figures(conn) -> dict[str, int]:
    with conn.cursor() as cur:
        cur.execute("SHOW ENGINE INNODB STATUS")
        text = cur.fetchone()[2]
    return {name: int(re.search(p, text, re.MULTILINE)[1]) for name, p in MONITOR.items()}


@pytest.mark.parametrize("server_name", SERVERS)
def test_with_the_log_metrics_disabled_the_lsn_comes_from_the_fallback(servers, server_name):
    srv = servers(server_name)
    conn = srv.connect()
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        version = tuple(int(part) for part in re.match(r"(\d+)\.(\d+)\.(\d+)", cur.fetchone()[0]).groups())
        for name in OPTIONAL_METRICS:
            cur.execute("SET GLOBAL innodb_monitor_disable = %s", (name,))
    load = srv.sysbench("oltp_write_only", 30, "--threads=2")
    try:
        session, why = sql.connect(srv.pid)
        assert session, why
        time.sleep(1)
        before = monitor_figures(conn)
        reader = SqlState.start(session, SQL_GAUGES)
        assert reader, "nothing was read"
        read = reader.gauges()
        after = monitor_figures(conn)
        reader.close()
    finally:
        stop_load(load)
        with conn.cursor() as cur:
            for name in OPTIONAL_METRICS:
                cur.execute("SET GLOBAL innodb_monitor_enable = %s", (name,))
    fallback = "status" if version >= (8, 0, 30) else "monitor"
    for name in GROWING:
        # 8.0.30+'s Innodb_redo_log_current_lsn is not the monitor's 'Log sequence number' to
        # the byte: on the fresh root 9.7.4's read 11,481 bytes below the LSN the monitor had
        # printed just before it. It is held between what no later LSN can be below (the
        # checkpoint before) and the LSN after.
        low = before["checkpoint_lsn"] if fallback == "status" and name == "lsn" else before[name]
        assert low <= read[name] <= after[name], (server_name, fallback, name, low, read[name], after[name])
    assert "async_flush_age" not in read and "sync_flush_age" not in read  # never guessed
    assert ("history" in read) == (fallback == "monitor"), read  # only the monitor's text has it besides the metric
    print(f"{server_name}: LSN by {fallback} {read['lsn']:,}; the monitor's before {before['lsn']:,} "
          f"(checkpoint {before['checkpoint_lsn']:,}), after {after['lsn']:,}")


ACCEPTANCE_LOAD_S = 10


def undo_files_size(conn) -> int:
    with conn.cursor() as cur:
        cur.execute("SELECT SUM(TOTAL_EXTENTS * EXTENT_SIZE) FROM information_schema.FILES WHERE FILE_TYPE = 'UNDO LOG'")
        return int(cur.fetchone()[0])


def monitor_lsn(conn) -> int:
    with conn.cursor() as cur:
        cur.execute("SHOW ENGINE INNODB STATUS")
        return int(re.search(MONITOR["lsn"], cur.fetchone()[2], re.MULTILINE)[1])


@pytest.mark.parametrize("sql_access", ["sql", "no-sql"])
@pytest.mark.parametrize("server_name", SERVERS)
def test_a_users_recording_has_the_redo_checkpoint_pool_and_undo(servers, server_name, sql_access, tmp_path):
    """Issue 46's acceptance, as a user runs it: `record --exact --probes default,redo_write`
    (with --no-sql too) under 10 s of oltp_update_non_index, then `report --json`. redo.bytes
    (the LSN's growth from the first snapshot to the last) is the server's own growth between
    its LSN read just after the first snapshot and just after the recording, within 5% + 1 MB
    (outside the load the server only writes KB: the master thread, purge); the checkpoint
    age positive; the dirty pages from memory; the undo tablespaces' size from the files the
    server holds open, equal to INFORMATION_SCHEMA.FILES's; the rollback segments' pages
    in bytes (undo_space.bytes_max) from memory; and the summary says every figure's source
    (sql, or memory at the offsets the build's code gave)."""
    srv = servers(server_name)
    conn, out = srv.connect(), tmp_path / "rec"
    extra = ["--no-sql"] if sql_access == "no-sql" else []
    record = subprocess.Popen(INNOSTALL + ["record", "--pid", str(srv.pid), "--exact", "--probes", "default,redo_write",
                                           "--duration", "120", "-o", str(out), *extra], stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(out / "journal.jsonl", "interval", timeout=120)  # a busy host's start
        before = monitor_lsn(conn)
        load = srv.sysbench("oltp_update_non_index", ACCEPTANCE_LOAD_S, "--threads=2")
        try:
            load.wait(timeout=ACCEPTANCE_LOAD_S + 30)
        finally:
            stop_load(load)
        time.sleep(1.5)  # the load's last redo in a snapshot
    finally:
        record.send_signal(signal.SIGINT)
        assert record.wait(timeout=60) == 0, record.stderr.read()
    grown = monitor_lsn(conn) - before
    told = json.loads(innostall("report", "--json", str(out)).stdout)
    redo, checkpoint, pool, undo, said = (told[k] for k in ("redo", "checkpoint", "buffer_pool", "undo_space",
                                                            "server_state"))
    print(f"{server_name} {sql_access}: redo.bytes {redo['bytes']:,}, the server's LSN grew {grown:,}; checkpoint "
          f"age at most {checkpoint['age_max_bytes']:,}; sources {said['sources']}")
    assert grown > 1 << 20, "the load wrote too little redo to compare"
    assert abs(redo["bytes"] - grown) <= 0.05 * grown + (1 << 20)
    assert checkpoint["age_max_bytes"] > 0
    assert set(said["read"]) <= set(said["sources"]), said  # every figure with its source
    assert pool["dirty_pages_max"] > 0
    assert {said["sources"][g] for g in ("lsn", "checkpoint_lsn", "dirty_pages")} == {"memory"}, said
    # the undo tablespaces' size from the files the server holds open, as the server's own table gives it
    assert said["sources"]["undo_file_bytes"] == "files"
    assert undo["file_bytes_last"] == undo_files_size(conn) > 0
    # the rollback segments' pages, from memory along the chain the build's code gave (rseg_code.py),
    # SQL or not: with it, no statement for them (test_the_segments_pages_from_memory_are_the_servers_count)
    assert undo["bytes_max"] > 0 and said["sources"]["undo_pages"] == said["sources"]["page_size"] == "memory", said
    print(f"{server_name} {sql_access}: undo_space.bytes_max {undo['bytes_max']:,} ({undo['pages_max']:,} pages)")


PAGES_METRIC = "trx_rseg_current_size"
SETTLE_S, SETTLE_WAIT_S = 1.0, 60
CUT_SEGMENTS = 16  # innodb_rollback_segments for the cut's check (default 128)


def settle(srv, conn, reader, memory) -> None:
    """Wait until neither the history nor the segments' pages move through SETTLE_S: purge
    has freed all it will, so that what a pinned view holds can only grow."""
    deadline = time.monotonic() + SETTLE_WAIT_S
    last = None
    while time.monotonic() < deadline:
        now = (srv.metric(conn, "trx_rseg_history_len"), srv.metric(conn, PAGES_METRIC), reader.read(memory))
        if now == last:
            return
        last = now
        time.sleep(SETTLE_S)
    pytest.fail(f"the server never held still for {SETTLE_S} s in {SETTLE_WAIT_S} s: {last}")


@pytest.mark.parametrize("server_name", SERVERS)
def test_the_segments_pages_from_memory_are_the_servers_count(servers, server_name):
    """undo_pages read with --no-sql's route (the chain the build's code gave, rseg_code.py)
    against INNODB_METRICS's trx_rseg_current_size, ours read between two of the server's.
    Quiet, the three are one figure, and so with innodb_rollback_segments lowered (the cut
    the server's walk makes). Under a load of updates while another session holds a read
    view opened once purge had settled, no undo page can be freed (purge keeps every log the
    view may need; updates leave no insert undo to free at commit): the figure only grows, so
    ours lies between the server's before and after on any host, however slow."""
    srv = servers(server_name)
    conn, pinning = srv.connect(), srv.connect()
    tgt = from_pid(srv.pid)
    places, said = memory_state.code_places(tgt, tgt.runtime_address(0))
    assert "undo_pages" in places, said["from_code"]["trx_rseg_t"]
    reader, memory = places["undo_pages"], ServerMemory(srv.pid)
    with conn.cursor() as cur:
        cur.execute("SELECT STATUS FROM information_schema.INNODB_METRICS WHERE NAME = %s", (PAGES_METRIC,))
        was_off = cur.fetchone()[0] != "enabled"
        cur.execute("SELECT @@innodb_rollback_segments")
        segments_setting = int(cur.fetchone()[0])
        if was_off:
            cur.execute("SET GLOBAL innodb_monitor_enable = %s", (PAGES_METRIC,))
    load, brackets = None, []
    try:
        settle(srv, conn, reader, memory)
        quiet = (srv.metric(conn, PAGES_METRIC), reader.read(memory), srv.metric(conn, PAGES_METRIC))
        assert quiet[0] == quiet[1] == quiet[2] > 0, quiet
        with conn.cursor() as cur:
            cur.execute("SET GLOBAL innodb_rollback_segments = %s", (CUT_SEGMENTS,))
        cut = (srv.metric(conn, PAGES_METRIC), reader.read(memory), srv.metric(conn, PAGES_METRIC))
        assert cut[0] == cut[1] == cut[2] < quiet[1], (cut, quiet)
        with conn.cursor() as cur:
            cur.execute("SET GLOBAL innodb_rollback_segments = %s", (segments_setting,))
        settle(srv, conn, reader, memory)
        with pinning.cursor() as cur:
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            cur.execute("SELECT COUNT(*) FROM sbtest1")
        load = srv.sysbench("oltp_update_non_index", 8, "--threads=2")
        time.sleep(1)  # the load under way
        ends = time.monotonic() + 5
        while time.monotonic() < ends:
            brackets.append((srv.metric(conn, PAGES_METRIC), reader.read(memory), srv.metric(conn, PAGES_METRIC)))
            time.sleep(0.2)
    finally:
        if load:
            stop_load(load)
        pinning.close()
        with conn.cursor() as cur:
            cur.execute("SET GLOBAL innodb_rollback_segments = %s", (segments_setting,))
            if was_off:
                cur.execute("SET GLOBAL innodb_monitor_disable = %s", (PAGES_METRIC,))
        memory.close()
    assert all(before <= ours <= after for before, ours, after in brackets), brackets
    grew = brackets[-1][2] - brackets[0][0]
    assert grew > 0, f"the load grew no undo page: {brackets}"
    print(f"{server_name}: {said['from_code']['trx_rseg_t']}; quiet {quiet[1]:,} pages (the server's too), "
          f"{cut[1]:,} with innodb_rollback_segments={CUT_SEGMENTS}; under load {len(brackets)} readings, each "
          f"between the server's before and after, {grew:,} pages grown")
