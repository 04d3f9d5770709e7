"""innostall verify on one purge thread behind updates, on a disk with read latency (MariaDB
11.4.5, where innodb_purge_threads is dynamic), at the default budget: `advise` on a run as
it is names more purge threads first, I/O-bound; verify, trying them, confirms it on the
history's rise; the setting reads as before afterwards.

The server's files are on slow_fs (scripts/slow_fs.c: every read waits 3 ms, reads made at
once waiting side by side) and its pool is 16 MiB, several times smaller than the 4 tables
of 200,000 rows that 4 connections update at random (purge-behind.sh). So both sides are
I/O-bound, at rates the disk's latency sets, not the machine's CPU: one purge thread reads
each batch's pages one after another, two keep two reads in flight. Purge goes faster with
two, the updaters do not (measured here: the rise 112.2, 103.1 -> 75.0/s and 87.7 -> 62.4/s).
With 8 updaters the updates went faster too and the rise did not fall (docs/advice.md), so
the load is 4.

advise names no setting for a history under 10,000 (purge_actions.HISTORY_WORTH), so before
the runs 8 updaters build it past that, as on a server that fell behind a while ago; the runs
do not wait for purge to catch up (--settle above any history), so each starts where the last
left it."""
from __future__ import annotations

import json
import subprocess

import pytest

from conftest import Server, innostall
from innostall.analysis import recording, summary
from scenario_runs import SCENARIOS
from slow_fs_server import SERVER, slow_fs_server
from test_verify_live import setting

DELAYS = "3000"  # each read 3 ms, writes at once
OPTIONS = ["--innodb-buffer-pool-size=16M", "--innodb-purge-threads=1",
           "--innodb-purge-batch-size=16", "--innodb-flush-log-at-trx-commit=2"]
LOAD = [str(SCENARIOS / "purge-behind.sh"), "--fixture", SERVER, "--rows", "200000", "--settle", "1000000"]
# past HISTORY_WORTH with room for a run's own ups and downs, and low enough that a run's
# climb (+75 to +112/s here, 30 s) moves it by a tenth, as a slow climb must (phases.slow_climbs)
BACKLOG = 10_500
BUILD_ROUNDS = 12  # of 10 s each at most: 8 updaters made 15,900 in 60 s here


def history(srv: Server) -> int:
    with srv.connect() as conn:
        return srv.metric(conn, "trx_rseg_history_len")


@pytest.fixture(scope="module")
def slow_server(servers):
    # a data directory made anew, so that every run builds its backlog from none
    with slow_fs_server(DELAYS, OPTIONS, fresh=True) as srv:
        yield srv


def test_more_purge_threads_are_advised_and_confirmed_on_the_historys_rise(slow_server, tmp_path):
    srv = slow_server
    for _ in range(BUILD_ROUNDS):  # the backlog, built until it is one
        if history(srv) >= BACKLOG:
            break
        subprocess.run(LOAD + ["--tables", "4", "--threads", "8", "--seconds", "10"], check=True,
                       capture_output=True, text=True, timeout=300)
    assert history(srv) >= BACKLOG
    out = tmp_path / "v"
    load = " ".join(LOAD + ["--tables", "4", "--threads", "4", "--seconds", "30"])
    result = innostall("verify", "--pid", str(srv.pid), "--load", load, "--set", "innodb_purge_threads=2",
                       "--expect", "history_rise_per_s:down", "--apply", "-o", str(out), timeout=900)
    assert setting(srv, "innodb_purge_threads") == "1"
    assert result.returncode == 0, result.stderr
    [tried] = json.loads((out / "verify.json").read_text())["results"]
    advice = {run: json.loads(innostall("advise", str(out / run), "--json").stdout)["actions"]
              for run in ("baseline-1", "baseline-2")}
    print(result.stdout, json.dumps(tried, indent=1), {run: [a["change"] for a in actions]
                                                      for run, actions in advice.items()})
    for run in advice:  # what each run's advice stood on: its phases, watched and bound
        told = summary.summary(recording.load(str(out / run)))
        print(run, [(p["from_s"], p["to_s"], p["verdict"], p["figures"].get("split_watched"), p["figures"].get("bound"))
                    for p in told["purge"]["phases"]], {g: v["coverage"] for g, v in told["governor"]["groups"].items()})
    # the runs as they are: purge falling behind, I/O-bound, and more threads the first advice
    for run, actions in advice.items():
        assert actions and actions[0]["key"] == "purge_threads", (run, actions)
        assert actions[0]["apply_sql"] == "SET GLOBAL innodb_purge_threads = 2"
        assert "I/O-bound" in " ".join(actions[0]["evidence"]), actions[0]["evidence"]
    assert tried["done"] == "SET GLOBAL innodb_purge_threads = 2; restored innodb_purge_threads = 1"
    assert tried["verdict"] == "confirmed", tried["words"]
