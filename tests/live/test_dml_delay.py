"""The DML purge delay (innodb_max_purge_lag) on real servers: with an old snapshot pinning
history and the lag limit low, every row update sleeps and the verdict says purge throttles
DML; with the limit off, none does."""
from __future__ import annotations

import pytest

from conftest import stop_load
from innostall.analysis import recording
from innostall.analysis.summary import purge_story
from innostall.collector.discovery import discover, target
from recordings import record_at_once

# MariaDB 11.4.5 is left out: with innodb_max_purge_lag=100 and a history of 16k under load
# (with or without a pinning snapshot) it kept srv_dml_needed_delay at 0 at every batch
# start and never called the delay's sleep_for, so there is no delay to observe there.
SERVERS = ["mariadb-10.2.11", "mysql-8.0.15", "mysql-9.7.4"]
MAX_DELAY_US = 2000


def set_lag(conn, max_lag: int) -> None:
    with conn.cursor() as cur:
        cur.execute(f"SET GLOBAL innodb_max_purge_lag = {max_lag}")
        cur.execute(f"SET GLOBAL innodb_max_purge_lag_delay = {MAX_DELAY_US}")


def record_delays(srv, out: str) -> dict:
    tgt = target.from_pid(srv.pid)
    probe, = discover.resolve(tgt, ["dml_delay"])
    assert probe.ok, probe.reason
    load = srv.sysbench("oltp_update_non_index", 20, "--threads=4")
    try:
        # at once (recordings.record_at_once): this load never leaves idle CPU
        record_at_once(tgt, [probe], out, duration_s=8)
    finally:
        stop_load(load)
    rec = recording.load(out)
    verdicts = {p["verdict"] for p in purge_story(rec)["phases"]}
    return {"delays": rec.counter_total("dml_delays"), "us": rec.counter_total("dml_delay_us"),
            "throttled": "throttled" in verdicts}


@pytest.mark.parametrize("server_name", SERVERS)
def test_delays_appear_with_the_lag_limit_and_not_without(servers, server_name, tmp_path):
    srv = servers(server_name)
    admin = srv.connect()
    snapshot = srv.connect()
    snapshot.autocommit(False)
    with snapshot.cursor() as cur:  # pins history so the history list keeps growing
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.execute("SELECT COUNT(*) FROM sbtest1")
    try:
        set_lag(admin, 100)
        delayed = record_delays(srv, str(tmp_path / "lag"))
        set_lag(admin, 0)
        free = record_delays(srv, str(tmp_path / "nolag"))
    finally:
        set_lag(admin, 0)
        snapshot.rollback()
    mean = delayed["us"] / delayed["delays"] if delayed["delays"] else 0
    print(f"{server_name}: {delayed['delays']} delayed DMLs, mean {mean:.0f} us; "
          f"without the limit {free['delays']}")
    assert delayed["delays"] > 50
    assert 0 < mean <= MAX_DELAY_US * 1.5  # capped by innodb_max_purge_lag_delay (+ sleep overshoot)
    assert free["delays"] == 0
    # the verdict says so: throttled while DML was delayed, never without the limit
    assert delayed["throttled"] and not free["throttled"]
