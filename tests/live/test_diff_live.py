"""innostall diff: the same metrics of two recordings side by side, biggest changes first."""
from __future__ import annotations

import json
import subprocess
import time

from cli_output import run_diff
from conftest import INNOSTALL, stop_load
from recordings import NO_PATIENCE


SERVER = "mariadb-11.4.5"


def purge_threads(srv, threads: int | None = None) -> int:
    """The server's innodb_purge_threads, set first if given: MariaDB 10.5+ changes it
    online, so the two recordings need no restart (each stop and start cost seconds)."""
    with srv.connect() as conn, conn.cursor() as cur:
        if threads is not None:
            cur.execute(f"SET GLOBAL innodb_purge_threads = {int(threads)}")
        cur.execute("SELECT @@GLOBAL.innodb_purge_threads")
        return int(cur.fetchone()[0])


def record_under_load(srv, out, threads: int) -> int:
    """Set this many purge threads, then record 8 s of hot-row updates."""
    effective = purge_threads(srv, threads)
    load = srv.sysbench("oltp_update_non_index", 20, "--threads=4")
    try:
        time.sleep(2)  # let history build up so purge has work
        done = subprocess.run(INNOSTALL + ["record", "--pid", str(srv.pid), "--duration", "8", *NO_PATIENCE,
                                           "-o", str(out)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    finally:
        stop_load(load)
    return effective


def test_diff_of_real_recordings_with_one_and_four_purge_threads(servers, tmp_path):
    srv = servers(SERVER)
    before = purge_threads(srv)
    try:
        threads = {tag: record_under_load(srv, tmp_path / tag, n) for tag, n in (("a", 1), ("b", 4))}
    finally:  # the other tests expect the server as the session fixture started it
        purge_threads(srv, before)
    assert threads == {"a": 1, "b": 4}
    text = run_diff(tmp_path / "a", tmp_path / "b")
    print(text)
    doc = json.loads(run_diff(tmp_path / "a", tmp_path / "b", "--json"))
    metrics = {m["metric"]: m for m in doc["metrics"]}
    assert metrics["purge.batches"]["a"] > 0 and metrics["purge.batches"]["b"] > 0
    assert metrics["purge.pages"]["a"] > 0 and metrics["purge.pages"]["b"] > 0
    ranked = [abs(m["log2_ratio"]) for m in doc["metrics"] if m["log2_ratio"] is not None]
    assert ranked == sorted(ranked, reverse=True)
    assert text.splitlines()[5].split()[0] == doc["metrics"][0]["metric"]
