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
Both appliers: MariaDB's single SQL thread (0 workers) and 4 parallel workers."""
from __future__ import annotations

import signal
import subprocess

import pytest

from conftest import INNOSTALL, REPO, Server, stop_load
from innostall.analysis import recording
from test_record_purge import wait_for_line

REPLICA = REPO / "scripts" / "replica.sh"
PAIRS = [("mariadb-11.4.5", 0), ("mariadb-11.4.5", 4), ("mysql-9.7.4", 4)]
APPLIERS = {  # the replica's own table of its applier threads, and their OS thread ids
    "mariadb": "SELECT TID FROM information_schema.PROCESSLIST WHERE COMMAND IN ('Slave_SQL', 'Slave_worker')",
    "mysql": "SELECT THREAD_OS_ID FROM performance_schema.threads WHERE NAME IN "
             "('thread/sql/replica_sql', 'thread/sql/replica_worker', 'thread/sql/slave_sql', 'thread/sql/slave_worker')",
}
APPLIED_SHARE = 0.5  # of the replica's redo, at least, written by its appliers


def replica_sh(server: str, *args: str) -> str:
    done = subprocess.run([str(REPLICA), server, *args], capture_output=True, text=True)
    assert done.returncode == 0, f"replica.sh {server} {' '.join(args)}: {done.stderr.strip()}"
    return done.stdout


@pytest.fixture
def pair(servers, request):
    """(primary, replica), replicating with that many parallel workers; afterwards the
    primary alone again, as the other tests expect it."""
    name, workers = request.param
    servers(name)  # fetched, loaded and started once per session
    try:
        replica_sh(name, "setup", str(workers))
        yield Server(name), Server(f"{name}:replica")
    finally:  # a setup that failed half-way may have left the primary stopped or replicating
        replica_sh(name, "stop")


def checksums(server: Server) -> dict[str, int]:
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("CHECKSUM TABLE sbtest1, sbtest2")
        return {table: value for table, value in cur.fetchall()}


def applier_tids(replica: Server) -> set[int]:
    family = "mariadb" if replica.name.startswith("mariadb") else "mysql"
    with replica.connect() as conn, conn.cursor() as cur:
        cur.execute(APPLIERS[family])
        return {int(tid) for (tid,) in cur.fetchall() if tid}


@pytest.mark.parametrize("pair", PAIRS, indirect=True, ids=[f"{n}-{w}-workers" for n, w in PAIRS])
def test_the_replica_applies_and_its_appliers_are_named(pair, tmp_path):
    primary, replica = pair
    out = tmp_path / "rec"
    record = subprocess.Popen(INNOSTALL + ["record", "--pid", str(replica.pid), "--probes", "redo_write,purge_task",
                                           "--exact", "--duration", "120", "-o", str(out)],
                              stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(out / "journal.jsonl", "interval")
        load = primary.sysbench("oltp_write_only", 5, "--threads=4")
        try:
            load.wait(timeout=60)
        finally:
            stop_load(load)
        replica_sh(primary.name, "wait", "60")
        appliers = applier_tids(replica)
    finally:
        record.send_signal(signal.SIGINT)
        assert record.wait(timeout=60) == 0, record.stderr.read()
    assert checksums(replica) == checksums(primary)
    writers = recording.load(str(out)).redo_writers
    wrote = set(writers["tid"].astype(int))
    named = set(writers.loc[writers["role"] == "replication applier", "tid"].astype(int))
    share = writers.loc[writers["tid"].isin(appliers), "bytes"].sum() / max(1, writers["bytes"].sum())
    print(f"{replica.name}: appliers {sorted(appliers)}, named {sorted(named)}, their redo {share:.1%}; "
          f"roles {writers.groupby('role')['bytes'].sum().to_dict()}")
    assert appliers & wrote, "no applier thread of the replica's wrote redo"
    assert named == appliers & wrote
    assert share >= APPLIED_SHARE
