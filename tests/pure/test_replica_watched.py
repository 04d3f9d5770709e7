"""A replica's phases say a cause only for time that was watched, and the replica's story
starts from what happened: its lag. At the default budget a busy applier's probes may be
attached a few percent of the time: a phase attached less than half of it, and not a fifth
in windows spread over its busy seconds (interval_columns.watched_enough), says what was
counted and that it was not watched, with no cause and no share; no figure is ever below 0
or above its whole (figure_bounds_check.py, in verdict_check.check); the finding starts
from the lag the replica reported and where it grew."""
from __future__ import annotations

import re

import pytest

from conftest import REPO
from innostall.analysis import applier_counts, cost, recording, summary
from innostall.analysis.checks import figure_bounds_check, verdict_check
from innostall.analysis import interval_columns
from innostall.analysis.interval_columns import SAMPLED_ENOUGH, WATCHED_ENOUGH
from innostall.analysis.replica_time import BOUND
from innostall.analysis.sections import purge as purge_section
from innostall.analysis.sections import replica as replica_words
from test_replica_report import APPLIER_PROBES, IDLE, S, SQL_THREAD, applied, with_open_event

import recordings
from recordings import purge_journal

# MariaDB 11.4.5 replica at the default budget (1%), recorded 30 s: 4 threads updating on
# the primary while a session on the replica held sbtest1's rows from 4 s to 10 s; the lag
# the replica reported rose from 0 to 23 s
SAMPLED = REPO / "tests" / "data" / "replica-row-lock-sampled"
# MariaDB 11.4.5 replica at the default budget, replica-redo.sh (test_verify_replica_live's
# run as it is): its applier one commit after another on a disk of 200 writes a second, its
# probes costing more than the budget while it applies: attached 11-41% of each second of the
# 9-s stall (held open by the replica falling behind), 47% of the recording
REDO_SAMPLED = REPO / "tests" / "data" / "replica-redo-sampled"


@pytest.fixture(scope="module")
def sampled() -> verdict_check.ReportRead:
    """SAMPLED's report, read once for the tests that only read it (none alters it)."""
    return verdict_check.read(str(SAMPLED))


def test_a_phase_watched_a_tenth_names_no_cause_and_gives_no_share(sampled):
    told = sampled.summed["replica"]
    for p in told["phases"]:
        attached = p["figures"]["attached_share"]
        if attached is not None and attached < SAMPLED_ENOUGH and p["figures"]["busy_s"]:
            assert p["verdict"] == "unwatched", p["detail"]
            assert "too little watched to say what held it back" in p["detail"]
            assert not re.search(r"\d% (?!of the phase)", p["detail"]), p["detail"]  # no share but the attachment
        if p["verdict"] in BOUND.values():
            assert attached is None or attached >= SAMPLED_ENOUGH
    assert {p["verdict"] for p in told["phases"]} >= {"row-lock-bound", "unwatched"}


def test_a_stall_watched_under_half_in_windows_over_every_second_is_named():
    [phase] = summary.summary(recording.load(str(REDO_SAMPLED)))["replica"]["phases"]
    assert phase["verdict"] == "redo-bound" and phase["figures"]["attached_share"] < WATCHED_ENOUGH
    assert "its probes were attached 47% of the phase" in phase["detail"]
    # the checker reads it as every stored recording (test_verdict_consistency)


def test_the_same_stall_by_a_rule_of_half_the_phase_was_unwatched(monkeypatch):
    """As before the rule took a spread sample (interval_columns.watched_enough): advise then
    had nothing to say of a stall the replica reported 7 s of lag in."""
    monkeypatch.setattr(interval_columns, "SAMPLED_ENOUGH", WATCHED_ENOUGH)
    [phase] = summary.summary(recording.load(str(REDO_SAMPLED)))["replica"]["phases"]
    assert phase["verdict"] == "unwatched"


def test_the_finding_starts_from_the_lag_and_where_it_grew(sampled):
    rec, told = sampled.rec, sampled.summed
    lag = rec.counters[rec.counters["name"] == "server.replica_lag_s"].set_index("t_s")["value"]
    first = told["findings"].index(next(f for f in told["findings"] if f.startswith("The replica")))
    leading = told["findings"][first]
    assert leading.startswith(f"The replica fell behind: its lag grew from {lag.min():.0f} s at ")
    assert f"to {lag.max():.0f} s at {lag.idxmax():.1f} s." in leading
    assert "the largest part was waiting on row locks" in leading  # the watched part of the stall
    assert "too little watched to say what held it back" in leading
    # the checker reads it as every stored recording (test_verdict_consistency)


