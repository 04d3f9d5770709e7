"""innostall advise: the actions a recording supports, from the stored real recordings and
from summaries built to one rule each; and the checker that holds the advice to the report."""
from __future__ import annotations

import dataclasses
import functools

import pytest

from conftest import REPO
from innostall.analysis import recording, summary
from innostall.analysis.advice import Advice, advise
from innostall.analysis.checks.advice_check import advice_problems
from innostall.analysis.advice.advice_text import render_advice
from innostall.analysis.advice.server_settings import online, release
from innostall.cli import main

DATA = REPO / "tests" / "data"


@functools.cache
def advised(name: str) -> tuple[dict, Advice]:
    rec = recording.load(str(DATA / name))
    told = summary.summary(rec)
    return told, advise(told, rec.meta)


def test_a_pinning_snapshot_is_advised_ended_and_more_purge_threads_said_not_to_help():
    """MariaDB 11.4.5, a consistent snapshot held 18 s by connection 6 under updates."""
    told, advice = advised("pin-catch-up")
    first = advice.actions[0]
    assert first.key == "end_pinning_transaction" and first.apply_sql == "KILL 6"
    assert first.change.startswith("End the transaction of connection 6 (user innostall, read view open 17.7 s)")
    assert first.expected == ("the history stops growing at +2,440/s while the view is open, and purge may "
                              "remove the 41,477 transactions of history the view held")
    [wrong] = advice.not_helping
    assert wrong.change.startswith("Raise innodb_purge_threads")
    assert "in 16 of the 18 intervals of 5.0–23.0 s every purge batch found nothing to purge" in wrong.why
    assert advice_problems(told, advice.as_json()) == []


def test_a_row_lock_bound_replica_is_advised_its_blocker_and_told_the_commit_flush_would_not_help():
    """A MariaDB 11.4.5 replica whose applier waited 6 s on rows a session held, default budget."""
    told, advice = advised("replica-row-lock-sampled")
    assert [a.key for a in advice.actions] == ["end_replica_blocker"]  # its small history needs no purge advice
    assert advice.actions[0].expected.startswith("the applier's row-lock waits (6.0 s of the 6.4 s watched whole) go")
    [wrong] = advice.not_helping
    assert "innodb_flush_log_at_trx_commit = 2" in wrong.change and "258 ms" in wrong.why
    assert advice_problems(told, advice.as_json()) == []


def test_a_redo_bound_replica_watched_under_half_of_its_stall_is_advised_the_commits_flush():
    """A MariaDB 11.4.5 replica applying one commit after another on a slow disk, default
    budget: its applier's probes attached 47% of the recording, in windows over every second."""
    told, advice = advised("replica-redo-sampled")
    assert [a.key for a in advice.actions][:2] == ["flush_log_at_commit", "parallel_appliers"]
    assert advice_problems(told, advice.as_json()) == []


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.iterdir()))
def test_no_stored_recording_gets_advice_the_report_does_not_bear_out(name):
    told, advice = advised(name)
    assert advice_problems(told, advice.as_json()) == []
    assert render_advice(advice).startswith("What to change")


def test_the_checker_finds_an_expected_effect_the_report_never_said():
    told, advice = advised("pin-catch-up")
    invented = dataclasses.replace(advice.actions[0], expected="the history falls by 123,457 transactions",
                                   evidence=["a sentence of no report"])
    problems = advice_problems(told, Advice([invented], []).as_json())
    assert any("123,457" in p for p in problems) and any("not one of the report's sentences" in p for p in problems)


def log_room(version: str, family: str = "mariadb") -> tuple[dict, dict]:
    found = "Writers waited 2.5 s for the log to make room (40 waits): the checkpoint age reached it."
    told = {"flushing": {"log_room": {"waits": 40, "wait_s": 2.5}}, "findings": [found]}
    meta = {"target": {"family": family, "version": version},
            "server_variables": {"at_start": {"innodb_log_file_size": str(96 << 20)}}}
    return told, meta


def test_writers_waiting_for_log_room_are_advised_a_larger_redo_log_online_where_the_release_can():
    told, meta = log_room("11.4.5")
    [action] = advise(told, meta).actions
    assert action.change == "Double the redo log: innodb_log_file_size from 96 MiB to 192 MiB"
    assert action.apply_sql == f"SET GLOBAL innodb_log_file_size = {192 << 20}"
    assert action.undo_sql == f"SET GLOBAL innodb_log_file_size = {96 << 20}"
    assert advice_problems(told, advise(told, meta).as_json()) == []
    told, meta = log_room("10.6.18")
    [action] = advise(told, meta).actions
    assert action.apply_sql is None and action.change.endswith("(at the next restart: this server sizes it at start only)")


