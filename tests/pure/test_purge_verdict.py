"""Purge's story: pinned and purgeable history, where the batches' time goes, and the
phases with their verdicts, on synthetic recordings written the way the recorder writes
them (tests/recordings.py), and on old recordings without any of it."""
from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import recordings
from conftest import REPO, innostall
from innostall.format import journal as fmt
from innostall.analysis.wording import phases as phase_words
from innostall.analysis.wording.phase_list import PHASES_SHOWN
from innostall.analysis import diff, html, metrics, phases, purge_history, purge_time, recording, report_tables, summary, views
from innostall.analysis.checks import verdict_check
from recordings import purge_journal, view

FORMAT_1 = REPO / "tests" / "data" / "purge-stall"  # make demo, format 1: no history, no views


def load(tmp_path, records, name="rec"):
    return recording.load(str(recordings.write(tmp_path / name, records)))


def story(rec) -> dict:
    return summary.summary(rec)["purge"]


# --- the rules, as pure functions ------------------------------------------------------

def test_pinned_is_the_history_added_since_the_oldest_view_opened():
    nan = math.nan
    pinned, free = purge_history.split_history(
        history=[1500, 2000, 2600, 2600, 3000], all_empty=[False, False, False, True, False],
        keys=[(7, 0.5)] * 4 + [None], at_open=[1000] * 4 + [None], views_recorded=True)
    assert pinned[:3] == [500, 1000, 1600]  # history − 1000, the rest purgeable
    assert free[:3] == [1000, 1000, 1000]
    assert (pinned[3], free[3]) == (2600, 0)  # a whole interval found nothing: all pinned
    assert (pinned[4], free[4]) == (0, 3000)  # the view is gone, no other seen
    # the history when the view opened can exceed today's: never more purgeable than all
    assert purge_history.split_history([800], [False], [(7, 0.5)], [1000], True) == ([0], [800])
    # unknown history stays unknown
    p, f = purge_history.split_history([nan], [True], [(7, 0.5)], [1000], True)
    assert math.isnan(p[0]) and math.isnan(f[0])


def test_purgeable_never_grows_while_the_same_view_stays_oldest():
    pinned, free = purge_history.split_history(
        history=[5000, 5200, 5400], all_empty=[True, False, False], keys=[(7, -3.0)] * 3,
        at_open=[None] * 3, views_recorded=True)
    assert free == [0, 0, 0] and pinned == [5000, 5200, 5400]


def test_a_view_opened_before_the_recording_pins_all_only_once_purge_finds_nothing():
    pinned, free = purge_history.split_history(
        history=[5000, 5200], all_empty=[False, True], keys=[(7, -30.0)] * 2,
        at_open=[None, None], views_recorded=True)
    assert math.isnan(pinned[0]) and math.isnan(free[0])  # unknown, not 0
    assert (pinned[1], free[1]) == (5200, 0)


def test_without_read_views_no_view_seen_says_nothing():
    pinned, _ = purge_history.split_history([3000], [False], [None], [None], views_recorded=False)
    assert math.isnan(pinned[0])


def interval(**kw) -> phases.Interval:
    base = dict(history=5000.0, before=5000.0, trend=0.0, peak=5000.0, pinned=0.0, batches=10,
                all_empty=False, pages=500, dml_delays=0)
    return phases.Interval(**{**base, **kw})


@pytest.mark.parametrize("fields, expected", [
    ({"dml_delays": 40, "pinned": 5000.0}, "throttled"),  # the delay is named first
    ({"pinned": 4500.0}, "pinned"),
    ({"all_empty": True, "pages": 0}, "pinned"),
    ({"history": math.nan, "trend": math.nan, "pinned": math.nan, "all_empty": True}, "pinned"),
    ({"trend": -3000.0, "history": 2000.0}, "catching_up"),
    ({"trend": -46000.0, "history": 20.0, "before": 46000.0}, "catching_up"),  # drained in one
    ({"trend": -46000.0, "history": 20.0, "before": 30.0}, "keeping_up"),  # drained already
    ({"trend": -3000.0, "history": 2000.0, "pages": 0}, "keeping_up"),  # fell, but not by purge here
    ({"trend": 2000.0}, "falling_behind"),
    ({"trend": 90.0, "history": 1200.0, "peak": 1200.0}, "keeping_up"),  # within TREND_MIN: steady
    ({"trend": 400.0, "history": 50000.0, "peak": 50000.0}, "keeping_up"),  # within 10% of the level
    ({"trend": 200.0, "history": 210.0, "peak": 210.0}, "keeping_up"),  # rose, but to no backlog
    ({"history": 20.0, "pages": 0, "all_empty": True}, "idle"),
    ({"history": math.nan, "trend": math.nan, "pinned": math.nan, "batches": 0, "pages": 0}, "idle"),
])
def test_verdict_rules(fields, expected):
    assert phases.verdict(interval(**fields)) == expected


