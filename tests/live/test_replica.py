"""A real replica (scripts/replica.sh): the fixture server as the primary, a copy of its
data replicating from it over TCP on 127.0.0.1, under a write load on the primary.

What is checked against the replica's own account:
- it replicated: each sysbench table's checksum on the replica equals the primary's once
  the replica says it has applied everything the primary wrote;
- the threads innostall calls replication appliers (role "replication applier", from each
  thread's name or the frames of its stack: innostall/format/roles.py), among those that
  wrote redo on the replica (probe redo_write), are the applier threads the replica's own
  thread table names (MariaDB: information_schema.PROCESSLIST's Slave_SQL and Slave_worker
  rows, their TID; MySQL: performance_schema.threads' replica_sql and replica_worker, their
  THREAD_OS_ID), and they wrote most of its redo: the replica runs no load of its own, so
  every row change on it is theirs (the rest is purge working off their history, and
  background threads).
- innostall's own applier threads (the appliers table: the threads that ran the applier_event
  probe's spans) are among the replica's, and applied the events the replica counts
  (MariaDB: Executed_log_entries, counted per event applied; MySQL 9.7.4: the Replication
  Applier Metrics component's events committed; MySQL 8.0.15, which has no such component,
  with its SQL thread alone: the events of its relay log its position passed);
Both appliers: MariaDB's and MySQL 8.0.15's single SQL thread (0 workers; MySQL 8.4+ has none
and takes 0 as 1) and 4 parallel workers. On the pairs of the stall below, these are checked
on its recording with every probe attached, a load that passes through the same appliers.

And a stall made on purpose: on the replica a transaction holds every row of a table the
primary's load updates, for HOLD_S seconds. The applier waits for those rows' locks, and
only the applier waits on the replica: the time innostall charges to the applier's row-lock
waits is the replica's own count of row-lock wait time (Innodb_row_lock_time, ms), and the
phase around the hold says so (with every probe attached, --exact); and at the default
budget, where the applier's event probe is sampled, its row-lock time is whole all the
same: its waits are charged by the thread's role (probes/applier.bpf.c). (Whether a phase
that was attached less than half its time is named is the analysis's rule: it calls it
unwatched, analysis/replica.py.)

And the applier's waits for the redo log at commit, switched off by the server's own
settings: with commits that write the log to the page cache and do not sync it, the wait
an event all but vanishes."""
from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from conftest import INNOSTALL, REPO, Server, stop_load
from innostall.analysis import recording
from test_record_purge import wait_for_line, wait_until_purge_idle

REPLICA = REPO / "scripts" / "replica.sh"
PAIRS = [("mariadb-11.4.5", 0), ("mariadb-11.4.5", 4), ("mysql-9.7.4", 4), ("mysql-8.0.15", 0), ("mysql-8.0.15", 4)]
APPLIERS = {  # the replica's own table of its applier threads, and their OS thread ids
    "mariadb": "SELECT TID FROM information_schema.PROCESSLIST WHERE COMMAND IN ('Slave_SQL', 'Slave_worker')",
    "mysql": "SELECT THREAD_OS_ID FROM performance_schema.threads WHERE NAME IN "
             "('thread/sql/replica_sql', 'thread/sql/replica_worker', 'thread/sql/slave_sql', 'thread/sql/slave_worker')",
}
APPLIED_SHARE = 0.5  # of the replica's redo, at least, written by its appliers
STALL_PAIRS = [("mariadb-11.4.5", 0), ("mysql-9.7.4", 4), ("mysql-8.0.15", 0)]
# the stall's exact run checks the appliers' names too (its load passes through the same
# pair): the test of the names alone runs on the other pairs
NAMED_PAIRS = [p for p in PAIRS if p not in STALL_PAIRS]
NAMED_PROBES = "default,redo_write,purge_task"
HOLD_S = 6  # the rows held on the replica
BUDGETS = [["--exact"], []]  # every probe attached; the default budget
# a call of MySQL's commit-order wait beyond the wait the server times: its traps (3 µs on
# this VM), its bookkeeping under the queue's mutex, which the 4 workers contend for, and a
# worker preempted inside it on 2 cores. Measured: 13 µs a call alone; 48 and 55 µs with the
# 4 workers and the load on 2 cores (2,425 and 1,786 commits: CI's once went over 50 µs)
COMMIT_CALL_NS = 100_000
# MariaDB times a row-lock wait with a coarse clock (my_hrtime_coarse: the kernel's tick, at
# most 10 ms at HZ=100) and both families count whole milliseconds: per wait, this much
ROW_LOCK_WAIT_SLACK_MS = 11


