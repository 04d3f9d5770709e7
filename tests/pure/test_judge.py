"""verify's judge (analysis/advice/judge.py): whether a figure moved as the change should have
moved it, against the runs without the change."""
from __future__ import annotations

from innostall.analysis.advice.judge import judge


def test_a_move_within_the_spread_of_the_runs_without_the_change_is_not_confirmed():
    told = judge("history_rise_per_s", "down", [100.0, 140.0], 95.0)
    assert told["verdict"] == "not confirmed" and "unchanged within the 33%" in told["words"]


def test_a_move_past_the_spread_is_confirmed():
    told = judge("history_rise_per_s", "down", [110.0, 100.0], 75.0)
    assert told["verdict"] == "confirmed" and told["noise_pct"] == 9.5


def test_a_wait_gone_from_every_run_is_confirmed_however_far_apart_the_runs_were():
    """redo-room.sh's stall lasts as long as the old pages take to write, 5 s in one run and
    44 s in the next: the larger log removes it (0.0), which the spread of the runs' mean
    (156%) never could show."""
    told = judge("log_room_wait_s", "zero", [5.1, 44.1], 0.0)
    assert told["verdict"] == "confirmed", told["words"]
    assert told["words"].endswith("every run without the change had 10 times as much or more (5.1, 44.1)")


def test_a_wait_one_run_without_the_change_hardly_had_is_not_confirmed_gone():
    """A stall that nearly did not come in a run as it was may not come in the run with the
    change either: its going proves nothing."""
    assert judge("log_room_wait_s", "zero", [0.3, 40.0], 0.2)["verdict"] == "not confirmed"
    assert judge("log_room_wait_s", "zero", [0.0, 40.0], 0.0)["verdict"] == "not confirmed"


def test_a_figure_expected_to_go_must_fall_near_none():
    assert judge("log_room_wait_s", "zero", [30.0, 34.0], 12.0)["verdict"] == "not confirmed"