def test_short_runs_join_their_neighbour_unless_decisive():
    flapping = ["keeping_up", "falling_behind", "keeping_up", "keeping_up", "falling_behind",
                "keeping_up", "keeping_up", "keeping_up"]
    assert phases.debounce(flapping, [False] * 8) == ["keeping_up"] * 8
    edges = ["keeping_up"] * 2 + ["pinned"] * 5 + ["idle"] * 2  # nothing beyond them to flap with
    assert phases.debounce(edges, [False] * 9) == edges
    warm_up = ["keeping_up"] + ["falling_behind"] * 5
    assert phases.debounce(warm_up, [False] * 6) == ["falling_behind"] * 6
    drain = ["pinned"] * 5 + ["catching_up"] + ["idle"] * 4  # a 1-interval drain of it all
    keep = [False] * 5 + [True] + [False] * 4
    assert phases.debounce(drain, keep) == drain
    assert phases.debounce(drain, [False] * 10) == ["pinned"] * 6 + ["idle"] * 4
    flaps_twice = ["pinned"] * 4 + ["keeping_up", "pinned", "keeping_up"] + ["pinned"] * 4
    assert phases.debounce(flaps_twice, [False] * 11) == ["pinned"] * 11


def test_the_bound_is_the_largest_share_of_batch_time():
    split = purge_time.time_split({"total": 1000, "cpu": 200, "io": 630, "latch": 50})
    assert split == {"cpu": 200, "io": 630, "latch": 50, "other": 120}
    assert phase_words.bound_text(*purge_time.bound(split)) == "I/O-bound (63% of batch time waiting on I/O)"
    assert purge_time.time_split({"total": 100, "cpu": 80, "io": 40, "latch": 0})["other"] == 0  # clipped
    assert purge_time.time_split({"total": 0}) is None and purge_time.bound(None) is None


def test_while_workers_run_the_coordinators_wait_is_theirs():
    coordinator = {"cpu": 10.0, "io": 5.0, "latch": 0.0, "other": 985.0}  # mostly waiting for them
    workers = {"cpu": 300.0, "io": 600.0, "latch": 50.0, "other": 50.0}
    whole = purge_time.purge_split(coordinator, workers)
    assert whole == {"cpu": 310.0, "io": 605.0, "latch": 50.0, "other": 50.0}
    assert purge_time.bound(whole)[0] == "io"
    assert purge_time.purge_split(coordinator, None) == coordinator


# --- stories, end to end ---------------------------------------------------------------

