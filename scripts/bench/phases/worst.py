"""Phase 4, the worst case: a full scan inside an old snapshot over long version chains,
where every version step traps; untraced, under each probe set and under bpftrace."""
from __future__ import annotations

import time

import pymysql

from ..bracketing import comparisons, run_bracketed
from ..errors import BenchError
from ..harness import Bench
from ..log import log
from ..procfs import cpu_seconds
from ..server import BenchServer, fixture
from ..settings import (ATTACH_TIMEOUT_S, BPFTRACE_PROBES, HOT_ROWS, MAX_UPDATE_S, QUIET_CORES,
                        QUIET_MAX_S, RECORD_LEAD_S, SCAN_ARMS, SCAN_TARGET_S, UPDATE_BATCH,
                        WORST_POOL, WORST_ROWS)

SCAN_SQL = "SELECT avg(k) FROM sbtest1 FORCE INDEX (PRIMARY)"  # PRIMARY holds the chains


def open_snapshot(server: BenchServer) -> pymysql.Connection:
    conn = server.connect()
    server.query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", conn)
    server.query("START TRANSACTION WITH CONSISTENT SNAPSHOT", conn)
    return conn


def timed_scan(server: BenchServer, conn: pymysql.Connection) -> float:
    started = time.monotonic()
    server.query(SCAN_SQL, conn)
    return time.monotonic() - started


def update_hot_rows(conn: pymysql.Connection, seconds: float, first_pass: int) -> tuple[int, int]:
    """Passes over the hot rows, UPDATE_BATCH rows per autocommit UPDATE, for about seconds.
    Each pass writes a new value, so every row gains one version per pass. -> (versions, passes)."""
    versions, passes = 0, 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        tag = f"pass {first_pass + passes}"
        for low in range(1, HOT_ROWS + 1, UPDATE_BATCH):
            high = min(low + UPDATE_BATCH - 1, HOT_ROWS)
            with conn.cursor() as cur:
                versions += cur.execute("UPDATE sbtest1 SET c = RPAD(%s, 120, '-') "
                                        "WHERE id BETWEEN %s AND %s", (tag, low, high))
        passes += 1
    return versions, passes


def next_chunk(versions: int, spent: float, scan: float) -> float:
    """Seconds of updates for the next step, assuming the scan time grows in proportion to
    the versions it rebuilds; at most double the history per step: once undo pages fall out
    of the buffer pool the scan time grows much faster than the versions."""
    wanted = versions * SCAN_TARGET_S / scan
    return min(max((wanted - versions) * spent / versions, 2.0), spent, MAX_UPDATE_S - spent)


def grow_chains(server: BenchServer, snapshot_conn: pymysql.Connection) -> dict:
    """Update until the snapshot's scan takes about SCAN_TARGET_S, or MAX_UPDATE_S is spent."""
    updater = server.connect()
    versions, passes, spent, scan = 0, 0, 0.0, timed_scan(server, snapshot_conn)
    chunk = min(10.0, MAX_UPDATE_S)
    growth = []
    while scan < 0.9 * SCAN_TARGET_S and spent < MAX_UPDATE_S:
        started = time.monotonic()
        more, more_passes = update_hot_rows(updater, chunk, passes)
        spent += time.monotonic() - started
        versions, passes = versions + more, passes + more_passes
        scan = timed_scan(server, snapshot_conn)
        growth.append({"versions": versions, "update_s": round(spent, 1), "scan_s": round(scan, 3)})
        log(f"  {versions} versions after {spent:.0f} s of updates: scan {scan:.2f} s")
        if not versions:
            raise BenchError("the hot-row updates changed no row")
        chunk = next_chunk(versions, spent, scan)
    updater.close()
    # every pass gives each hot row one more version
    return {"versions": versions, "chain_depth": passes, "update_s": round(spent, 1), "growth": growth}


def wait_quiet(server: BenchServer) -> float:
    """Wait until the server, now without clients at work, uses under QUIET_CORES of CPU
    for a second: after the burst of updates it flushes pages for a while, which would
    slow the first scans only. -> seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < QUIET_MAX_S:
        before = cpu_seconds(server.pid)
        time.sleep(1)
        if cpu_seconds(server.pid) - before < QUIET_CORES:
            break
    return round(time.monotonic() - started, 1)


def scan_with(bench: Bench, rnd: int, arm: str) -> dict:
    """One scan with the arm's tracer attached RECORD_LEAD_S before it; a tracer's failure
    is the scan's error."""
    cap = RECORD_LEAD_S + 50 * SCAN_TARGET_S + ATTACH_TIMEOUT_S + 120
    tracer = bench.new_tracer(arm, cap, f"worst-{rnd}-{arm}")
    entry = {"phase": "worst", "round": rnd, "arm": arm}
    try:
        with bench.traced(tracer):
            if tracer:
                time.sleep(RECORD_LEAD_S)
            entry["scan_s"] = round(timed_scan(bench.server, bench.snapshot_conn), 3)
    except BenchError as e:
        entry["error"] = str(e)
    if tracer:
        entry["tracer"] = tracer.result
    log(f"  worst round {rnd} {arm:<9} " + (f"scan {entry['scan_s']} s" if "scan_s" in entry
                                            else entry["error"]))
    return entry


def phase_worst(bench: Bench) -> None:
    log("phase 4: worst case, a scan under an old snapshot over long version chains")
    # A pool that holds the whole history: the seed's scan is CPU-bound (14 s for ~30 M
    # versions); with the default 128 MB pool it turns into minutes of undo page reads.
    bench.start_server(f"--innodb-buffer-pool-size={WORST_POOL}")
    fixture("load", "1", str(WORST_ROWS))
    bench.write_bpftrace_script(BPFTRACE_PROBES)
    bench.snapshot_conn = open_snapshot(bench.server)
    chains = grow_chains(bench.server, bench.snapshot_conn)
    chains["quiet_wait_s"] = wait_quiet(bench.server)
    chains["warmup_scan_s"] = round(timed_scan(bench.server, bench.snapshot_conn), 3)
    scans = []
    try:
        run_bracketed(scans, SCAN_ARMS, "untraced", lambda rnd, arm: scan_with(bench, rnd, arm))
    finally:
        bench.results["worst"] = {
            "updates_during_scans": "stopped: the chains are grown first, then the updates end "
                                    "and the snapshot stays open, so every scan rebuilds the "
                                    "same versions",
            "chains": chains, "scans": scans,
            "comparisons": comparisons(scans, "untraced", SCAN_ARMS, ("scan_s",))}
    bench.stop_all()
