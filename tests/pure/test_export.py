"""Exports: folded stacks, flame graph SVGs from the real tool, the summary as JSON and CSV,
the tables as CSV, and load_frames for notebooks."""
from __future__ import annotations

import json
import shutil
import subprocess

import pandas as pd
import pytest

import recordings
from conftest import REPO, innostall
from innostall import analysis
from innostall.analysis import flamegraph, pprof, recording, summary, views
from innostall.collector.loader import loader
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
    done = innostall("export", directory, "--out", out)
    assert done.returncode == 0, done.stderr
    return done


def test_export_of_a_recording_with_walks(tmp_path):
    rec_dir = recordings.synthetic(tmp_path / "rec")
    out = tmp_path / "out"
    done = export(rec_dir, out)
    names = sorted(p.name for p in out.iterdir())
    assert done.stdout.split() == [str(out / n) for n in [
        "summary.json", "summary.csv", "intervals.csv", "counters.csv", "hists.csv", "walks.csv",
        "pages.csv", "wait_stacks.csv", "latch_holders.csv",
        "deep-walks.by-count.folded", "deep-walks.by-count.svg",
        "deep-walks.by-depth.folded", "deep-walks.by-depth.svg",
        "latch-waits.by-count.folded", "latch-waits.by-count.svg",
        "latch-waits.by-time.folded", "latch-waits.by-time.svg",
        "latch-waiters.by-time.folded", "latch-waiters.by-time.svg",
        "latch-holders.by-time.folded", "latch-holders.by-time.svg",
        "deep-walks.pb.gz", "latch-waits.pb.gz", "latch-waiters.pb.gz", "latch-holders.pb.gz",
        "speedscope.json"]]
    assert len(names) == 26 and done.stderr == ""
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
    done = innostall("export", REAL, "--out", tmp_path / "file" / "x")
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith(f"innostall: {tmp_path / 'file' / 'x'}: cannot create the export directory")


def test_load_frames_in_one_call(tmp_path):
    frames = analysis.load_frames(str(recordings.synthetic(tmp_path / "rec")))
    tables = set(loader.schema().tables.recording)  # every table of the schema, by its name
    assert set(frames) == tables | {"pages", "purge", "intervals", "probes", "summary"}
    assert frames["pages"] is frames["block_pages"]
    assert all(isinstance(f, pd.DataFrame) for f in frames.values())
    assert frames["intervals"]["purge_batches"].sum() == 905
    assert len(frames["walks"]) == 8 and frames["probes"]["name"].tolist()[0] == "purge_batch"
    real = analysis.load_frames(str(REAL))
    assert real["walks"].empty and list(real["walks"].columns)[:3] == ["t_s", "tid", "depth"]
    with pytest.raises(UserError, match="no such recording directory"):
        analysis.load_frames(str(tmp_path / "nope"))


# --- pprof and speedscope: read by the real tools ------------------------------------------

SEED = REPO / "tests" / "data" / "seed-load"  # a real recording with deep walks and latch waits
SPEEDSCOPE_SCHEMA = REPO / "build" / "tools" / "speedscope" / "file-format-schema.json"


def go_tool() -> str:
    """Go's command (scripts/setup.sh installs Debian's golang-go, whose `go tool pprof` we read with)."""
    found = shutil.which("go") or shutil.which("go", path="/usr/lib/go/bin")
    assert found, "no go command: run scripts/setup.sh"
    return found