def test_pinned_then_catching_up(tmp_path):
    rec = load(tmp_path, recordings.pinned_then_catch_up())
    s = story(rec)
    assert [p["verdict"] for p in s["phases"]] == ["pinned", "catching_up", "idle"]
    pinned, catch_up, idle = s["phases"]
    assert (pinned["from_s"], pinned["to_s"], catch_up["to_s"], idle["to_s"]) == (0.0, 12.0, 14.0, 18.0)
    # who a DBA looks for first (connection, user, statement, age), then the thread and where it opened
    assert pinned["detail"].startswith('pinned by connection 17 (user app, now running "SELECT SUM(k) FROM sbtest1", '
                                       "read view open 11.5 s; thread 4321, opened at "
                                       "trx_assign_read_view ← innobase_start_trx_and_assign_read_view")
    # over the phase, from its first known history to its end, where the view still held it all
    assert pinned["detail"].endswith("history 1,800 → 10,600 over 11.0 s (+800/s); at its end the view "
                                     "held 10,600 of 10,600 transactions of history")
    assert catch_up["detail"] == ("catching up: history 10,600 → 0 over 2.0 s (-5,300/s), 127 pages per batch; "
                                  "CPU-bound (78% of batch time on CPU)")
    view_ = s["pinned_by"][0]
    assert len(s["pinned_by"]) == 1
    assert {k: view_[k] for k in ("tid", "opened_s", "age_s", "connection_id", "statement")} == {
        "tid": 4321, "opened_s": 0.5, "age_s": 11.5, "connection_id": 17,
        "statement": "SELECT SUM(k) FROM sbtest1"}
    assert view_["stack"] == recordings.VIEW_STACK and view_["pinned_max"] == 10600
    assert s["history"] == {"first": 1800, "last": 0, "max": 10600, "known_from_s": 1.0,
                            "known_to_s": 18.0, "known_to_end": True, "pinned": 0,
                            "purgeable": 0, "growth_per_s": round(-1800 / 17, 3),
                            "recent_growth_per_s": -800.0, "recent_from_s": 13.0, "drain_s": 0.0}
    assert s["batch_time_ms"] == {"cpu": 1051.8, "io": 150.0, "latch": 70.0, "other": 80.6}
    assert s["worker_time_ms"] == dict.fromkeys(purge_time.SPLIT)


def test_the_drain_estimate_while_falling(tmp_path):
    steps = [{"history": h, "purge_batches": 20, "purge_pages": 2000} for h in
             (50000, 50000, 48000, 46000, 44000, 42000, 40000)]
    s = story(load(tmp_path, purge_journal(steps)))
    assert s["history"]["recent_growth_per_s"] == -2000.0
    assert s["history"]["drain_s"] == 20.0  # 40000 at 2000/s
    assert s["history"]["purgeable"] is None  # no read view was recorded: the split is unknown


def test_throttled_dml_is_named_with_its_delay(tmp_path):
    snapshot = view(555, 1.0, 2000)
    steps = [{"history": 2000, "purge_batches": 5, "purge_pages": 600} for _ in range(4)]
    steps += [{"history": 2100 + 100 * i, "purge_batches": 1, "purge_empty_batches": 1,
               "dml_delays": 2063 if i < 4 else 2065, "dml_delay_us": 2000 * (2063 if i < 4 else 2065),
               "views": [snapshot]} for i in range(5)]
    s = story(load(tmp_path, purge_journal(steps)))
    assert [p["verdict"] for p in s["phases"]] == ["keeping_up", "throttled"]
    detail = s["phases"][1]["detail"]
    assert detail.startswith("throttled: DML delayed 2,000 µs × 10,317 row operations "
                             "(innodb_max_purge_lag), history 2,000 → 2,500")
    assert "pinned by thread 555" in detail  # and who pins the history it throttles for
    assert s["dml_delays"] == 10317


def test_io_bound_purge_falling_behind(tmp_path):
    steps = [{"history": 1000 + 2000 * i, "purge_batches": 4, "purge_pages": 400,
              "purge_batch_ns": 10**9, "purge_batch_cpu_ns": 200_000_000,
              "purge_batch_io_ns": 630_000_000, "purge_batch_latch_ns": 50_000_000} for i in range(10)]
    rec = load(tmp_path, purge_journal(steps))
    s = story(rec)
    assert [p["verdict"] for p in s["phases"]] == ["falling_behind"]
    assert s["phases"][0]["detail"] == ("falling behind: history 1,000 → 19,000 over 9.0 s (+2,000/s) while "
                                        "purge handled 400 pages/s; I/O-bound (63% of batch time waiting on I/O)")
    assert s["batch_time_ms"] == {"cpu": 2000.0, "io": 6300.0, "latch": 500.0, "other": 1200.0}
    assert s["history"]["drain_s"] is None  # rising: it does not drain
    assert views.text_report(rec).splitlines()[2].endswith("I/O-bound (63% of batch time waiting on I/O)")


