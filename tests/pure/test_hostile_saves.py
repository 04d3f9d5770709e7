"""The fuzz of test_hostile_recordings.py, on the newer surfaces (issue 49): a plain
recording (journal and tables), a segmented one (its journal rolled into plain and xz
segments) and a watch's save, each mutated by what a copy, a full disk or a hand can do to
them: a Parquet table emptied to 0 rows with its schema intact, a byte that is not UTF-8 in
a text file (meta.json, the journal, a segment, plain or inside its xz), a segment deleted,
copied under another number, renamed, cut or replaced by garbage. Each case goes through
report, --json, --html, redact, export and diff, and each ends in a report or one line:
no traceback, no hang, nothing written outside its output.

CASES run in make check (with test_hostile_recordings.py's, 20 hostile recordings in all);
CASES_HEAVY more in make test, for the acceptance's 200 mutations or more. A failure names its
seed: `pytest 'tests/pure/test_hostile_saves.py::test_case[7]'` (or test_case_heavy)."""
from __future__ import annotations

import json
import lzma
import random
import shutil
from pathlib import Path

import pandas as pd
import pytest

from conftest import innostall
from innostall.collector.recorder import watch
from innostall.format import journal as fmt, journal_files

from recordings import meta, synthetic
from test_hostile_recordings import check, run_each, snapshot
from test_journal_segments import rolled
from test_watch import story
from watch_children import children_in_this_process