def pprof_top(profile, *options) -> list[tuple[float, str]]:
    """`go tool pprof -top`'s rows: (flat, function), heaviest first, values unscaled."""
    done = subprocess.run([go_tool(), "tool", "pprof", "-top", "-unit=ns", *options, str(profile)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["flat", "flat%"])
    rows = []
    for line in lines[header + 1:]:
        flat, _, _, _, _, name = line.split(None, 5)
        rows.append((float(flat.removesuffix("ns")), name))
    return rows


def leaf_totals(rows: pd.DataFrame, weight: str | None) -> pd.Series:
    """Total weight per innermost frame, computed from the recording's own table."""
    leaves = rows["stack"].str.rsplit(";", n=1).str[-1]
    values = rows[weight] if weight else pd.Series(1, index=rows.index)
    return values.groupby(leaves.to_numpy()).sum().sort_values(ascending=False)


@pytest.mark.heavy  # runs Go
def test_go_pprof_reads_the_exported_profiles_and_tops_with_the_reports_top_stack(tmp_path):
    export(SEED, tmp_path)
    rec = recording.load(str(SEED))
    report = views.text_report(rec)

    top_wait = rec.wait_stacks.nlargest(1, "wait_us").iloc[0]
    leaf = top_wait["stack"].rsplit(";", 1)[-1]
    assert f"  {top_wait['mode']:<3} {top_wait['wait_us'] / 1000:9.1f} ms" in report  # the report's first
    by_time = pprof_top(tmp_path / "latch-waits.pb.gz")  # default type: wait_time/nanoseconds
    by_leaf = leaf_totals(rec.wait_stacks, "wait_us")
    assert by_time[0][1] == leaf == by_leaf.index[0]
    assert by_time[0][0] == pytest.approx(by_leaf.iloc[0] * 1000, rel=1e-6)
    by_count = pprof_top(tmp_path / "latch-waits.pb.gz", "-sample_index=waits")
    waits_by_leaf = leaf_totals(rec.wait_stacks, "waits")
    assert by_count[0] == (waits_by_leaf.iloc[0], waits_by_leaf.index[0])
    only_x = pprof_top(tmp_path / "latch-waits.pb.gz", "-tagfocus=mode=^X$")  # the mode is a label
    x_rows = rec.wait_stacks[rec.wait_stacks["mode"] == "X"]
    assert sum(flat for flat, _ in only_x) == pytest.approx(x_rows["wait_us"].sum() * 1000, rel=1e-6)

    deepest = rec.walks.nlargest(1, "depth").iloc[0]
    versions = pprof_top(tmp_path / "deep-walks.pb.gz")  # default type: versions/count
    assert versions[0] == (leaf_totals(rec.walks, "depth").iloc[0], deepest["stack"].rsplit(";", 1)[-1])
    walks = pprof_top(tmp_path / "deep-walks.pb.gz", "-sample_index=walks")
    assert sum(flat for flat, _ in walks) == len(rec.walks)


def test_pprof_profile_is_deduplicated_and_typed():
    rows = pd.DataFrame({"mode": ["X", "S", "X"], "stack": ["a;b;c", "a;b;c", "a;b;c"],
                         "waits": [3, 2, 1], "wait_us": [10.4, 1.2, 0.2]})
    types = [pprof.sample_type(g) for g in pprof.families()["latch-waits"]]
    assert [(t.type, t.unit) for t in types] == [("waits", "count"), ("wait_time", "nanoseconds")]
    samples = pprof.stack_samples(rows, types, "mode")
    assert samples.to_dict("records") == [{"stack": "a;b;c", "label": "X", "waits": 4, "wait_time": 10600},
                                          {"stack": "a;b;c", "label": "S", "waits": 2, "wait_time": 1200}]
    message = pprof.encode(samples, types, "mode", {"target": {}}, 1.0)
    for frame in (b"a", b"b", b"c"):  # each frame once in the string table
        assert message.count(bytes([len(frame)]) + frame) == 1
    assert [(t.type, t.unit) for t in map(pprof.sample_type, pprof.families()["deep-walks"])] == [
        ("walks", "count"), ("versions", "count")]
    assert pprof.varint(300) == b"\xac\x02" and pprof.varint(-1) == b"\xff" * 9 + b"\x01"


def test_speedscope_file_follows_the_format(tmp_path):
    export(SEED, tmp_path)
    rec = recording.load(str(SEED))
    doc = json.loads((tmp_path / "speedscope.json").read_text())
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    assert len({f["name"] for f in frames}) == len(frames)  # shared, once each
    graphs = dict((g.name, s) for g, s in flamegraph.available(rec))
    assert [p["name"] for p in doc["profiles"]] == [g.title for g in flamegraph.FLAME_GRAPHS if g.name in graphs]
    for profile, (name, stacks) in zip(doc["profiles"], graphs.items()):
        assert profile["type"] == "sampled" and len(profile["samples"]) == len(profile["weights"])
        rebuilt = {";".join(frames[i]["name"] for i in sample): w
                   for sample, w in zip(profile["samples"], profile["weights"])}
        assert rebuilt == stacks.to_dict() and profile["endValue"] == stacks.sum()
    assert doc["profiles"][3]["unit"] == "microseconds" and doc["profiles"][0]["unit"] == "none"
    if SPEEDSCOPE_SCHEMA.exists():  # from the npm package speedscope, fetched by scripts/setup.sh
        import jsonschema
        jsonschema.validate(doc, json.loads(SPEEDSCOPE_SCHEMA.read_text()))