def test_a_slow_steady_climb_is_falling_behind_a_saw_tooth_is_not(tmp_path):
    """+90/s at a level of 8,000 moves the history 450 in the trend's 5 intervals, under its
    10% (800): found over the climb's whole length (phases.slow_climbs), here 12 intervals
    of 20, after which the history holds; a saw-tooth as MariaDB's coordinator draws one
    (400 to 957 within a second) around a flat level is keeping up."""
    def steps(levels):
        return [{"history": h, "purge_batches": 1, "purge_pages": 20, "purge_batch_ns": 4 * 10**8,
                 "purge_batch_cpu_ns": 10**7, "purge_batch_io_ns": 3 * 10**8} for h in levels]
    climb = [8000] * 4 + [8000 + 90 * i for i in range(1, 13)] + [9080] * 4
    told = story(load(tmp_path, purge_journal(steps(climb)), "climb"))["phases"]
    assert [p["verdict"] for p in told] == ["keeping_up", "falling_behind", "keeping_up"]
    behind = told[1]["figures"]["history"]
    assert behind["from"] >= 8000 and behind["to"] == 9080 and 80 <= behind["per_s"] <= 100
    saw = [400 if i % 2 else 957 for i in range(20)]
    assert [p["verdict"] for p in story(load(tmp_path, purge_journal(steps(saw)), "saw"))["phases"]] == ["keeping_up"]


def test_workers_split_their_own_time(tmp_path):
    steps = [{"history": 500, "purge_batches": 10, "purge_pages": 300, "purge_batch_ns": 10**8,
              "purge_batch_cpu_ns": 10**7, "purge_worker_tasks": 30, "purge_worker_ns": 3 * 10**8,
              "purge_worker_cpu_ns": 2 * 10**8, "purge_worker_latch_ns": 6 * 10**7} for _ in range(4)]
    s = story(load(tmp_path, purge_journal(steps)))
    assert s["worker_time_ms"] == {"cpu": 800.0, "io": 0.0, "latch": 240.0, "other": 160.0}
    assert s["worker_tasks"] == 120
    assert [p["verdict"] for p in s["phases"]] == ["keeping_up"]


def test_history_not_yet_read_is_unknown_not_zero(tmp_path):
    # the gauge holds 0 until the first read: those intervals must not count as an empty history
    steps = [{"purge_batches": 1, "purge_empty_batches": 1} for _ in range(3)]
    steps += [{"history": 7000 + 10 * i, "purge_batches": 1, "purge_empty_batches": 1} for i in range(4)]
    rec = load(tmp_path, purge_journal(steps))
    s = story(rec)
    assert (s["history"]["first"], s["history"]["known_from_s"]) == (7000, 4.0)
    assert s["history"]["pinned"] == 7030  # every batch found nothing
    table = purge_history.purge_table(rec)
    assert table["history"].iloc[:3].isna().all()
    assert report_tables.interval_table(rec, ["history_length"])["history_length"].iloc[:3].isna().all()
    assert [p["verdict"] for p in s["phases"]] == ["pinned"]
    assert "no open read view was recorded" in s["phases"][0]["detail"]


def test_no_history_at_all_is_null_and_the_empty_batches_still_speak(tmp_path):
    steps = [{"purge_batches": 1, "purge_empty_batches": 1} for _ in range(6)]
    s = story(load(tmp_path, purge_journal(steps)))
    assert set(s["history"].values()) == {None}
    assert s["pinned_by"] == [] and s["batch_time_ms"] == dict.fromkeys(purge_time.SPLIT)
    assert [p["verdict"] for p in s["phases"]] == ["pinned"]
    assert "its length was not recorded" in s["phases"][0]["detail"]


def test_format_1_recording_reports_every_key_without_its_figures(tmp_path):
    done = innostall("report", FORMAT_1, "--json")
    assert done.returncode == 0, done.stderr
    s = json.loads(done.stdout)["purge"]
    assert s["history"] == dict.fromkeys(["first", "last", "max", "known_from_s", "known_to_s",
                                          "known_to_end", "pinned", "purgeable", "growth_per_s",
                                          "recent_growth_per_s", "recent_from_s", "drain_s"])
    assert s["pinned_by"] == [] and s["batch_time_ms"] == s["worker_time_ms"] == dict.fromkeys(purge_time.SPLIT)
    # the demo's stall, then the commit's catch-up: 146149 pages in one interval
    assert [p["verdict"] for p in s["phases"]] == ["pinned", "catching_up", "idle"]
    assert "146,149 undo pages in 1,152 batches" in s["phases"][1]["detail"]
    report = innostall("report", FORMAT_1)
    assert report.returncode == 0 and report.stdout.splitlines()[1] == "Verdict"
    assert "history list length: not recorded" in report.stdout
    page = innostall("report", FORMAT_1, "--html", tmp_path / "p.html")
    assert page.returncode == 0, page.stderr
    assert "history length not recorded" in (tmp_path / "p.html").read_text()


