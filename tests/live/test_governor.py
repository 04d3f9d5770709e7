"""The cost governor against a real server: with a budget far below what the probes cost
under load, the hot groups must be sampled, reported so, and whatever they do measure must
still be whole. Ground truth: a snapshot reading a row updated DEEP times since it began
builds exactly DEEP versions, every time."""
from __future__ import annotations

import os
import subprocess
import threading

from conftest import INNOSTALL, stop_load
from innostall.analysis import recording, summary, views
from innostall.collector.discovery import discover, target
from recordings import NO_PATIENCE, record_at_once

SERVER = "mariadb-11.4.5"
BUDGET = 0.2  # % of the server's CPU: far below what the steps of the deep reads cost
DEEP = 300
READ = "SELECT k FROM innostall_deep WHERE id = 1"
ATTEMPTS = 4
TICK_MS = 20  # how often the governor checks a sampled group (TICK_NS in collector/loader/governor.c)


def deep_row_snapshot(srv):
    """A snapshot, then DEEP updates of a row no load touches: every read of it from the
    snapshot builds exactly DEEP versions."""
    reader, writer = srv.connect(), srv.connect()
    with writer.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS innostall_deep")
        cur.execute("CREATE TABLE innostall_deep (id INT PRIMARY KEY, k INT) ENGINE=InnoDB")
        cur.execute("INSERT INTO innostall_deep VALUES (1, 0)")
    with reader.cursor() as cur:
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.execute(READ)
    with writer.cursor() as cur:
        for _ in range(DEEP):
            cur.execute("UPDATE innostall_deep SET k = k + 1 WHERE id = 1")
    return reader


def read_deep_row_until(stop: threading.Event, conn, reads: list[int]) -> None:
    with conn.cursor() as cur:
        while not stop.is_set():
            cur.execute(READ)
            assert cur.fetchone()[0] == 0  # the snapshot's value, DEEP versions back
            reads.append(1)


def sampled_recording(srv, tgt, probes, out: str) -> tuple[recording.Recording, int]:
    """8 s at the small budget under load, a snapshot reading the deep row all along:
    the recording and how many deep reads it made."""
    reader = deep_row_snapshot(srv)
    load = srv.sysbench("oltp_read_write", 20, "--threads=4", "--rand-type=pareto")
    stop, reads = threading.Event(), []
    deep_reads = threading.Thread(target=read_deep_row_until, args=(stop, reader, reads))
    deep_reads.start()
    try:
        # at once (recordings.NO_PATIENCE): the loader calibrates and the governor runs in the
        # recorder's own cgroup at any patience (loader.c leaves the idle one first), so only the
        # start's and the tables' waits for idle CPU go, under this load up to 5 s each
        record_at_once(tgt, probes, out, duration_s=8, budget_pct=BUDGET)
    finally:
        stop.set()
        deep_reads.join()
        reader.rollback()
        stop_load(load)
    return recording.load(out), len(reads)


def test_sampled_walks_are_whole_and_reported_as_sampled(servers, tmp_path):
    srv = servers(SERVER)
    tgt = target.from_pid(srv.pid)
    # the walk's probes alone: with the default set, the scheduler tracepoints and latch
    # probes share this small budget, and in a slow root no walk was stepped whole in 8 s
    probes = discover.resolve(tgt, discover.select("version_walk,version_step"))
    # A deep read is measured only where the walk's window and the steps' overlap, and the
    # governor places each group's window at random in each interval: a recording on a slow
    # host may hold no such overlap (a fresh root: 130 walks measured, none of the deep row).
    # So up to four recordings, until one measured a deep read; each is checked whole.
    for attempt in range(ATTEMPTS):
        rec, deep_reads = sampled_recording(srv, tgt, probes, str(tmp_path / f"rec{attempt}"))
        full = summary.summary(rec)
        walks, cost = full["version_walk"], full["governor"]
        print(f"{deep_reads} deep reads; walks {walks}; cost {cost}")
        # the steps were sampled, and said so
        assert "version_step" in cost["sampled"]
        assert 0 < cost["groups"]["version_step"]["coverage"] < 0.9
        assert walks["reads_unstepped"] > 0  # reads stepped: only where the windows overlapped
        assert cost["hits_per_s"]["version_step"] > 0 and cost["hit_cost_ns"]["entry"] > 0
        assert cost["hit_cost_ns"]["indirect_factor"] > 1  # uprobe hits counted for the server around them
        # what was measured is whole: a walk of the deep row is exactly DEEP versions deep
        assert set(rec.walks["depth"]) <= {DEEP} and walks["max_depth"] <= DEEP
        # The governor kept its estimate within what it can promise (the bench measures the
        # real cost): the budget, plus what a window spends between the governor's checks past
        # its allowance. Hits come in bursts (a deep read is DEEP steps), so a window may run
        # up to a check period (TICK_NS, governor.c) past it on every CPU, each hit counted
        # indirect_factor times over. Over 8 s at 0.2% that is several budgets, so 2x held on
        # one host and not on a slower, busier one (0.468% in a fresh root).
        windows = sum(g["windows"] for g in cost["groups"].values())
        overshoot_ms = windows * TICK_MS * os.cpu_count() * cost["hit_cost_ns"]["indirect_factor"]
        assert cost["overhead_ms"] <= cost["budget_ms"] + overshoot_ms, (cost, overshoot_ms)
        assert "[sampled: attached" in views.text_report(rec)
        if len(rec.walks):
            break
    assert len(rec.walks) > 0 and walks["reads"] > 0 and walks["max_depth"] == DEEP, \
        f"no deep read measured in {ATTEMPTS} recordings"
    assert srv.serves()


def test_exact_keeps_everything_attached(servers, tmp_path):
    srv = servers(SERVER)
    load = srv.sysbench("oltp_read_write", 12, "--threads=4", "--rand-type=pareto")
    try:
        done = subprocess.run(INNOSTALL + ["record", "--pid", str(srv.pid), "--duration", "4",
                                           "--exact", *NO_PATIENCE, "-o", str(tmp_path / "rec")],
                              capture_output=True, text=True, timeout=60)
    finally:
        stop_load(load)
    assert done.returncode == 0, done.stderr
    cost = summary.summary(recording.load(str(tmp_path / "rec")))["governor"]
    assert cost["budget_pct"] is None and cost["sampled"] == []
    assert all(g["windows"] == 1 for g in cost["groups"].values())


def test_bad_budget_is_one_line(servers, tmp_path):
    srv = servers(SERVER)
    for bad in ("0", "-1", "lots"):
        done = subprocess.run(INNOSTALL + ["record", "--pid", str(srv.pid), "--budget", bad,
                                           "-o", str(tmp_path / "rec")], capture_output=True, text=True)
        assert done.returncode == 2 and "--budget" in done.stderr
        assert "Traceback" not in done.stderr
    done = subprocess.run(INNOSTALL + ["record", "--pid", str(srv.pid), "--budget", "150",
                                       "-o", str(tmp_path / "rec")], capture_output=True, text=True)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