def test_the_checker_catches_a_lag_finding_the_counters_deny(monkeypatch):
    from innostall.analysis.wording import replica_lag
    real = replica_lag.lag_finding
    monkeypatch.setattr(replica_words, "lag_finding",
                        lambda replica: [f.replace("the largest part was waiting on row locks",
                                                   "the largest part was on CPU") for f in real(replica)])
    assert any("The replica fell behind" in p and "its tables say otherwise" in p
               for p in verdict_check.check(str(SAMPLED)))


def test_a_lag_that_rose_with_no_finding_is_caught(monkeypatch):
    monkeypatch.setattr(replica_words, "lag_finding", lambda replica: [])
    assert any("lag rose" in p and "no finding says so" in p for p in verdict_check.check(str(SAMPLED)))


def test_an_event_whose_probes_were_detached_leaves_no_negative_time(tmp_path):
    """An event in progress at the 4th snapshot (1.5 s so far) whose probes were detached
    before it ended: its gauge falls to 0 and no counter takes it. The interval's time is
    0, never -1.5 s, and the phase that holds it is not watched enough to name a cause."""
    steps = [{**applied(20, cpu=0.5), "governor.attached_ns.applier": S}] * 3
    steps += [{**IDLE, "governor.attached_ns.applier": S // 2}]
    steps += [{**IDLE, "governor.attached_ns.applier": S // 20}] * 4
    records = with_open_event(purge_journal(steps), {4: 1.5})
    records.insert(-1, {"type": "latch_tables", "mono_ns": records[-1]["mono_ns"], "appliers": SQL_THREAD})
    directory = recordings.write(tmp_path / "rec", records, probes=[*recordings.meta(False)["probes"], *APPLIER_PROBES])
    read = verdict_check.read(str(directory))
    assert (applier_counts.applier_deltas(read.rec) >= 0).all().all()
    assert all(p["figures"]["busy_s"] >= 0 for p in read.told["replica"]["phases"])
    assert verdict_check.contradictions(read) == []


def test_the_bounds_checker_catches_the_figures_a_user_met():
    """The issue's words, and a JSON figure below 0 and a share above its whole."""
    said = ("4.0 – 7.0 s  unsplit: the applier applied 12 events (4.0/s), busy -62767 µs of 3.0 s (-2%)"
            "; 16.0 – 29.2 s  cpu-bound: busy 1.2 s of 13.2 s (130%)")
    found = figure_bounds_check.words_problems(said, "the text report")
    assert [p.split("'")[1] for p in found] == ["-62767 µs", "-2%", "130%"]
    told = {"purge": {"phases": []}, "replica": {"phases": [{"figures": {
        "busy_s": -0.06, "capacity_s": 3.0, "busy_share": -0.02, "shares": {"on_cpu": 1.5}}}]}}
    found = figure_bounds_check.json_problems(told)
    assert any("busy_s is -0.06, below 0" in p for p in found)
    assert any("shares.on_cpu is 1.5, above its whole" in p for p in found)
    # a move of the history is signed by nature: not a figure out of bounds
    assert figure_bounds_check.words_problems("history 46,464 → 4 over 2.0 s (-23,240/s)", "text") == []


def test_a_level_past_its_point_and_a_moment_before_the_recording_are_in_bounds():
    """What the live suite's checker flagged in words that were true: the checkpoint age at
    114% of the async flush point (a level past a threshold, no share of a whole), and a
    view opened 4.6 s before the recording (a moment, signed)."""
    said = "checkpoint age up to 62.1 MiB at 3.0 s, 114% of the async flush point (54.4 MiB), 97% of the sync"
    assert figure_bounds_check.words_problems(said, "the text report") == []
    assert figure_bounds_check.words_problems("busy 3.4 s of 3.0 s (114%) of its time", "text") != []
    told = {"purge": {"pinned_by": [{"opened_s": -4.558, "age_s": 9.1}]}, "replica": None}
    assert figure_bounds_check.json_problems(told) == []
    assert purge_section.opened_when(-4.558) == "opened 4.6 s before the recording"
    assert " ".join(purge_section.opened_when(12.5).split()) == "opened at 12.5 s"


def test_an_overhead_estimate_above_the_servers_cpu_is_said_in_seconds():
    """The probes run on the server's CPU: an estimate above it is too high, said as such."""
    words = cost.overhead_words(100.28, 3.0)
    assert "%" not in words and "more than the 3.0 s of CPU the server ran" in words
    assert figure_bounds_check.words_problems(words, "text") == []
    assert cost.overhead_words(0.8, 8.0) == "overhead 0.80% of 8.0 s server CPU"


def test_on_a_replica_its_story_leads_the_timeline_the_findings_and_the_sections(sampled):
    from innostall.analysis.replica import applier_table
    from innostall.analysis.replica_timeline import LAG_COLUMN, replica_series
    read = sampled
    rec, told, page = read.rec, read.summed, read.html
    assert told["findings"][0].startswith("The replica fell behind: its lag grew")
    timeline = page[page.index('id="purge-timeline"'):]
    assert "Replica lag (s, as the replica reported it)" in timeline
    assert "Replica applier, ms\\u002fs: busy, and its watched time by part" in timeline  # "/" as the page's JSON has it
    index = rec.counters["t_s"].drop_duplicates().sort_values().iloc[1:].to_numpy()
    lanes, rows = replica_series(rec, applier_table(rec), index)
    lag = rec.counters[rec.counters["name"] == "server.replica_lag_s"].groupby("t_s")["value"].last()
    assert lanes[LAG_COLUMN].max() == lag.max() and "waiting on row locks ms/s" in rows[1][1]
    assert read.text.index("\nReplica applier (the replica's") < read.text.index("\nPurge")


def test_an_unwatched_phase_still_tells_the_row_lock_waits_their_probe_saw_whole(tmp_path):
    """The event probe attached 5% of each interval, the row-lock probe throughout: the
    waits charged whole are told, with no share and no cause; the rest is not."""
    from test_replica_report import write
    steps = [{**applied(40, row_lock=0.7, cpu=0.1), "governor.attached_ns.applier": S // 20}] * 6
    read = verdict_check.read(str(write(tmp_path, steps)))
    [phase] = read.summed["replica"]["phases"]
    assert phase["verdict"] == "unwatched" and phase["figures"]["counted_whole_s"]["row_lock"] == 4.2
    assert phase["detail"] == ("unwatched: the applier applied 240 events (40.0/s), counted busy 4.8 s, 4.2 s of it "
                               "waiting on row locks (their probe attached throughout); its probes were attached 5% "
                               "of the phase (the cost governor sampled them: a floor): too little watched to say "
                               "what else held it back")
    assert verdict_check.contradictions(read) == []


def test_the_lag_finding_tells_the_waits_seen_whole_in_a_span_too_little_watched(tmp_path, monkeypatch):
    from test_replica_report import write
    from innostall.analysis.wording import replica_lag
    steps = [{**applied(40, row_lock=0.7, cpu=0.1), "governor.attached_ns.applier": S // 20}] * 6
    directory = write(tmp_path, steps, lags=[0, 1, 2, 3, 4, 5])
    read = verdict_check.read(str(directory))
    assert read.summed["findings"][0] == ("The replica fell behind: its lag grew from 0 s at 1.0 s to 5 s at 6.0 s. "
                                          "0.0–6.0 s was too little watched to say what held it back, beyond 4.2 s "
                                          "waiting on row locks (their probe attached throughout).")
    assert verdict_check.contradictions(read) == []
    real = replica_lag.whole_words
    monkeypatch.setattr(replica_lag, "whole_words", lambda phases: real(phases).replace("4.2 s", "2.1 s"))
    assert any("The replica fell behind" in p and "its tables say otherwise" in p
               for p in verdict_check.check(str(directory)))


def test_intervals_that_look_quiet_because_they_were_little_watched_are_not_quiet():
    """A replica run of verify's at the default budget (tests/data/replica-quiet-unwatched,
    MariaDB 11.4.5, the commit's flush at 2): the applier watched 85% and 52% of two busy
    seconds, then 4 intervals attached 28% each that counted 0-67 ms busy, yet applied
    233-401 events each. Against their seconds they looked quiet (9% busy) and the 6 s read
    unwatched; against the time watched they were busy, and the phase is named by the split
    of what was watched: redo-bound, attached 55% of it, in every busy second."""
    out = str(REPO / "tests" / "data" / "replica-quiet-unwatched")
    [phase] = summary.summary(recording.load(out))["replica"]["phases"]
    assert phase["verdict"] == "redo-bound" and phase["figures"]["attached_share"] >= WATCHED_ENOUGH
    assert phase["figures"]["busy_share"] < 0.1 and "(the cost governor sampled them: a floor)" in phase["detail"]
    # the checker reads it as every stored recording (test_verdict_consistency)