def test_read_views_table_keeps_each_line_with_the_snapshot_after_it():
    records = purge_journal([{"history": 10, "views": [view(1, -4.0, None, connection_id=3, user="u")]},
                             {"history": 20, "views": []},
                             {"history": 30, "views": [view(1, -4.0), view(2, 2.5, 20)]}])
    records.append({"type": "read_views", "mono_ns": 5 * 10**9, "open": 1, "views": []})  # cut short
    table = fmt.read_views_table(records)
    assert table[["interval", "tid"]].values.tolist() == [[0, 1], [2, 1], [2, 2]]
    first = table.iloc[0]
    assert (first.t_s, first.opened_s, first.source, first.connection_id, first.user) == (1.0, -4.0, "sql", 3, "u")
    assert first.age_s == pytest.approx(5.0, abs=1e-5) and pd.isna(first.history_at_open)
    assert table.iloc[2].history_at_open == 20 and table.iloc[2].stack == recordings.VIEW_STACK
    assert table["open"].tolist() == [1, 2, 2] and not table["seen_open"].any()
    assert list(fmt.read_views_table([]).columns) == list(fmt.READ_VIEW_COLUMNS)


def test_a_view_first_seen_after_its_line_was_stamped_is_never_of_negative_age():
    """A view found in memory is stamped when the walk read it, which can be a little after
    the read_views line's own stamp: 'read view open at least -0.0 s' was the sentence."""
    late = view(7, 1.0, seen_open=True, source="memory", connection_id=9)  # stamped at the snapshot
    table = fmt.read_views_table(purge_journal([{"history": 10, "views": [late]}]))
    assert table.iloc[0].age_s == 0.0 and not math.copysign(1, table.iloc[0].age_s) < 0
    words = phase_words.view_words({**late, "tid": 7, "age_s": table.iloc[0].age_s})
    assert "read view open at least 0.0 s" in words and "-" not in words


def test_gauges_are_levels_in_the_diff_and_never_rates(tmp_path):
    a = load(tmp_path, purge_journal([{"history": h, "purge_batches": 2, "purge_pages": 20}
                                      for h in (1000, 1000, 3000)]), "a")
    b = load(tmp_path, purge_journal([{"history": h, "purge_batches": 2, "purge_pages": 20}
                                      for h in (2000, 2000, 6000)]), "b")
    assert "history_length" not in report_tables.counter_overview(a).index
    flat = metrics.numeric_metrics(a, summary.summary(a))
    assert "counter.history_length.per_s" not in flat
    assert (flat["gauge.history_length.mean"], flat["gauge.history_length.max"],
            flat["gauge.history_length.last"]) == (5000 / 3, 3000, 3000)
    table = diff.diff(a, b).table.set_index("metric")
    assert table.loc["gauge.history_length.last", "ratio"] == 2.0
    assert table.loc["purge.history.last", "ratio"] == 2.0
    assert table.loc["counter.purge_pages.per_s", "ratio"] == 1.0


def test_read_views_are_exported_and_loaded(tmp_path):
    from innostall import analysis
    from innostall.analysis import export

    directory = recordings.write(tmp_path / "rec", recordings.pinned_then_catch_up())
    written, _ = export.export(recording.load(str(directory)), str(tmp_path / "out"))
    assert str(tmp_path / "out" / "read_views.csv") in written
    rows = pd.read_csv(tmp_path / "out" / "read_views.csv")
    assert rows["tid"].unique().tolist() == [4321] and len(rows) == 12
    frames = analysis.load_frames(str(directory))
    assert frames["read_views"]["connection_id"].iloc[0] == 17
    assert frames["purge"]["pinned"].iloc[11] == 10600 and frames["purge"]["purgeable"].iloc[12] == 4000


