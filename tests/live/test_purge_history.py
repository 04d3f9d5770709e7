"""Why purge stalls, against the server's own word: the history list length innostall reads
from the server equals INNODB_METRICS trx_rseg_history_len, and the read view that pins
purge is named by the OS thread the server itself gives for the connection that opened it
(information_schema.PROCESSLIST.TID, performance_schema.threads.THREAD_OS_ID)."""
from __future__ import annotations

import json
import threading
import time

import pytest

from innostall.collector.discovery import discover, target
from innostall.collector.recorder import recorder
from procmem import stop_own_recording

SERVERS = ["mariadb-11.4.5", "mariadb-10.11.5", "mariadb-10.4.6", "mariadb-10.2.11", "mysql-8.0.15", "mysql-9.7.4"]
UPDATES = 3000
PROBES = ["purge_batch", "history_length", "history_empty", "read_view"]


def os_thread_id(conn) -> int:
    """The OS thread serving this connection, as the server reports it."""
    with conn.cursor() as cur:
        for query in ("SELECT TID FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()",
                      "SELECT THREAD_OS_ID FROM performance_schema.threads "
                      "WHERE PROCESSLIST_ID = CONNECTION_ID()"):
            try:
                cur.execute(query)
                row = cur.fetchone()
            except Exception:  # the column or P_S is missing in this release: try the next
                continue
            if row and row[0]:
                return int(row[0])
    pytest.fail("the server gives no OS thread id for a connection")


class PinnedHistory(threading.Thread):
    """Once the probes are in: a connection opens a consistent snapshot, another updates
    rows UPDATES times, then nothing happens while the snapshot pins purge; the server's
    history length is read then. The snapshot commits when the test says so."""

    def __init__(self, srv):
        super().__init__(daemon=True)
        self.srv, self.attached, self.done = srv, threading.Event(), threading.Event()
        self.snapshot = srv.connect()
        self.tid = os_thread_id(self.snapshot)
        with self.snapshot.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            self.connection_id = cur.fetchone()[0]
        self.error = None

    def on_event(self, snapshot):
        if snapshot["type"] == "attached":
            self.attached.set()

    def run(self):
        try:
            self.attached.wait(60)
            self.pin()
        except Exception as e:  # surfaced by the test
            self.error = e
        self.done.set()

    def pin(self):
        writer = self.srv.connect()
        self.history_before = self.srv.metric(writer, "trx_rseg_history_len")
        with self.snapshot.cursor() as cur:
            self.opened = time.monotonic_ns()
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            cur.execute("SELECT COUNT(*) FROM sbtest1")
        with writer.cursor() as cur:
            for i in range(UPDATES):
                cur.execute("UPDATE sbtest1 SET k = k + 1 WHERE id = %s", (1 + i % 500,))
        time.sleep(3)  # updates stopped, purge pinned: the history holds still
        self.history = self.srv.metric(writer, "trx_rseg_history_len")
        self.read_at = time.monotonic_ns()
        # The recording ends once an interval has passed since that read, however long this
        # host took to commit the updates one by one (an fsync or two each)
        time.sleep(1.5)
        stop_own_recording()

    def commit(self):
        with self.snapshot.cursor() as cur:
            cur.execute("COMMIT")


