"""innostall verify on a redo-bound MariaDB replica (replica-redo.sh, MariaDB 11.4.5, one SQL
thread), at the default budget: the primary's 2 connections commit side by side, the
replica's applier one commit after another, each waiting for the redo log's write and sync
(innodb_flush_log_at_trx_commit 1) on a disk that takes 200 writes a second (the replica's
writes throttled: a sync's cost then holds on any machine; unthrottled, this VM's syncs took
60 µs an event on a quiet disk and 650 µs on a busy one, and on a quiet one the applier kept
up). `advise` on a run as it is names the commit's flush first and parallel appliers; verify,
trying the flush, confirms it on the lag, and the same recordings confirm it on the applier's
redo wait per event; the replica's settings read as before afterwards.

At the default budget the applier's probes cost more than the whole budget while it applies
(issue 48: attached 5-9% of each run before, every phase 'unwatched'); the recorder tells the
loader while the replica falls behind (its lag above 0 and climbed: the signal
replica_behind, collector/server/replica_lag.py), which holds the applier's group open in
windows on what the budget and its stall bank allow. Held: that signal held the applier's
group in every run, each recording stayed within its budget.

The redo wait is compared per wait (applier_redo_ms_per_wait): the seconds watched depend on
the share of a run watched, and a mean per event more (the windows miss long events more,
cut at their edges). On the throttled disk that figure is noisy between runs alike: the
blkio throttle passes a write at once or holds it to the end of its slice (100 ms on a disk
the kernel takes for rotating), so a wait lasts 0.1 ms or 100 ms once the load has stopped,
and how many of the long ones fall into the waits watched varies: runs without the change
measured 4.6-6.2 ms a wait here (3 runs), 10.6 and 5.0 ms in one CI run (attached whole and
60%). verify's own judge, taking that spread for noise, then rightly says "not confirmed", so the test asks
what holds on any machine for a reason: without the sync, a commit waits for one throttled
write where it waited for a write and a sync, and its wait falls below every run's without
the change (measured 1.7-3.3 ms against at least 4.6: 4 runs of the test, one of them CI's)."""
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
RUNS = ("baseline-1", "baseline-2", "change-1")


@pytest.mark.skipif(not slow_disk.available(), reason="needs the cgroup v1 blkio controller to slow a disk")
@pytest.mark.parametrize("pair", PAIRS, indirect=True, ids=[f"{n}-{w}-workers" for n, w in PAIRS])
def test_the_commits_flush_is_advised_and_confirmed_on_the_lag_and_the_applier_redo_wait(pair, tmp_path):
    primary, replica = pair
    before = {name: setting(replica, name) for name in SETTINGS}
    out = tmp_path / "v"
    result = innostall("verify", "--pid", str(replica.pid), "--load", f"{LOAD} {replica.name}",
                       "--set", "innodb_flush_log_at_trx_commit=2", "--expect", "lag_s_max:down", "--apply",
                       "-o", str(out), timeout=600)
    assert {name: setting(replica, name) for name in SETTINGS} == before
    assert result.returncode == 0, result.stderr
    [tried] = json.loads((out / "verify.json").read_text())["results"]
    advice = json.loads(innostall("advise", str(out / "baseline-1"), "--json").stdout)["actions"]
    summaries = {run: summary.summary(recording.load(str(out / run))) for run in RUNS}
    # on the throttled disk the applier waits on the log either way (95-99% of its busy time,
    # its write without the sync still a disk write), about half as long a commit without the
    # sync; the judge's verdict is printed, the direction asserted (the module's docstring)
    redo = judge("applier_redo_ms_per_wait", "down",
                 [figure_of(summaries[r], "applier_redo_ms_per_wait") for r in ("baseline-1", "baseline-2")],
                 figure_of(summaries["change-1"], "applier_redo_ms_per_wait"))
    costs = {run: s["governor"] for run, s in summaries.items()}
    print(result.stdout, json.dumps(tried, indent=1), json.dumps(redo, indent=1), [a["change"] for a in advice])
    for run, cost in costs.items():
        print(run, {"lag_s_max": summaries[run]["replica"]["lag_s_max"],
                    "redo_ms_per_wait": figure_of(summaries[run], "applier_redo_ms_per_wait"),
                    "applier_coverage": cost["groups"]["applier"]["coverage"],
                    "held": cost["signals"]["read"]["replica_behind"], "overhead_ms": cost["overhead_ms"],
                    "budget_ms": cost["budget_ms"], "phases": [(p["from_s"], p["to_s"], p["verdict"])
                                                                for p in summaries[run]["replica"]["phases"]]})
    # the run as it is: redo-bound, and the advice is the change tried, parallel appliers next
    assert [a["key"] for a in advice[:2]] == ["flush_log_at_commit", "parallel_appliers"]
    assert advice[0]["apply_sql"] == "SET GLOBAL innodb_flush_log_at_trx_commit = 2"
    assert tried["done"] == (f"SET GLOBAL innodb_flush_log_at_trx_commit = 2; "
                             f"restored innodb_flush_log_at_trx_commit = {before['innodb_flush_log_at_trx_commit']}")
    assert tried["verdict"] == "confirmed", tried["words"]
    assert redo["changed"] < min(redo["baseline"]), redo["words"]
    for run, cost in costs.items():
        # held open by the replica falling behind, within the recording's budget
        assert cost["signals"]["read"]["replica_behind"]["held_s"] > 0, run
        assert cost["overhead_ms"] <= cost["budget_ms"], (run, cost["overhead_ms"], cost["budget_ms"])