def test_a_long_recordings_verdict_keeps_every_kind_and_the_longest_phases_and_tallies_them_all(tmp_path):
    cycle = ([{"history": 5000 + 100 * i, "purge_batches": 1, "purge_empty_batches": 1} for i in range(5)]
             + [{"history": 0, "purge_batches": 40, "purge_pages": 5000}]
             + [{"history": 0, "purge_batches": 1, "purge_empty_batches": 1} for _ in range(4)])
    # the last cycle's pin lasts three times as long: a stall late in a long recording
    steps = cycle * 11 + [{"history": 5000 + 100 * i, "purge_batches": 1, "purge_empty_batches": 1}
                          for i in range(15)] + cycle[5:]
    rec = load(tmp_path, purge_journal(steps))
    phases = story(rec)["phases"]
    assert len(phases) == 36 and [p["verdict"] for p in phases[:3]] == ["pinned", "catching_up", "idle"]
    lines = views.text_report(rec).splitlines()
    shown = lines[2:lines.index("")]
    assert len(shown) == PHASES_SHOWN + 1
    assert shown[0].startswith("  36 phases: catching up 12 (") and "idle 12 (" in shown[0] and "pinned 12 (" in shown[0]
    late = max(phases, key=lambda p: p["to_s"] - p["from_s"])
    assert late["verdict"] == "pinned" and late is phases[-3]
    assert any(line.endswith(f" s  {late['detail']}") for line in shown)  # not cut for coming last
    times = [float(line.split()[0]) for line in shown[1:]]
    assert times == sorted(times)


def test_a_view_caught_after_its_opening_is_said_to_be_at_least_that_old():
    words = phase_words.view_words({"tid": 9, "opened_s": 3.0, "age_s": 42.0, "seen_open": True,
                              "stack": recordings.VIEW_STACK, "connection_id": None, "user": None,
                              "statement": None})
    assert words == ("thread 9 (read view open at least 42.0 s; first seen at trx_assign_read_view "
                     "← innobase_start_trx_and_assign_read_view ← trans_begin)")
    sql = phase_words.view_words({"tid": 9, "opened_s": -30.0, "age_s": 42.0, "stack": "", "connection_id": 5,
                            "user": "app", "statement": "SELECT  SLEEP(100)"})
    assert sql == ('connection 5 (user app, now running "SELECT SLEEP(100)", read view open 42.0 s; thread 9, '
                   'opened before the recording)')


# --- a real recording ------------------------------------------------------------------

SNAPSHOT = REPO / "tests" / "data" / "snapshot-commit"  # see its truth.json


def test_a_real_snapshot_pins_purge_then_its_commit_lets_it_catch_up():
    truth = json.loads((SNAPSHOT / "truth.json").read_text())
    rec = recording.load(str(SNAPSHOT))
    s = story(rec)
    verdicts = [p["verdict"] for p in s["phases"]]
    assert verdicts.count("pinned") == 1 and verdicts[verdicts.index("pinned") + 1] == "catching_up"
    pinned, catch_up = s["phases"][verdicts.index("pinned"):][:2]
    assert pinned["detail"].startswith(f"pinned by thread {truth['tid']} (read view open ")
    assert "innobase_start_trx_and_assign_read_view" in pinned["detail"]
    assert abs((pinned["to_s"] - pinned["from_s"]) - truth["held_s"]) <= 1
    [view_] = s["pinned_by"]
    assert view_["tid"] == truth["tid"] and abs(view_["age_s"] - truth["held_s"]) <= 1
    # the server's own figure, read just before the commit, at most a second after our last
    # pinned snapshot: ours is lower by at most what a second and a half of updates add
    table = purge_history.purge_table(rec)
    rising = table.loc[pinned["from_s"] + 0.5:pinned["to_s"], "growth_per_s"].max()
    assert 0 <= truth["history_before_commit"] - s["history"]["max"] <= 1.5 * rising
    assert catch_up["detail"].startswith(f"catching up: history {s['history']['max']:,} → ")
    assert s["history"]["last"] < 1000 and s["history"]["pinned"] == 0