def journal(out) -> list[dict]:
    return [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("server_name", SERVERS)
def test_history_and_the_pinning_view_agree_with_the_server(servers, server_name, tmp_path):
    srv = servers(server_name)
    tgt = target.from_pid(srv.pid)
    probes = [p for p in discover.resolve(tgt, PROBES) if p.ok]
    assert {"history_length", "read_view"} <= {p.name for p in probes}
    load = PinnedHistory(srv)
    load.start()
    try:
        recorder.record(tgt, probes, str(tmp_path / "rec"), duration_s=60, on_event=load.on_event)
    finally:
        load.attached.set()
        load.done.wait(60)
        load.commit()
    assert not load.error, load.error
    tid, opened, theirs, read_at = load.tid, load.opened, load.history, load.read_at
    meta = json.loads((tmp_path / "rec" / "meta.json").read_text())

    lines = journal(tmp_path / "rec")
    snapshots = [r for r in lines if r["type"] in ("interval", "final")]
    nearest = min(snapshots, key=lambda s: abs(s["mono_ns"] - read_at))
    ours = nearest["counters"]["history_length"]
    print(f"{server_name}: history innostall {ours}, trx_rseg_history_len {theirs}, "
          f"{abs(nearest['mono_ns'] - read_at) / 1e6:.0f} ms apart")
    assert nearest["counters"]["history_reads"] > 0
    assert theirs >= UPDATES * 0.9
    assert abs(ours - theirs) <= 0.02 * theirs

    after = [r for r in lines if r["type"] == "read_views" and r["mono_ns"] > read_at - 2e9]
    assert after, "no read-view line while the snapshot was open"
    for views in after:
        oldest = views["views"][0]
        print(f"  oldest view: tid {oldest['tid']} (server: {tid}), opened "
              f"{(oldest['opened_ns'] - opened) / 1e9:+.3f} s from the test's clock, "
              f"{oldest['folded'].split(';')[-1][:60]}")
        assert oldest["tid"] == tid
        assert abs(oldest["opened_ns"] - opened) < 1e9
        # read as it opened, before any of the updates: what the server said just before,
        # give or take what purge removed meanwhile (its gauge is read once a batch)
        assert oldest["history_at_open"] is None or oldest["history_at_open"] < load.history_before + UPDATES / 2
        assert oldest["folded"] not in ("", "[unknown]")  # where it opened: the caller's stack
        if meta["sql"]["access"]:  # the fixtures let root in: the connection is named too
            assert oldest["connection_id"] == load.connection_id and oldest["user"] == "innostall"
    assert meta["sql"]["access"], meta["sql"]


@pytest.mark.parametrize("server_name", ["mariadb-11.4.5", "mysql-8.0.15"])
def test_a_view_opened_before_the_recording_is_named_by_sql(servers, server_name, tmp_path):
    """The probes cannot see a view opened before they were attached, and on MySQL a
    transaction reading again does not reopen it: the walk of the server's memory or SQL
    access names it, with its transaction's start (whole seconds either way)."""
    srv = servers(server_name)
    snapshot = srv.connect()
    tid = os_thread_id(snapshot)
    with snapshot.cursor() as cur:
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.execute("SELECT COUNT(*) FROM sbtest1")
    opened_real = time.time()
    time.sleep(2)
    tgt = target.from_pid(srv.pid)
    probes = [p for p in discover.resolve(tgt, PROBES) if p.ok]
    try:
        recorder.record(tgt, probes, str(tmp_path / "rec"), duration_s=3)
    finally:
        snapshot.rollback()
    lines = journal(tmp_path / "rec")
    attached = next(r for r in lines if r["type"] == "attached")
    views = [r for r in lines if r["type"] == "read_views"][-1]["views"]
    named = [v for v in views if v["tid"] == tid]
    assert named, views
    view = named[0]
    opened_before_s = (attached["mono_ns"] - view["opened_ns"]) / 1e9
    print(f"{server_name}: {view['source']} view of connection {view['connection_id']}, opened "
          f"{opened_before_s:.1f} s before the attach (the test: "
          f"{attached['real_ns'] / 1e9 - opened_real:.1f} s)")
    # read from the server's memory where its DWARF lets us walk the transactions (MariaDB
    # 11.4.5), else only SQL could name it (MySQL 8.0.15, stripped)
    meta = json.loads((tmp_path / "rec" / "meta.json").read_text())
    assert view["source"] == ("memory" if meta["read_views_from_memory"]["read"] else "sql")
    assert view["seen_open"] and view["connection_id"] is not None
    # INNODB_TRX gives whole seconds: the start is known to within one
    assert abs(opened_before_s - (attached["real_ns"] / 1e9 - opened_real)) < 1.5


@pytest.mark.parametrize("server_name", ["mariadb-11.4.5", "mariadb-10.11.5", "mariadb-10.4.6", "mariadb-10.2.11"])
def test_a_view_no_probe_saw_open_is_read_from_memory_within_an_interval(servers, server_name, tmp_path):
    """Without the read_view probe, the view that pins purge is read from the server's memory
    (collector/server/view_walk.py) at the first interval after it opened, with the OS thread
    and connection the server gives. The builds with DWARF: the walk follows their
    transactions' list, which each family keeps its own way."""
    srv = servers(server_name)
    tgt = target.from_pid(srv.pid)
    probes = [p for p in discover.resolve(tgt, ["purge_batch", "history_length"]) if p.ok]
    snapshot = srv.connect()
    tid = os_thread_id(snapshot)
    with snapshot.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        connection_id = cur.fetchone()[0]
    attached, opened = threading.Event(), {}

    def pin():
        attached.wait(60)
        time.sleep(1.2)  # the first walk, at attach, sees no view of it
        with snapshot.cursor() as cur:
            opened["before"] = time.monotonic_ns()
            cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            opened["after"] = time.monotonic_ns()
        time.sleep(2.5)
        stop_own_recording()

    pinning = threading.Thread(target=pin, daemon=True)
    pinning.start()
    try:
        recorder.record(tgt, probes, str(tmp_path / "rec"), duration_s=30,
                        on_event=lambda rec: rec["type"] == "attached" and attached.set())
    finally:
        attached.set()
        pinning.join(60)
        snapshot.rollback()
    meta = json.loads((tmp_path / "rec" / "meta.json").read_text())
    assert meta["read_views_from_memory"] == {"read": True}, meta["read_views_from_memory"]
    lines = journal(tmp_path / "rec")
    sightings = [(r["mono_ns"], v) for r in lines if r["type"] == "read_views" for v in r["views"]
                 if v["tid"] == tid]
    assert sightings, "the pinning view was never read"
    seen_ns, view = sightings[0]
    interval_ns = meta["interval_s"] * 1e9
    print(f"{server_name}: view of connection {view['connection_id']} (tid {view['tid']}) first seen "
          f"{(view['opened_ns'] - opened['after']) / 1e9:.3f} s after it opened")
    assert (view["source"], view["connection_id"], view["seen_open"]) == ("memory", connection_id, True)
    # read once an interval, when the recorder takes the loader's line (a few ms later)
    assert opened["before"] <= view["opened_ns"] <= opened["after"] + interval_ns + 0.5e9
