"""innostall query: SQL with DuckDB over the Parquet tables of many recordings at once, each
row naming its recording and host; the ready queries checked against the report's own
loader (pandas) on two real recordings; bad input is one line."""
from __future__ import annotations

import io
import json
import re
import shutil

import pandas as pd
import pytest

import recordings
from conftest import REPO, innostall
from innostall.collector.loader import loader
from innostall.format import journal as fmt, table_builders
from innostall.analysis import query, recording

DATA = REPO / "tests" / "data"
REAL = [DATA / "seed-load", DATA / "snapshot-commit"]  # two real recordings of MariaDB 11.4.5


def run(*args, form="csv"):
    done = innostall("query", *args, "--format", form)
    assert done.returncode == 0, done.stderr
    return pd.read_csv(io.StringIO(done.stdout)) if form == "csv" else done.stdout


@pytest.fixture(scope="module")
def recs():
    return {path.name: recording.load(str(path)) for path in REAL}


def test_each_table_is_one_view_naming_recording_and_host(recs):
    rows = run(*REAL, "--sql", "SELECT recording, host, count(*) AS n FROM counters GROUP BY ALL ORDER BY 1")
    assert rows["recording"].tolist() == sorted(recs)
    assert rows["host"].tolist() == [recs[name].meta["host"] for name in sorted(recs)]
    assert rows["n"].tolist() == [len(recs[name].counters) for name in sorted(recs)]
    listed = json.loads(run(*REAL, "--sql", "SELECT * FROM recordings", form="json"))
    assert [r["recording"] for r in listed] == [p.name for p in REAL]
    assert [r["duration_s"] for r in listed] == pytest.approx([recs[p.name].duration_s for p in REAL])


def test_history_peak_one_row_per_recording(recs):
    rows = run(*REAL, "--ready", "history_peak").set_index("recording")
    assert sorted(rows.index) == sorted(recs)
    for name, rec in recs.items():
        history = rec.counters[rec.counters["name"].isin(["history_length", "history_length_peak"])]
        if rec.counter_total("history_reads"):
            assert rows.loc[name, "history_peak"] == history["value"].max()
        else:  # never read: null, not 0
            assert pd.isna(rows.loc[name, "history_peak"])
    assert rows["history_peak"].notna().any()  # snapshot-commit read its history


def test_deep_walks_one_row_per_recording(recs):
    for depth in (100, 1000):
        rows = run(*REAL, "--ready", "deep_walks", depth).set_index("recording")
        assert sorted(rows.index) == sorted(recs)
        for name, rec in recs.items():
            deeper = rec.walks[rec.walks["depth"] > depth]
            assert rows.loc[name, "walks"] == len(deeper)
            if len(deeper):
                assert rows.loc[name, "max_depth"] == deeper["depth"].max()
    assert rows["walks"].sum() > 0


def test_purge_rate_whole_and_split(recs):
    whole = run(*REAL, "--ready", "purge_rate").set_index("recording")
    split = run(*REAL, "--ready", "purge_rate", 10).set_index("recording")
    for name, rec in recs.items():
        pages = rec.counters[rec.counters["name"] == "purge_pages"]
        assert whole.loc[name, "pages_per_s_before"] == pytest.approx(
            pages["value"].sum() / rec.duration_s, abs=0.05)
        before = pages[pages["t_s"] <= 10]
        assert split.loc[name, "pages_per_s_before"] == pytest.approx(
            before["value"].sum() / before["t_s"].max(), abs=0.05)
        after = pages[pages["t_s"] > 10]
        assert split.loc[name, "pages_per_s_after"] == pytest.approx(
            after["value"].sum() / (rec.duration_s - before["t_s"].max()), abs=0.05)
    start = pd.Timestamp(recs["seed-load"].meta["start_real_ns"], unit="ns")
    at_time = run(*REAL, "--ready", "purge_rate", (start + pd.Timedelta(seconds=10)).isoformat())
    assert at_time.set_index("recording").loc["seed-load", "change_at_s"] == pytest.approx(10, abs=0.001)


def test_top_latches_across_recordings(recs):
    rows = run(*REAL, "--ready", "top_latches", 5)
    pages = pd.concat([r.pages for r in recs.values()]).groupby(["space", "page_no"])
    expected = pages["wait_us"].sum().sort_values(ascending=False).head(5)
    assert list(zip(rows["space"], rows["page_no"])) == list(expected.index)
    assert rows["waits"].tolist() == [pages["waits"].sum()[i] for i in expected.index]
    assert rows["recordings"].max() == 2