def test_a_transaction_found_by_sql_without_a_thread_is_named_by_its_connection(tmp_path):
    old = {"opened_s": -30.0, "history_at_open": None, "folded": "", "source": "sql",
           "connection_id": 5, "user": "report", "statement": "SELECT SLEEP(100)"}  # no tid
    steps = [{"history": 40000 + 500 * i, "purge_batches": 1, "purge_empty_batches": 1, "views": [old]}
             for i in range(6)]
    rec = load(tmp_path, purge_journal(steps))
    assert rec.read_views["tid"].isna().all()
    s = story(rec)
    assert s["phases"][0]["detail"].startswith(
        'pinned by connection 5 (user report, now running "SELECT SLEEP(100)", read view open 36.0 s; '
        'opened before the recording): history 40,000 → 42,500 over 5.0 s (+500/s); at its end the '
        'view held 42,500 of 42,500')
    [view_] = s["pinned_by"]
    assert (view_["tid"], view_["connection_id"], view_["source"], view_["opened_s"]) == (None, 5, "sql", -30.0)
    assert "tid ?" in views.text_report(rec)
    assert html.view_spans(rec, s["pinned_by"])["label"].tolist() == ["conn 5"]


def test_history_is_unknown_where_the_governor_detached_its_probes(tmp_path):
    """A gauge no probe refreshed keeps its last value: that is the history only where its
    probes were attached all along (the server computed none); detached, it is unknown,
    never the stale level (a recording at a tiny budget called purge idle with 'history at
    most 486' while the server had 28,000)."""
    whole = {"governor.attached_ns.history": 10**9}
    steps = [{"history": 500, "purge_batches": 1, **whole},
             {"purge_batches": 1, **whole},  # attached, not read: the coordinator slept
             {"history": 800, "purge_batches": 1, "governor.attached_ns.history": 3 * 10**8}]
    steps += [{"purge_batches": 1, "purge_empty_batches": 1, "governor.attached_ns.history": 0}
              for _ in range(5)]
    rec = load(tmp_path, purge_journal(steps))
    history = purge_history.purge_table(rec)["history"]
    assert history.iloc[:3].tolist() == [500, 500, 800]
    assert history.iloc[3:].isna().all()
    s = story(rec)["history"]
    assert (s["last"], s["known_to_s"], s["known_to_end"]) == (800, 3.0, False)
    text = innostall("report", tmp_path / "rec").stdout
    assert "read from 1.0 to 3.0 s, unknown after" in text and "at 3.0 s pinned" in text


def test_a_catch_up_the_sampled_history_did_not_see_is_still_a_phase(tmp_path):
    """The history's probes detached (by the governor) over the one interval in which the
    view closed and purge drained the backlog, then read again with the load going on: the
    move is taken from the reading before that interval (a CI run called this 'pinned' then
    'keeping up', and no line said purge caught up)."""
    whole = {"governor.attached_ns.history": 10**9}
    snapshot = view(4321, 0.5, 1000)
    steps = [{"history": 1000 + 800 * i, "purge_batches": 1, "purge_empty_batches": 1,
              "views": [snapshot], **whole} for i in range(1, 13)]
    steps.append({"purge_batches": 60, "purge_pages": 60 * 127, "governor.attached_ns.history": 0})
    steps += [{"history": 800, "purge_batches": 30, "purge_pages": 30 * 127, **whole} for _ in range(8)]
    s = story(load(tmp_path, purge_journal(steps)))
    verdicts = [(p["verdict"], p["from_s"]) for p in s["phases"]]
    assert verdicts[:2] == [("pinned", 0.0), ("catching_up", 12.0)], verdicts
    assert "history 10,600 → 800" in s["phases"][1]["detail"]


def test_a_connection_whose_views_follow_one_another_reads_true_to_the_checker(tmp_path):
    """A connection opens a view per transaction: two views of one thread in one pinned
    phase read alike, each said once. The checker took both out with the first (the live
    suite's test_a_stalled_recorder recording: 'names 24720 in words not its own')."""
    first = view(7, 0.5, 1000, connection_id=9, source="memory", seen_open=True)
    second = view(7, 6.5, 1100, connection_id=9, source="memory", seen_open=True)
    steps = [{"history": 1000 + 800 * i, "purge_batches": 1, "purge_empty_batches": 1,
              "views": [first if i <= 6 else second]} for i in range(1, 13)]
    directory = recordings.write(tmp_path / "rec", purge_journal(steps))
    read = verdict_check.read(str(directory))
    sentences = [p["detail"] for p in read.summed["purge"]["phases"] if p["verdict"] == "pinned"]
    assert sentences and any(s.count("connection 9") >= 2 for s in sentences), sentences
    assert verdict_check.contradictions(read) == []
