"""Hours, not seconds (issue 30), offline: a long recording built from a short one
(scripts/bench/long_recording.py) reads as the short one's story told again and again,
a window of it (`report --from/--to`) tells the same intervals as the whole, and the
report's charts and per-interval tables stay bounded, saying so."""
from __future__ import annotations

import datetime as dt
import json
import re

import numpy as np
import pandas as pd
import pytest

import recordings
from bench import long_recording  # scripts/bench/, on sys.path from conftest
from conftest import innostall
from innostall.analysis import downsample, phases, recording, summary, views, window
from innostall.analysis.wording.phase_list import PHASES_SHOWN
from innostall.analysis.sections import latches as latches_section
from innostall.errors import UserError
from innostall.format import journal as fmt

CYCLES = 5


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """The pinned-then-catch-up story: a snapshot pins purge, commits, purge drains."""
    return recordings.write(tmp_path_factory.mktemp("source") / "rec", recordings.pinned_then_catch_up())


@pytest.fixture(scope="module")
def long(source, tmp_path_factory):
    intervals = len(recording.load(str(source)).counters["interval"].unique())
    return long_recording.generate(source, tmp_path_factory.mktemp("long") / "rec", CYCLES * intervals)


def verdicts(rec) -> list[str]:
    return [p["verdict"] for p in summary.summary(rec)["purge"]["phases"]]


def test_a_long_recording_tells_its_sources_story_once_per_repeat(source, long):
    short, whole = recording.load(str(source)), recording.load(str(long))
    assert whole.meta["complete"] and whole.counters["interval"].nunique() == \
        CYCLES * short.counters["interval"].nunique()
    assert whole.counter_total("purge_pages") == CYCLES * short.counter_total("purge_pages")
    assert verdicts(whole) == verdicts(short) * CYCLES
    pinned = [p for p in summary.summary(whole)["purge"]["phases"] if p["verdict"] == "pinned"]
    assert all(p["detail"].startswith("pinned by connection 17") for p in pinned)
    # the attach to the last snapshot, as long in meta.json as in the journal
    assert (whole.meta["stop_real_ns"] - whole.meta["start_real_ns"]) / 1e9 == pytest.approx(whole.duration_s)


def test_its_journal_counts_up_and_its_gauges_keep_their_levels(source, long):
    schema = fmt.schema_of(json.loads((long / fmt.META).read_text()))
    snapshots = [r for r in fmt.read_records(str(long)) if r["type"] in ("interval", "final")]
    assert [r["type"] for r in snapshots].count("final") == 1 and snapshots[-1]["type"] == "final"
    times = [r["mono_ns"] for r in snapshots]
    assert times == sorted(times) and len(set(times)) == len(times)
    for name in snapshots[0]["counters"]:
        values = [r["counters"][name] for r in snapshots]
        if name in schema.gauges:
            source_levels = [r["counters"][name] for r in fmt.read_records(str(source))
                             if r["type"] in ("interval", "final")]
            assert values == source_levels * CYCLES
        else:
            assert values == sorted(values), name


def test_latch_rows_tables_and_walks_are_repeated_with_their_totals(tmp_path):
    source = recordings.synthetic(tmp_path / "source", intervals=6)
    long = long_recording.generate(source, tmp_path / "long", 3 * 6)
    short, whole = recording.load(str(source)), recording.load(str(long))
    assert len(whole.walks) == 3 * len(short.walks)
    assert whole.latches.set_index("name")["waits"].to_dict() == \
        (3 * short.latches.set_index("name")["waits"]).to_dict()
    assert whole.latch_timeline["waits"].sum() == 3 * short.latch_timeline["waits"].sum()
    for table in ("pages", "wait_stacks", "latch_stacks", "latch_holders"):
        assert getattr(whole, table)["waits"].sum() == 3 * getattr(short, table)["waits"].sum(), table


# --- a window of it --------------------------------------------------------------------

def test_a_window_agrees_with_the_whole_on_the_same_intervals(source, long):
    whole, short = recording.load(str(long)), recording.load(str(source))
    cycle_s = short.duration_s
    part = window.window(whole, f"{2 * cycle_s + 0.5}", f"{3 * cycle_s}")  # the third repeat
    ends = whole.counters.groupby("interval")["t_s"].first()
    inside = ends[(ends > 2 * cycle_s + 0.5) & (ends <= 3 * cycle_s)].index
    same = whole.counters[whole.counters["interval"].isin(inside)]
    assert part.counters["interval"].nunique() == len(inside)
    for name in ("purge_pages", "purge_batches", "purge_batch_ns"):
        assert part.counter_total(name) == same.loc[same["name"] == name, "value"].sum()
    told = summary.summary(part)
    shift = told["window"]["from_s"]
    whole_phases = [p for p in summary.summary(whole)["purge"]["phases"]
                    if p["from_s"] >= shift - 1e-6 and p["to_s"] <= told["window"]["to_s"] + 1e-6]
    assert [p["verdict"] for p in told["purge"]["phases"]] == [p["verdict"] for p in whole_phases]
    for i, (mine, theirs) in enumerate(zip(told["purge"]["phases"], whole_phases)):
        assert mine["from_s"] == pytest.approx(theirs["from_s"] - shift, abs=1e-3)
        assert mine["to_s"] == pytest.approx(theirs["to_s"] - shift, abs=1e-3)
        for figure in ("pages", "batches", "empty_batches", "levels", "bound"):
            assert mine["figures"][figure] == theirs["figures"][figure], figure
        moved, whole_moved = mine["figures"]["history"], theirs["figures"]["history"]
        assert moved["to"] == whole_moved["to"]
        if i:  # the first phase's move starts at the window's first reading: the one before is not in it
            assert moved["from"] == whole_moved["from"] and moved["per_s"] == whole_moved["per_s"]


