"""verify's history_rise_per_s (analysis/advice/judge.py): how fast the history rose while
purge worked behind a load, from the first phase that was not idle to the highest phase end;
the figure the advice of more purge threads is judged by, where a load waits at its end for
purge to catch up (purge-behind.sh) and so nets near 0 from first reading to last."""
from __future__ import annotations

from innostall.analysis.advice.judge import figure_of


def phase(verdict: str, start: float, end: float, level_from: int, level_to: int) -> dict:
    return {"verdict": verdict, "from_s": start, "to_s": end,
            "figures": {"history": {"from": level_from, "to": level_to, "from_s": start, "to_s": end}}}


def summary(*phases: dict) -> dict:
    return {"purge": {"phases": list(phases), "history": {"growth_per_s": 0.0}}}


def test_the_rise_is_taken_from_the_load_start_to_the_top_not_to_the_drained_end():
    run = summary(phase("idle", 0, 4, 0, 0), phase("falling_behind", 4, 12, 0, 24_000),
                  phase("catching_up", 12, 20, 24_000, 1_000))
    assert figure_of(run, "history_rise_per_s") == 24_000 / 8
    assert figure_of(run, "history_growth_per_s") == 0.0  # the net growth says nothing here


def test_a_history_that_never_rose_above_its_start_rises_at_0_and_one_never_read_is_unknown():
    assert figure_of(summary(phase("catching_up", 0, 5, 9_000, 100)), "history_rise_per_s") == 0.0
    assert figure_of(summary(phase("idle", 0, 5, 0, 0)), "history_rise_per_s") is None
