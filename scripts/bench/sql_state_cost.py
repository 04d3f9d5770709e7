"""What each statement of the server's state by SQL (collector/server/sql_state.py) costs
the server: each run CALLS times over one session, under a sysbench write load, timed at
the client (the whole round trip, an upper bound of the server's part) and by the server
itself (performance_schema's statement digests, SUM_TIMER_WAIT over COUNT_STAR, where
performance_schema is on).

usage: build/venv/bin/python scripts/bench/sql_state_cost.py SERVER [CALLS]   (a fixture.sh server, running)
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fixture_servers import Server, stop_load  # noqa: E402

from innostall.collector.server.sql_state import METRICS_SQL, MONITOR_SQL, STATUS_SQL, UNDO_FILES_SQL  # noqa: E402

STATEMENTS = {"INNODB_METRICS": METRICS_SQL, "SHOW GLOBAL STATUS": STATUS_SQL,
              "SHOW ENGINE INNODB STATUS": MONITOR_SQL, "INFORMATION_SCHEMA.FILES": UNDO_FILES_SQL}


def server_time_us(conn, sql: str) -> tuple[int, float]:
    """(calls, total µs) the server's digest of this statement holds, 0 where none."""
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT_STAR, SUM_TIMER_WAIT / 1e6 FROM performance_schema.events_statements_summary_by_digest "
                    "WHERE DIGEST = STATEMENT_DIGEST(%s)", (sql,))
        row = cur.fetchone()
    return (int(row[0]), float(row[1])) if row else (0, 0.0)


def main(server_name: str, calls: int) -> None:
    srv = Server(server_name)
    conn, watcher = srv.connect(), srv.connect()
    load = srv.sysbench("oltp_write_only", 60, "--threads=2")
    try:
        time.sleep(2)
        for name, sql in STATEMENTS.items():
            try:
                before = server_time_us(watcher, sql)
            except Exception:  # noqa: BLE001 - STATEMENT_DIGEST is 8.0.4+: client times only
                before = None
            took = []
            with conn.cursor() as cur:
                for _ in range(calls):
                    start = time.perf_counter()
                    cur.execute(sql)
                    cur.fetchall()
                    took.append((time.perf_counter() - start) * 1e6)
            server = ""
            if before is not None:
                after = server_time_us(watcher, sql)
                n, us = after[0] - before[0], after[1] - before[1]
                server = f", server {us / n:,.0f} µs/call over {n}" if n else ""
            print(f"{server_name} {name}: {calls} calls, client median {statistics.median(took):,.0f} µs, "
                  f"p90 {sorted(took)[int(calls * 0.9) - 1]:,.0f} µs, max {max(took):,.0f} µs{server}")
    finally:
        stop_load(load)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100)