def replica_sh(server: str, *args: str) -> str:
    done = subprocess.run([str(REPLICA), server, *args], capture_output=True, text=True)
    assert done.returncode == 0, f"replica.sh {server} {' '.join(args)}: {done.stderr.strip()}"
    return done.stdout


@pytest.fixture(scope="module")
def replicating(servers):
    """The servers replicating to a replica of theirs, and the number of parallel appliers
    each has; afterwards each primary alone again, as the other tests expect it. A setup
    copies the primary's data and restarts both servers, and a stop restarts the primary,
    5-27 s each: each pair is set up once, by the first test that asks for it, and kept until
    the module ends."""
    appliers: dict[str, int] = {}
    try:
        yield appliers
    finally:  # a setup that failed half-way may have left the primary stopped or replicating
        for name in appliers:
            replica_sh(name, "stop")


@pytest.fixture(scope="module")
def pair(servers, replicating, request):
    """(primary, replica) for a (server, workers): replicating with that many parallel
    appliers, another number than the pair had restarting the applier alone. Every test reads
    the replica's counters as differences over its own load (or from a fresh recording),
    which a replica that applied an earlier test's load leaves as they were."""
    name, workers = request.param
    servers(name)  # fetched, loaded and started once per session
    if name not in replicating:
        replicating[name] = None  # stopped at the end even if its setup fails half-way
        replica_sh(name, "setup", str(workers))
    elif replicating[name] != workers:
        replica_sh(name, "workers", str(workers))
    replicating[name] = workers
    return Server(name), Server(f"{name}:replica")


def pairs(which: list[tuple[str, int]]):
    """The test once for each (server, workers) of which, on the module's pairs."""
    return pytest.mark.parametrize("pair", which, indirect=True, ids=[f"{n}-{w}-workers" for n, w in which])


def checksums(server: Server) -> dict[str, int]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CHECKSUM TABLE sbtest1, sbtest2")
        return {table: value for table, value in cur.fetchall()}


def applier_tids(replica: Server) -> set[int]:
    family = "mariadb" if replica.name.startswith("mariadb") else "mysql"
    with replica.connect() as conn, conn.cursor() as cur:
        cur.execute(APPLIERS[family])
        return {int(tid) for (tid,) in cur.fetchall() if tid}


def status(server: Server, sql: str) -> dict:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute(sql)
        names = [d[0] for d in cur.description]
        return dict(zip(names, cur.fetchone() or [None] * len(names)))


def applier_metrics(replica: Server) -> dict:
    """MySQL's Replication Applier Metrics (a component Debian ships; installed here, and
    the applier restarted: it counts from an applier's start)."""
    with replica.connect() as conn, conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM mysql.component WHERE component_urn = "
                    "'file://component_replication_applier_metrics'")
        if not cur.fetchone()[0]:
            cur.execute("INSTALL COMPONENT 'file://component_replication_applier_metrics'")
            cur.execute("STOP REPLICA SQL_THREAD")
            cur.execute("START REPLICA SQL_THREAD")
    return status(replica, "SELECT EVENTS_COMMITTED_COUNT AS events, TRANSACTIONS_COMMITTED_COUNT AS transactions, "
                           "WAITS_DUE_TO_COMMIT_ORDER_SUM_TIME AS commit_order_ns "
                           "FROM performance_schema.replication_applier_metrics")


def relay_log_passed(replica: Server) -> dict:
    """MySQL 8.0's SQL thread alone (no metrics component before 8.4): the events of its
    relay log before its position, which it applies one by one (Log_event::apply_event)
    once it has read them; the file's own leading events cancel out between two readings
    of one file, which the test's few MB of load never rotate (1 GB)."""
    where = status(replica, "SHOW SLAVE STATUS")
    with replica.connect() as conn, conn.cursor() as cur:
        cur.execute(f"SHOW RELAYLOG EVENTS IN '{where['Relay_Log_File']}'")
        events = sum(1 for row in cur.fetchall() if row[1] < int(where["Relay_Log_Pos"]))
    return {"events": events, "relay_log": where["Relay_Log_File"]}