CASES, CASES_HEAVY = 6, 216  # 2 of each base in make check (each case runs six commands); 222 in make test
SECONDS_PER_CASE = 30  # six commands; the slowest case takes a few seconds
BASES = ("plain", "segmented", "save")
NOT_UTF8 = [b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\x80abc", b"\xf8\x88\x80\x80\x80"]


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bases")
    plain = synthetic(root / "plain", intervals=24)
    records = [json.loads(line) for line in journal_files.every_line(str(plain))]
    segmented = root / "segmented"
    segmented.mkdir()
    shutil.copy(plain / fmt.META, segmented / fmt.META)
    rolled(segmented, records, segment_bytes=len(json.dumps(records)) // 6, compress=lambda n: n % 2 == 1)
    watched = root / "watch"
    watched.mkdir()
    described = meta(walks=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(watch.idle, "run_idle", children_in_this_process)  # the save's tables: no child Python
        with watch.WatchJournal(str(watched), watch.Triggers(history_above=3000, before_s=8, after_s=4),
                                described) as w:
            for record in story():
                w.write(json.dumps(record) + "\n", record)
        said = watch.finish_watch(w, described)
    return {"plain": plain, "segmented": segmented, "save": watched / said["watch"]["saved"][0]["directory"]}


def text_files(rec: Path) -> list[Path]:
    return sorted(p for p in rec.iterdir() if p.name == fmt.META or p.name.startswith("journal") or
                  p.suffix == ".log")


def not_utf8(rec: Path, rng: random.Random) -> str:
    path = rng.choice(text_files(rec))
    data = lzma.decompress(path.read_bytes()) if path.suffix == ".xz" else path.read_bytes()
    quote = [i for i in range(len(data)) if data[i:i + 1] == b'"']
    at = rng.choice(quote) + 1 if quote and rng.random() < 0.8 else rng.randrange(len(data) + 1)  # in a string, mostly
    bad = rng.choice(NOT_UTF8)
    data = data[:at] + bad + data[at:]
    path.write_bytes(lzma.compress(data, format=lzma.FORMAT_XZ) if path.suffix == ".xz" else data)
    return f"{bad!r} at byte {at} of {path.name}"


def empty_table(rec: Path, rng: random.Random) -> str:
    tables = sorted(rec.glob("*.parquet"))
    if not tables:
        return not_utf8(rec, rng)
    path = rng.choice(tables)
    pd.read_parquet(path).iloc[:0].to_parquet(path, index=False)
    return f"{path.name}: 0 rows, its schema intact"


def segment_fault(rec: Path, rng: random.Random) -> str:
    segments = [rec / name for _, name in journal_files.segments(str(rec))]
    if not segments:
        return not_utf8(rec, rng)
    path = rng.choice(segments)
    what = rng.choice(["deleted", "copied", "renamed", "cut", "garbage", "live deleted"])
    if what == "deleted":
        path.unlink()
    elif what == "copied":
        shutil.copy(path, rec / journal_files.segment_name(rng.choice([0, 7, 99]), path.suffix == ".xz"))
    elif what == "renamed":
        path.rename(rec / journal_files.segment_name(rng.choice([0, 8, 999_999]), path.suffix == ".xz"))
    elif what == "cut":
        data = path.read_bytes()
        path.write_bytes(data[:rng.randrange(len(data))])
    elif what == "garbage":
        path.write_bytes(rng.randbytes(rng.randrange(1, 3000)))
    else:
        path = rec / journal_files.LIVE
        path.unlink()
    return f"{path.name} {what}"


MUTATIONS = {"empty table": empty_table, "not UTF-8": not_utf8, "segment": segment_fault}


def run_case(seed: int, bases: dict[str, Path], tmp_path: Path) -> None:
    rng = random.Random(seed)
    base = BASES[seed % 3]
    family = list(MUTATIONS)[(seed // 3) % 3]
    rec = shutil.copytree(bases[base], tmp_path / "rec")
    what = f"case[{seed}] {base}: {MUTATIONS[family](rec, rng)}"
    out = tmp_path / "out"
    out.mkdir()
    before = snapshot(tmp_path, out)
    runs = [("report", rec), ("report", rec, "--json"), ("report", rec, "--html", out / "report.html"),
            ("redact", rec, "-o", out / "redacted"), ("export", rec, "--out", out / "export"),
            ("diff", bases[base], rec)]
    run_each(runs, what, SECONDS_PER_CASE)
    assert snapshot(tmp_path, out) == before, f"{what}: a file outside the output changed"


@pytest.mark.parametrize("seed", range(CASES))
def test_case(seed, bases, tmp_path):
    run_case(seed, bases, tmp_path)


@pytest.mark.heavy
@pytest.mark.parametrize("seed", range(CASES, CASES + CASES_HEAVY))
def test_case_heavy(seed, bases, tmp_path):
    run_case(seed, bases, tmp_path)


# --- issue 49's two tracebacks, each as it was found ----------------------------------------

@pytest.mark.parametrize("base", ["plain", "save"])
def test_a_counters_table_of_0_rows_is_damage_not_a_traceback(bases, tmp_path, base):
    """Its schema intact: read from the journal where there is one, else refused in one line."""
    rec = shutil.copytree(bases[base], tmp_path / "rec")
    counters = rec / fmt.COUNTERS
    if not counters.exists():  # a save whose tables were not written: as if they had been
        pd.DataFrame().to_parquet(counters)
    pd.read_parquet(counters).iloc[:0].to_parquet(counters, index=False)
    said = "counters.parquet: damaged table (it holds no interval)"
    for args in [("report", rec), ("report", rec, "--json"), ("report", rec, "--html", tmp_path / "r.html"),
                 ("export", rec, "--out", tmp_path / "export"), ("diff", bases[base], rec)]:
        result = innostall(*args)
        check(result, " ".join(map(str, args)))
        assert result.returncode == 0, result.stderr
        if args[0] == "report":  # the report says it was rebuilt from the journal, and why
            assert said in (result.stdout if len(args) == 2 or args[2] == "--json"
                            else (tmp_path / "r.html").read_text()), args
    (rec / fmt.JOURNAL).unlink()
    for _, name in journal_files.segments(str(rec)):
        (rec / name).unlink()
    result = innostall("report", rec)
    assert result.returncode == 1 and result.stderr.strip().endswith("damaged table (it holds no interval)")


def test_a_byte_not_utf8_in_meta_json_is_redacted_as_it_is_reported(bases, tmp_path):
    rec = shutil.copytree(bases["plain"], tmp_path / "rec")
    data = (rec / fmt.META).read_bytes()
    at = data.index(b'"host": "') + len(b'"host": "')
    (rec / fmt.META).write_bytes(data[:at] + b"\xff" + data[at:])
    assert innostall("report", rec).returncode == 0
    result = innostall("redact", rec, "-o", tmp_path / "redacted")
    check(result, "redact")
    assert result.returncode == 0 and json.loads((tmp_path / "redacted" / fmt.META).read_text())["host"].startswith("\ufffd")
