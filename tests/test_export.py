"""Exports: folded stacks, flame graph SVGs from the real tool, the summary as JSON and CSV,
the tables as CSV, and load_frames for notebooks."""
from __future__ import annotations

import json
import subprocess

import pandas as pd
import pytest

import recordings
from conftest import INNOSTALL, REPO
from innostall import analysis
from innostall.analysis import flamegraph, recording, summary
from innostall.errors import UserError

REAL = REPO / "tests" / "data" / "purge-stall"


def test_folded_stacks_weigh_by_walks_or_depth():
    walks = pd.DataFrame({"stack": ["a;b;c", "a;b;c", "a;d", "", None],
                          "depth": [100, 300, 150, 120, 110]})
    by_count = flamegraph.folded(walks)
    by_depth = flamegraph.folded(walks, "depth")
    assert by_count.to_dict() == {"a;b;c": 2, "[no stack]": 2, "a;d": 1}
    assert by_depth.to_dict() == {"a;b;c": 400, "[no stack]": 230, "a;d": 150}
    assert flamegraph.folded_text(by_depth) == "a;b;c 400\n[no stack] 230\na;d 150\n"
    with pytest.raises(ValueError, match="no column 'latency'"):
        flamegraph.folded(walks, "latency")


def test_latch_stacks_end_in_the_mode_waited_for():
    stacks = pd.DataFrame({"mode": ["X", "S", "X"], "stack": ["a;b", "a;b", "a;b"],
                           "waits": [3, 2, 1], "wait_us": [10.4, 1.2, 0.2]})
    assert flamegraph.folded(stacks, "wait_us", leaf="mode").to_dict() == {"a;b;[X]": 11, "a;b;[S]": 1}
    assert flamegraph.folded(stacks, "waits", leaf="mode").to_dict() == {"a;b;[X]": 4, "a;b;[S]": 2}


def test_a_newline_inside_a_frame_cannot_break_a_folded_line():
    text = flamegraph.folded_text(flamegraph.folded(pd.DataFrame({"stack": ["a;b\nc"], "depth": [5]})))
    assert text == "a;b c 1\n"


def export(directory, out):
    done = subprocess.run(INNOSTALL + ["export", str(directory), "--out", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


def test_export_of_a_recording_with_walks(tmp_path):
    rec_dir = recordings.synthetic(tmp_path / "rec")
    out = tmp_path / "out"
    done = export(rec_dir, out)
    names = sorted(p.name for p in out.iterdir())
    assert done.stdout.split() == [str(out / n) for n in [
        "summary.json", "summary.csv", "intervals.csv", "counters.csv", "hists.csv", "walks.csv",
        "pages.csv", "wait_stacks.csv",
        "deep-walks.by-count.folded", "deep-walks.by-count.svg",
        "deep-walks.by-depth.folded", "deep-walks.by-depth.svg",
        "latch-waits.by-count.folded", "latch-waits.by-count.svg",
        "latch-waits.by-time.folded", "latch-waits.by-time.svg"]]
    assert len(names) == 16 and done.stderr == ""
    rec = recording.load(str(rec_dir))
    assert json.loads((out / "summary.json").read_text()) == json.loads(json.dumps(summary.summary(rec)))
    summary_csv = pd.read_csv(out / "summary.csv")
    assert summary_csv.set_index("metric").loc["purge.batches", "value"] == "905"
    folded = (out / "deep-walks.by-depth.folded").read_text().splitlines()
    assert folded[0] == f"{recordings.SELECT_STACK} {100 + 150 + 200 + 300}"
    assert sum(int(line.rsplit(" ", 1)[1]) for line in folded) == rec.walks["depth"].sum()
    svg = (out / "deep-walks.by-count.svg").read_text()
    assert svg.startswith("<?xml") and "<svg" in svg and "function zoom(" in svg
    assert "List&lt;Item&gt;&amp;" in svg and "List<Item>" not in svg
    intervals = pd.read_csv(out / "intervals.csv", index_col="t_s")
    assert intervals["purge_batches"].sum() == 905
    by_time = (out / "latch-waits.by-time.folded").read_text().splitlines()
    assert by_time[0].endswith("sux_lock<ssux_lock_impl<true> >::x_lock(bool);[X] 9000")
    assert pd.read_csv(out / "pages.csv")["waits"].tolist() == [40, 30]


def test_export_without_walks_says_what_is_left_out(tmp_path):
    done = export(REAL, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "counters.csv", "hists.csv", "intervals.csv", "summary.csv", "summary.json"]
    assert done.stderr == "innostall: no stacks recorded (deep walks, latch waits): no flame graphs\n"


def test_export_into_an_unwritable_place_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    done = subprocess.run(INNOSTALL + ["export", str(REAL), "--out", str(tmp_path / "file" / "x")],
                          capture_output=True, text=True)
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(f"innostall: {tmp_path / 'file' / 'x'}: cannot create the export directory")


def test_load_frames_in_one_call(tmp_path):
    frames = analysis.load_frames(str(recordings.synthetic(tmp_path / "rec")))
    assert set(frames) == {"counters", "hists", "walks", "pages", "wait_stacks", "read_views", "purge",
                           "intervals", "probes", "summary"}
    assert all(isinstance(f, pd.DataFrame) for f in frames.values())
    assert frames["intervals"]["purge_batches"].sum() == 905
    assert len(frames["walks"]) == 8 and frames["probes"]["name"].tolist()[0] == "purge_batch"
    real = analysis.load_frames(str(REAL))
    assert real["walks"].empty and list(real["walks"].columns)[:3] == ["t_s", "tid", "depth"]
    with pytest.raises(UserError, match="no such recording directory"):
        analysis.load_frames(str(tmp_path / "nope"))