def applied(replica: Server) -> dict:
    """The events the replica says its applier applied; on MySQL 8.4+, its transactions and
    its waits for the commit order too."""
    if replica.name.startswith("mariadb"):
        return {"events": int(status(replica, "SHOW ALL SLAVES STATUS")["Executed_log_entries"])}
    if replica.name.startswith("mysql-8.0"):
        return relay_log_passed(replica)
    return {name: int(value or 0) for name, value in applier_metrics(replica).items()}


def row_locks(server: Server) -> tuple[int, int]:
    """The server's row-lock waits and their time in ms."""
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_row_lock_waits', 'Innodb_row_lock_time')")
        found = dict(cur.fetchall())
    return int(found["Innodb_row_lock_waits"]), int(found["Innodb_row_lock_time"])


@pairs(NAMED_PAIRS)
def test_the_replica_applies_and_its_appliers_are_named(pair, tmp_path):
    primary, replica = pair
    out = tmp_path / "rec"
    # the replica's purge done with what an earlier test of this pair left it (the pair is
    # the module's): its redo would be neither the appliers' nor this load's
    wait_until_purge_idle(replica, replica.connect())
    record = subprocess.Popen(INNOSTALL + ["record", "--pid", str(replica.pid), "--probes", NAMED_PROBES, "--exact",
                                           "--duration", "120", "-o", str(out)], stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(out / "journal.jsonl", "interval")
        before = applied(replica)
        load = primary.sysbench("oltp_write_only", 5, "--threads=4")
        try:
            load.wait(timeout=60)
        finally:
            stop_load(load)
        replica_sh(primary.name, "wait", "60")
        appliers = applier_tids(replica)
        after = applied(replica)
    finally:
        record.send_signal(signal.SIGINT)
        assert record.wait(timeout=60) == 0, record.stderr.read()
    assert_applied_and_named(primary, replica, recording.load(str(out)), before, after, appliers)


def assert_applied_and_named(primary: Server, replica: Server, rec, before: dict, after: dict,
                             appliers: set[int]) -> None:
    """The replica applied the load, its appliers are those innostall named and saw, and they
    wrote most of its redo (the module's docstring); rec recorded with NAMED_PROBES, --exact,
    from before `before` to after `after`, the replica caught up."""
    assert checksums(replica) == checksums(primary)
    probed = rec.appliers
    assert before.get("relay_log") == after.get("relay_log")
    events = after["events"] - before["events"]
    print(f"{replica.name}: the replica applied {events} events, innostall saw {rec.counter_total('applier_events')} "
          f"on threads {probed[['tid', 'thread', 'events']].to_dict('records')}; the replica's own: {before} → {after}; "
          f"innostall's commit-order waits {rec.counter_total('applier_commit_wait_ns')} ns")
    assert set(probed["tid"].astype(int)) and set(probed["tid"].astype(int)) <= appliers
    assert rec.counter_total("applier_events") == probed["events"].sum() == events
    if "commit_order_ns" in after:
        # the server times each wait for the commit order; the probe, each call of the
        # function that waits, which every commit makes: the wait, and at most
        # COMMIT_CALL_NS a call more (its bookkeeping and the probe's own traps)
        waited = after["commit_order_ns"] - before["commit_order_ns"]
        commits = after["transactions"] - before["transactions"]
        assert waited <= rec.counter_total("applier_commit_wait_ns") <= waited + COMMIT_CALL_NS * commits
    writers = rec.redo_writers
    wrote = set(writers["tid"].astype(int))
    named = set(writers.loc[writers["role"] == "replication applier", "tid"].astype(int))
    share = writers.loc[writers["tid"].isin(appliers), "bytes"].sum() / max(1, writers["bytes"].sum())
    print(f"{replica.name}: appliers {sorted(appliers)}, named {sorted(named)}, their redo {share:.1%}; "
          f"roles {writers.groupby('role')['bytes'].sum().to_dict()}")
    assert appliers & wrote, "no applier thread of the replica's wrote redo"
    assert named == appliers & wrote
    assert share >= APPLIED_SHARE


def attach_mono_ns(out) -> int:
    with open(out / "journal.jsonl") as journal:
        return next(json.loads(line)["mono_ns"] for line in journal if '"attached"' in line)


@pytest.mark.parametrize("budget", BUDGETS, ids=["exact", "default-budget"])
@pairs(STALL_PAIRS)
def test_rows_held_on_the_replica_stall_its_applier_on_row_locks(pair, budget, tmp_path):
    primary, replica = pair
    out = tmp_path / "rec"
    exact = bool(budget)  # the run that also checks the appliers' names, as the test above
    if exact:
        wait_until_purge_idle(replica, replica.connect())
    probes = ["--probes", NAMED_PROBES] if exact else []
    record = subprocess.Popen(INNOSTALL + ["record", "--pid", str(replica.pid), *budget, *probes, "--duration", "120",
                                           "-o", str(out)], stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(out / "journal.jsonl", "interval")
        before = applied(replica) if exact else {}
        waits_before, waited_before = row_locks(replica)
        load = primary.sysbench("oltp_update_non_index", 6 + HOLD_S, "--threads=2")
        try:
            time.sleep(3)
            with replica.connect() as holder, holder.cursor() as cur:
                cur.execute("BEGIN")
                # SKIP LOCKED: the holder never waits for an applier, which could then wait
                # for it in turn (behind a parallel worker's commit order, unseen by InnoDB)
                cur.execute("SELECT id FROM sbtest1 FOR UPDATE SKIP LOCKED")
                cur.fetchall()
                held_from = time.monotonic_ns()
                time.sleep(HOLD_S)
                held_to = time.monotonic_ns()
                cur.execute("COMMIT")
            load.wait(timeout=60)
        finally:
            stop_load(load)
        replica_sh(primary.name, "wait", "60")
        waits_after, waited_after = row_locks(replica)
        appliers, after = (applier_tids(replica), applied(replica)) if exact else (set(), {})
    finally:
        record.send_signal(signal.SIGINT)
        assert record.wait(timeout=60) == 0, record.stderr.read()
    report = json.loads(subprocess.run(INNOSTALL + ["report", str(out), "--json"], capture_output=True, text=True,
                                       check=True).stdout)
    applier = report["replica"]["applier"]
    attach = attach_mono_ns(out)
    middle_s = ((held_from + held_to) / 2 - attach) / 1e9
    [phase] = [p for p in report["replica"]["phases"] if p["from_s"] <= middle_s < p["to_s"]]
    waits, waited_ms = waits_after - waits_before, waited_after - waited_before
    print(f"{replica.name} {' '.join(budget) or 'default budget'}: held {HOLD_S} s from {(held_from - attach) / 1e9:.1f} s; the replica counted {waits} "
          f"row-lock waits, {waited_ms} ms; innostall {applier['split_ms']}; the phase: {phase['verdict']}: "
          f"{phase['detail']}")
    # only the applier waited for row locks on the replica (the holder skips locked rows)
    assert waited_ms >= 0.5 * HOLD_S * 1000
    assert abs(applier["split_ms"]["row_lock"] - waited_ms) <= ROW_LOCK_WAIT_SLACK_MS * waits
    if exact:  # every probe attached: the phase is watched whole, and named by its split
        assert phase["verdict"] in ("row-lock-bound", "commit-order-bound")
        assert "row lock" in phase["detail"]
        assert_applied_and_named(primary, replica, recording.load(str(out)), before, after, appliers)


SYNC_PAIRS = [("mariadb-11.4.5", 0)]
SWITCH_S = 6  # seconds of load with a sync at each commit; as many again without
SYNCED_SHARE = 0.25  # without a sync at commit, the applier's redo wait an event, at most this share of with one
SYNC_FLOOR_NS = 10_000  # a commit's sync shorter than this: a filesystem that syncs in no time, nothing to tell apart


def interval_sums(rec, names: list[str], after_s: float, before_s: float) -> dict[str, int]:
    """The counters' totals over the intervals that began after after_s and ended by before_s."""
    c = rec.counters
    ends = c.groupby("interval")["t_s"].first()
    starts = ends.shift(1, fill_value=0.0)
    kept = ends.index[(starts >= after_s) & (ends <= before_s)]
    rows = c[c["interval"].isin(kept) & c["name"].isin(names)]
    return {name: int(rows.loc[rows["name"] == name, "value"].sum()) for name in names}


@pairs(SYNC_PAIRS)
def test_the_applier_waits_for_the_redo_log_where_its_commits_sync_it(pair, tmp_path):
    """The applier's redo-log waits (probe applier_redo_wait) against the server's own
    switches: with innodb_flush_log_at_trx_commit=1 each commit writes the log and syncs it,
    and with innodb_log_file_buffering=OFF (MariaDB 10.8+'s default where it can) the write
    is direct I/O too. Set to 2 and ON on the fly, commits copy the log into the page cache
    and do not sleep for it (the log is synced once a second). The wait per event must fall
    to at most SYNCED_SHARE of what it was: the log's I/O was the wait. (With 2 alone, the
    direct writes still slept: 14.7 µs an event, then 9.3 µs.)"""
    primary, replica = pair
    out = tmp_path / "rec"

    def mark() -> tuple[int, int]:
        """(now, the transactions the replica says its applier applied)"""
        return time.monotonic_ns(), int(status(replica, "SHOW ALL SLAVES STATUS")["Slave_Transactional_Groups"])
    record = subprocess.Popen(INNOSTALL + ["record", "--pid", str(replica.pid), "--exact", "--duration", "120",
                                           "-o", str(out)], stderr=subprocess.PIPE, text=True)
    load = None
    was = status(replica, "SELECT @@innodb_flush_log_at_trx_commit AS f, @@innodb_log_file_buffering AS b")
    try:
        wait_for_line(out / "journal.jsonl", "interval")
        load = primary.sysbench("oltp_update_non_index", 2 * SWITCH_S + 3, "--threads=2")
        time.sleep(1)
        marks = [mark()]
        time.sleep(SWITCH_S)
        marks.append(mark())
        with replica.connect() as conn, conn.cursor() as cur:
            cur.execute("SET GLOBAL innodb_log_file_buffering = ON")
            cur.execute("SET GLOBAL innodb_flush_log_at_trx_commit = 2")
        time.sleep(SWITCH_S)
        marks.append(mark())
        load.wait(timeout=60)
    finally:
        with replica.connect() as conn, conn.cursor() as cur:
            cur.execute(f"SET GLOBAL innodb_flush_log_at_trx_commit = {int(was['f'])}")
            cur.execute(f"SET GLOBAL innodb_log_file_buffering = {int(was['b'])}")
        if load:
            stop_load(load)
        record.send_signal(signal.SIGINT)
        assert record.wait(timeout=60) == 0, record.stderr.read()
    rec = recording.load(str(out))
    attach = attach_mono_ns(out)
    at = [(ns - attach) / 1e9 for ns, _ in marks]
    names = ["applier_redo_ns", "applier_split_ns", "applier_events"]
    # whole intervals inside each stretch (their rates stand for the stretch's)
    synced, unsynced = interval_sums(rec, names, at[0], at[1]), interval_sums(rec, names, at[1] + 0.5, at[2])
    trx = [marks[1][1] - marks[0][1], marks[2][1] - marks[1][1]]
    per_event = [synced["applier_redo_ns"] / max(1, synced["applier_events"]),
                 unsynced["applier_redo_ns"] / max(1, unsynced["applier_events"])]
    print(f"{replica.name}: syncing at commit, {trx[0]} transactions applied, innostall {synced}; not, {trx[1]} "
          f"transactions, innostall {unsynced}; redo wait an event {per_event[0]:,.0f} ns, then {per_event[1]:,.0f} ns")
    assert trx[0] and trx[1] and synced["applier_events"] and unsynced["applier_events"]
    events_per_trx = synced["applier_events"] / max(1, trx[0])  # a transaction's events, each stretch alike
    if per_event[0] * events_per_trx < SYNC_FLOOR_NS:
        pytest.skip(f"a commit's sync here takes {per_event[0] * events_per_trx:,.0f} ns: nothing to tell apart")
    assert per_event[1] <= SYNCED_SHARE * per_event[0]