def test_a_long_stall_at_the_sync_point_is_advised_a_log_sized_for_the_redo_held_back():
    """Writers stopped at the sync flush point for 6 s, at a peak of 7.4 MiB/s: the log must
    hold the age they stopped at and 6 s of that redo, at the same share of its size as the
    point (12.3 MiB of 16 MiB): 59 MiB at the point, 77 MiB of log, 128 MiB as a power of two
    (redo-room.sh on slow_fs, as test_verify_redo_log_live records it)."""
    told, meta = log_room("11.4.5")
    meta["server_variables"]["at_start"]["innodb_log_file_size"] = str(16 << 20)
    told["checkpoint"] = {"age_max_bytes": 12_884_471, "sync_flush_age": 12_871_804, "sync_s": 6.0}
    told["redo"] = {"peak_per_s": 7_738_666}
    [action] = advise(told, meta).actions
    assert action.change.startswith("Enlarge the redo log: innodb_log_file_size from 16 MiB to 128 MiB, room for "
                                    "the age writers were stopped at, 12.3 MiB, and 7.4 MiB/s")
    assert action.apply_sql == f"SET GLOBAL innodb_log_file_size = {128 << 20}"
    assert advice_problems(told, advise(told, meta).as_json()) == []
    told["checkpoint"]["sync_s"] = 0.5  # a short stop: doubling gives room enough
    assert advise(told, meta).actions[0].apply_sql == f"SET GLOBAL innodb_log_file_size = {32 << 20}"


def test_settings_known_online_by_family_and_release():
    mariadb = {"target": {"family": "mariadb", "version": "10.5.2-MariaDB"}}
    mysql = {"target": {"family": "mysql", "version": "8.0.15"}}
    assert online("innodb_purge_threads", mariadb) and not online("innodb_purge_threads", mysql)
    assert online("innodb_io_capacity", mysql) and not online("innodb_redo_log_capacity", mysql)
    assert release("11.4.5-MariaDB-log") == (11, 4, 5) and release(None) == ()


def test_advise_prints_one_line_for_a_missing_recording(capsys, tmp_path):
    assert main(["advise", str(tmp_path / "none")]) == 1
    assert capsys.readouterr().err.count("\n") == 1


def test_a_redo_bound_replica_on_mariadb_10_8_or_later_is_advised_the_commit_flush_and_told_of_buffered_log_writes():
    detail = ("redo-bound: the applier applied 900 events (90.0/s), busy 9.0 s of 10.0 s (90%); of the 8.0 s "
              "watched whole, 60% waiting for the redo log at commit (4.8 s)")
    phase = {"from_s": 0.0, "to_s": 10.0, "verdict": "redo-bound", "detail": detail,
             "figures": {"watched_s": 8.0, "split_s": {"redo": 4.8, "row_lock": 0.0}}}
    told = {"replica": {"phases": [phase], "lag_s_max": None}, "findings": []}
    meta = {"target": {"family": "mariadb", "version": "11.4.5"},
            "server_variables": {"at_start": {"innodb_flush_log_at_trx_commit": "1", "innodb_log_file_buffering": "OFF",
                                              "slave_parallel_threads": "0"}}}
    advice = advise(told, meta)
    assert [a.key for a in advice.actions] == ["flush_log_at_commit", "parallel_appliers"]
    flush = advice.actions[0]
    # the buffering named, not applied: MariaDB 11.4.5 kept it ON after SET GLOBAL ... = OFF
    assert "innodb_log_file_buffering = ON" in flush.change
    assert flush.apply_sql == "SET GLOBAL innodb_flush_log_at_trx_commit = 2"
    assert flush.undo_sql == "SET GLOBAL innodb_flush_log_at_trx_commit = 1"
    assert flush.expected == ("the applier's waits for the redo log at commit (4.8 s of the 8.0 s watched whole) "
                              "get shorter, each a write of the log without its sync")
    # a recording made before the waits were counted: judged by the wait's share
    assert flush.expect.figure == "applier_redo_share" and flush.expect.now == pytest.approx(0.6)
    assert advice_problems(told, advice.as_json()) == []
    # with them (applier_redo_waits): by each wait's mean, which the flush shortens whatever
    # share of the applier's time the log's write keeps
    told["replica"]["applier"] = {"split_ms": {"redo": 4_800.0, "on_cpu": 3_200.0}, "redo_waits": 600}
    flush = advise(told, meta).actions[0]
    assert flush.expect.figure == "applier_redo_ms_per_wait" and flush.expect.now == pytest.approx(8.0)


