"""innostall verify on a redo-bound MariaDB replica (replica-redo.sh, MariaDB 11.4.5, one SQL
thread): the primary's 2 connections commit side by side, the replica's applier one commit
after another, each waiting for the redo log's write and sync (innodb_flush_log_at_trx_commit
1) on a disk that takes 200 writes a second (the replica's writes throttled: a sync's cost
then holds on any machine; unthrottled, this VM's syncs took 60 µs an event on a quiet disk
and 650 µs on a busy one, and on a quiet one the applier kept up). `advise` on a run as it is names the commit's flush first and parallel appliers; verify,
trying the flush, confirms it on the lag, and the same recordings confirm it on the applier's
redo wait; the replica's settings read as before afterwards.

With every probe attached (--exact), not at the default budget: there the applier's group
was attached 5-9% of each run (its probes, an event's span and its waits, cost about 4.6 ms
a second of the applier's 1,300-2,900 events, where the budget allows 2.5 ms in all, and no
signal of the server's state opens it for a lag: only row-lock waits do), so every phase of
the applier was 'unwatched' and `advise` had nothing to say of it (docs/advice.md)."""
from __future__ import annotations

import json

import pytest

import slow_disk
from conftest import innostall
from innostall.analysis import recording, summary
from innostall.analysis.advice.judge import figure_of, judge
from scenario_runs import SCENARIOS
from test_replica import pair  # noqa: F401 (the fixture: the pair replicating, stopped after)
from test_verify_live import setting

PAIRS = [("mariadb-11.4.5", 0)]
# 300 transactions a second on the primary for 3 s: 4 events each, which the applier, two
# disk writes a commit (the log's write and its sync) at 200 a second, applies in about 9 s
# more, and in about 1.5 s more with one (measured); the replica catches up within the load's
# own command (replica-redo.sh waits for it), so each run starts level
LOAD = f"{SCENARIOS / 'replica-redo.sh'} --seconds 3 --rate 300 --slow-disk 200 --fixture"
SETTINGS = ("innodb_flush_log_at_trx_commit", "innodb_log_file_buffering")


@pytest.mark.skipif(not slow_disk.available(), reason="needs the cgroup v1 blkio controller to slow a disk")
@pytest.mark.parametrize("pair", PAIRS, indirect=True, ids=[f"{n}-{w}-workers" for n, w in PAIRS])
def test_the_commits_flush_is_advised_and_confirmed_on_the_lag_and_the_applier_redo_wait(pair, tmp_path):
    primary, replica = pair
    before = {name: setting(replica, name) for name in SETTINGS}
    out = tmp_path / "v"
    result = innostall("verify", "--pid", str(replica.pid), "--load", f"{LOAD} {replica.name}", "--exact",
                       "--set", "innodb_flush_log_at_trx_commit=2", "--expect", "lag_s_max:down", "--apply",
                       "-o", str(out), timeout=600)
    assert {name: setting(replica, name) for name in SETTINGS} == before
    assert result.returncode == 0, result.stderr
    [tried] = json.loads((out / "verify.json").read_text())["results"]
    advice = json.loads(innostall("advise", str(out / "baseline-1"), "--json").stdout)["actions"]
    summaries = {run: summary.summary(recording.load(str(out / run))) for run in ("baseline-1", "baseline-2", "change-1")}
    # the redo wait's seconds, not its share: on the throttled disk the applier waits on the log
    # either way (99% of its busy time, its write without the sync still a disk write), half as
    # long without the sync; every run applies the same events (the load's rate is fixed) and is
    # watched whole (--exact), so their seconds compare
    redo = judge("applier_redo_s", "down", [figure_of(summaries[r], "applier_redo_s")
                                            for r in ("baseline-1", "baseline-2")],
                 figure_of(summaries["change-1"], "applier_redo_s"))
    print(result.stdout, json.dumps(tried, indent=1), json.dumps(redo, indent=1), [a["change"] for a in advice])
    # the run as it is: redo-bound, and the advice is the change tried, parallel appliers next
    assert [a["key"] for a in advice[:2]] == ["flush_log_at_commit", "parallel_appliers"]
    assert advice[0]["apply_sql"] == "SET GLOBAL innodb_flush_log_at_trx_commit = 2"
    assert tried["done"] == (f"SET GLOBAL innodb_flush_log_at_trx_commit = 2; "
                             f"restored innodb_flush_log_at_trx_commit = {before['innodb_flush_log_at_trx_commit']}")
    assert tried["verdict"] == "confirmed", tried["words"]
    assert redo["verdict"] == "confirmed", redo["words"]