def test_a_window_is_said_in_every_view(long):
    done = innostall("report", long, "--from", "20", "--to", "40")
    assert done.returncode == 0, done.stderr
    assert re.search(r"window\s+\d", done.stdout) and "whole recording's" in done.stdout
    told = json.loads(innostall("report", long, "--from", "20", "--to", "40", "--json").stdout)
    assert 19 <= told["window"]["from_s"] <= 20 and told["duration_s"] <= 21


def test_a_clock_time_is_read_against_the_recordings_start(long):
    rec = recording.load(str(long))
    start = dt.datetime.fromtimestamp(rec.meta["start_real_ns"] / 1e9, dt.timezone.utc)
    clock = (start + dt.timedelta(seconds=30)).strftime("%H:%M:%S")
    assert window.seconds_into(clock, rec.meta, "--from") == pytest.approx(30 - start.microsecond / 1e6, abs=1e-3)
    assert window.seconds_into("2m", rec.meta, "--to") == 120
    by_clock = window.window(rec, clock, None)
    by_seconds = window.window(rec, f"{window.seconds_into(clock, rec.meta, '--from')}", None)
    assert by_clock.window == by_seconds.window


@pytest.mark.parametrize("args", [["--from", "soon"], ["--from", "30", "--to", "10"], ["--from", "99999"],
                                  ["--to", "25:61"], ["--from", "3.2", "--to", "3.4"], ["--to", "-5"]])
def test_a_bad_window_is_one_line_and_fails(long, args):
    done = innostall("report", long, *args)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("innostall")


@pytest.mark.parametrize("meta", [{}, {"start_real_ns": 10**30}, {"start_real_ns": "soon"}])
def test_a_recording_without_a_start_time_it_can_tell_takes_seconds_only(meta):
    with pytest.raises(UserError, match="start_real_ns"):
        window.seconds_into("14:05", meta, "--from")
    assert window.seconds_into("90m", meta, "--from") == 5400


# --- bounded views ---------------------------------------------------------------------

def test_buckets_keep_every_spike_and_every_count():
    values = pd.Series(np.zeros(28_800), index=np.arange(1, 28_801, dtype="float64"))
    values.iloc[12_345] = 99.0
    values.iloc[20_000:20_050] = np.nan  # unknown for a while: a gap, not a value
    drawn = downsample.envelope(values)
    assert len(drawn) <= 2 * downsample.POINTS and drawn.max() == 99.0
    assert drawn.index[drawn.argmax()] == values.index[12_345]
    counts = pd.DataFrame({0: np.arange(28_800), 1: np.ones(28_800, dtype="int64")}, index=values.index)
    summed = downsample.bucket_sums(counts)
    assert len(summed) <= downsample.POINTS and (summed.sum() == counts.sum()).all()
    assert downsample.envelope(values.iloc[:100]).equals(values.iloc[:100])  # short: drawn whole


@pytest.mark.heavy  # generates, reads and renders a recording of 3 x POINTS intervals, its summary too: ~2.1 s of CPU
def test_a_long_recordings_charts_and_tables_are_bucketed_and_say_so(source, tmp_path):
    intervals = 3 * downsample.POINTS
    long = recording.load(str(long_recording.generate(source, tmp_path / "long", intervals)))
    page = views.html_report(long)
    assert "drawn as the lowest and highest of every 3" in page and "drawn as the sum of every 3" in page
    for spec in re.findall(r'innostallPlot\("other-counters", (.*?)\);</script>', page, re.S):
        figure = json.loads(spec.replace("\\/", "/"))
        assert all(len(trace["x"]) <= 2 * downsample.POINTS for trace in figure["data"])
    phases = summary.summary(long)["purge"]["phases"]
    assert len(phases) > PHASES_SHOWN and f"{len(phases):,} phases: pinned" in page


def test_a_long_recordings_latch_table_has_a_bounded_number_of_rows(tmp_path):
    source = recordings.synthetic(tmp_path / "source", intervals=6)
    long = recording.load(str(long_recording.generate(source, tmp_path / "long", 100 * 6)))
    lines = views.text_report(long).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Latch wait ms per interval"))
    rows = lines[at + 2:]
    rows = rows[:next((i for i, line in enumerate(rows) if not line.strip()), len(rows))]
    assert "each the highest of its intervals" in lines[at] and len(rows) == latches_section.INTERVAL_ROWS


def debounce_by_passes(verdicts, keep, min_len=phases.MIN_PHASE):
    """The rule as first written, a pass over every run per merge: the oracle for the heap."""
    out, keep = list(verdicts), list(keep)
    while True:
        spans = phases.runs(out)
        edge = {0, len(spans) - 1}
        short = [(k in edge, b - a, k) for k, (v, a, b) in enumerate(spans)
                 if len(spans) > 1 and b - a + 1 < min_len - (k in edge) and not any(keep[a:b + 1])]
        if not short:
            return out
        k = min(short)[2]
        _, a, b = spans[k]
        neighbours = [spans[j] for j in (k - 1, k + 1) if 0 <= j < len(spans)]
        verdict_, first, last = max(neighbours, key=lambda n: n[2] - n[1])
        out[a:b + 1] = [verdict_] * (b - a + 1)
        keep[a:b + 1] = [any(keep[first:last + 1])] * (b - a + 1)


def test_the_heap_debounce_merges_as_the_passes_did():
    import random
    draw = random.Random(26)
    for _ in range(3000):
        n = draw.randint(1, 40)
        verdicts = [draw.choice(phases.VERDICTS[:5]) for _ in range(n)]
        keep = [draw.random() < 0.1 for _ in range(n)]
        assert phases.debounce(verdicts, keep) == debounce_by_passes(verdicts, keep), (verdicts, keep)