def test_a_recording_cut_short_is_read_from_its_journal(tmp_path):
    cut = recordings.synthetic(tmp_path / "cut")
    for table in cut.glob("*.parquet"):
        table.unlink()
    meta = json.loads((cut / fmt.META).read_text())
    (cut / fmt.META).write_text(json.dumps({**meta, "complete": False, "host": "other-host"}))
    whole = recordings.synthetic(tmp_path / "whole")
    rows = run(cut, whole, "--sql", "SELECT recording, host, sum(value) AS batches FROM counters "
               "WHERE name = 'purge_batches' GROUP BY ALL ORDER BY 1")
    assert rows.values.tolist() == [["cut", "other-host", 905], ["whole", "test<host>", 905]]
    walks = recording.load(str(cut)).walks  # rebuilt from the journal
    assert run(cut, "--ready", "deep_walks")["walks"].tolist() == [(walks["depth"] > 100).sum()] != [0]


def test_same_directory_names_are_told_apart_by_path(tmp_path):
    for host in ("a", "b"):
        shutil.copytree(DATA / "purge-stall", tmp_path / host / "rec")
    rows = run(tmp_path / "a" / "rec", tmp_path / "b" / "rec", "--sql", "SELECT recording FROM recordings")
    assert rows["recording"].tolist() == [str(tmp_path / "a" / "rec"), str(tmp_path / "b" / "rec")]


def test_a_table_no_recording_has_is_an_empty_view():
    rows = run(DATA / "purge-stall", "--sql", "SELECT count(*) AS n, count(depth) AS d FROM walks")
    assert rows.values.tolist() == [[0, 0]]


def test_a_damaged_table_is_read_from_the_journal_or_is_one_line(tmp_path):
    shutil.copytree(DATA / "purge-stall", tmp_path / "rec")
    whole = run(tmp_path / "rec", "--sql", "SELECT sum(value) AS v FROM counters")
    (tmp_path / "rec" / fmt.COUNTERS).write_bytes(b"not parquet")
    assert run(tmp_path / "rec", "--sql", "SELECT sum(value) AS v FROM counters").equals(whole)
    (tmp_path / "rec" / fmt.JOURNAL).unlink()
    done = innostall("query", tmp_path / "rec", "--sql", "SELECT * FROM counters")
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"innostall: {tmp_path / 'rec' / fmt.COUNTERS}: damaged table ")


@pytest.mark.parametrize("args, message", [
    (["/nonexistent", "--sql", "SELECT 1"], "innostall: /nonexistent: no such recording directory"),
    ([str(REPO / "tests"), "--sql", "SELECT 1"], f"innostall: {REPO / 'tests'}: not a recording (no meta.json)"),
    ([str(REAL[0]), "--sql", "SELEC 1"], 'innostall: query failed: Parser Error: syntax error at or near "SELEC"'),
    ([str(REAL[0]), "--sql", "SELECT nope FROM walks"], "innostall: query failed: Binder Error: "),
    ([str(REAL[0]), "--ready", "nope"], "innostall: query: no ready query 'nope' (there are: "),
    ([str(REAL[0]), "--ready", "deep_walks", "x"], "innostall: query: deep_walks: depth must be a whole number"),
])
def test_bad_input_is_one_line(args, message):
    done = innostall("query", *args)
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(message) and done.stdout == ""


def test_the_manual_documents_every_column_of_every_table():
    """The manual's Parquet tables section names each view's every column."""
    manual = (REPO / "docs" / "recording-format.md").read_text()
    section = manual.split("\n## The Parquet tables", 1)[1].split("\n## ", 1)[0]
    assert f"recording format {fmt.FORMAT_VERSION}" in section
    schema = loader.schema()  # the loader's tables, those of this format
    for name, table in schema.tables.recording.items():
        file, columns = table.file, list(table_builders.empty(name, schema).columns)
        block = re.search(rf"^\| `{re.escape(file)}`.*?(?=^\| `[a-z_]+\.parquet`|\Z)", section, re.M | re.S)
        assert block, f"{file} is not documented"
        for column in columns:
            assert f"`{column}`" in block.group(0), f"{file}: column {column} is not documented"
