"""Dimitri's flushing case (scripts/scenarios/checkpoint-age.sh) recorded: a write load on a
16 MB redo log presses the checkpoint age against the server's flush points. The report's
largest age, read 20 times a second from the server's memory, is at least every age the
scenario read from SHOW ENGINE INNODB STATUS once a second, less what the server writes in
half a second (a read of ours delayed that long on a loaded host), and below the sync
point's hard limit, the log's capacity; the words hold against the tables (verdict_check)."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from conftest import INNOSTALL
from innostall.analysis.verdict_check import check
from test_record_purge import wait_for_line
from test_scenarios import SCENARIOS, run_scenario

SERVERS = ["mariadb-11.4.5"]  # resizes its redo log online (MariaDB 10.9+)
SECONDS, OPEN_AT, COMMIT_AT, DRAIN = 14, 2, 8, 3


@pytest.mark.parametrize("server_name", SERVERS)
def test_the_checkpoint_age_against_the_servers_own(servers, server_name, tmp_path):
    srv = servers(server_name)
    out = tmp_path / "rec"
    record = subprocess.Popen(INNOSTALL + ["record", "--pid", str(srv.pid), "--duration", str(SECONDS + DRAIN + 2),
                                           "-o", str(out)], stderr=subprocess.PIPE, text=True)
    wait_for_line(out / "journal.jsonl", "attached")
    markers = run_scenario([str(SCENARIOS / "checkpoint-age.sh"), "--fixture", srv.name, "--seconds", str(SECONDS),
                            "--open-at", str(OPEN_AT), "--commit-at", str(COMMIT_AT), "--drain", str(DRAIN)],
                           lambda t, text: None)
    assert record.wait(timeout=60) == 0, record.stderr.read()
    ages = [int(m[1]) for _, text in markers if (m := re.search(r"^flush checkpoint age=(\d+)", text))]
    report = json.loads(subprocess.run(INNOSTALL + ["report", str(out), "--json"], capture_output=True,
                                       text=True, check=True).stdout)
    checkpoint, redo = report["checkpoint"], report["redo"]
    print(f"{server_name}: the scenario read ages up to {max(ages):,}; the report: {checkpoint}, redo {redo}")
    assert len(ages) >= SECONDS - 2
    assert checkpoint["age_max_bytes"] >= max(ages) - 0.5 * redo["peak_per_s"]
    assert checkpoint["age_max_bytes"] <= checkpoint["log_capacity"]
    assert check(str(out)) == []