def test_verify_changes_parse_and_a_boolean_reads_back_as_a_number():
    from innostall.collector.verify.changes import SetGlobal, same_value
    from innostall.errors import UserError

    change = SetGlobal("innodb_flush_log_at_trx_commit=2, innodb_log_file_buffering=ON")
    assert change.pairs == [("innodb_flush_log_at_trx_commit", "2"), ("innodb_log_file_buffering", "ON")]
    assert same_value("1", "ON") and same_value("0", "off") and not same_value("1", "0")
    with pytest.raises(UserError):
        SetGlobal("innodb_purge_threads=4; DROP TABLE t")


def test_a_level_past_a_point_is_no_share_above_its_whole_when_the_advice_wraps_it():
    """The text report wraps an advice's quoted finding anywhere: '114% of the async' then,
    on the next line, 'flush point' (a live flush-stall recording)."""
    from innostall.analysis.checks.figure_bounds_check import words_problems

    wrapped = "                reached 12.3 MiB, 114% of the async\n                flush point (10.7 MiB)"
    assert words_problems(wrapped, "the text report") == []
    assert words_problems("busy 114% of the time", "the text report") != []


def test_a_replica_lag_of_whole_seconds_the_advice_quotes_is_one_the_report_says():
    """The report prints the lag as the replica gives it, whole seconds ('at most 1 s'): the
    checker knows lag_s_max in those words (a live recording's advice quoted 1 s, flagged)."""
    detail = ("redo-bound: the applier applied 900 events (90.0/s), busy 9.0 s of 10.0 s (90%); of the 8.0 s "
              "watched whole, 60% waiting for the redo log at commit (4.8 s)")
    phase = {"from_s": 0.0, "to_s": 10.0, "verdict": "redo-bound", "detail": detail,
             "figures": {"watched_s": 8.0, "split_s": {"redo": 4.8, "row_lock": 0.0}}}
    told = {"replica": {"phases": [phase], "lag_s_max": 1}, "findings": []}
    meta = {"target": {"family": "mariadb", "version": "11.4.5"},
            "server_variables": {"at_start": {"innodb_flush_log_at_trx_commit": "1", "slave_parallel_threads": "0"}}}
    advice = advise(told, meta)
    assert all("up to 1 s here" in a.expected for a in advice.actions)
    assert advice_problems(told, advice.as_json()) == []


def test_a_redo_wait_too_small_for_the_phases_words_is_not_quoted_by_the_commit_flush_not_helping():
    """A phase's words name a part from 1% of the time watched: a row-lock-bound replica that
    waited 10 ms for the redo log (0.2% of 6.4 s) was told 'for the redo log at commit 10 ms',
    a figure its report never printed (the suite's checker, a live row-lock recording)."""
    detail = ("row-lock-bound: the applier applied 40 events (6.2/s), busy 6.4 s of 6.5 s (98%): 94% of it "
              "waiting on row locks (6.0 s), 5% on CPU (0.3 s)")
    split = {"row_lock": 6.0, "on_cpu": 0.35, "redo": 0.0104}
    phase = {"from_s": 0.0, "to_s": 6.5, "verdict": "row-lock-bound", "detail": detail,
             "figures": {"watched_s": 6.4, "split_s": split, "shares": {"row_lock": 0.94, "on_cpu": 0.05,
                                                                        "redo": 0.0}}}
    told = {"replica": {"phases": [phase]}, "findings": []}
    meta = {"target": {"family": "mariadb", "version": "11.4.5"}, "server_variables": {"at_start": {}}}
    advice = advise(told, meta)
    [wrong] = advice.not_helping
    assert "less than a hundredth of it" in wrong.why and "10 ms" not in wrong.why
    assert advice_problems(told, advice.as_json()) == []
    phase["figures"]["shares"]["redo"], split["redo"] = 0.04, 0.258
    assert "for the redo log at commit 258 ms" in advise(told, meta).not_helping[0].why
