"""A hostile or damaged recording is only data: hundreds of seeded mutations of real and
synthetic recordings (torn and reordered journals, fields deleted or of the wrong type,
2^64 and NaN and 10 MB strings, lone surrogates, markup in every name, truncated and
garbage Parquet, symlinks out of the directory, FIFOs, files that are directories) are each
reported in this process (text, --json; some also --html and export), and each either
reports (exit 0) or is refused in one line (no traceback), within a time limit, writing
nothing outside its output path and no live markup into HTML or SVG.

make check runs the first CHECK_CASES seeds, make test all CASES (test_case_heavy the rest);
test_hostile_saves.py adds its own, so that make check runs 20 hostile recordings in all. A
failure names its seed and mutation; `pytest 'tests/pure/test_hostile_recordings.py::test_case[17]'`
(or test_case_heavy) replays it. The limits themselves are tried once each, at the end, with
small values."""
from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import stat
import zlib
from pathlib import Path

import pandas as pd
import pytest

import recordings
from conftest import REPO, innostall
from innostall.analysis import recording
from innostall.format import table_bounds
from innostall.format import journal as fmt, journal_lines

DATA = REPO / "tests" / "data"
CASES, CHECK_CASES = 200, 14  # make test, make check: with test_hostile_saves.py's 6, 20 in make check
SECONDS_PER_CASE = 20  # a hang is a failure: the slowest case takes about 2 s
MARK = "innostall-xss"
INJECTIONS = [f'</script><script>alert("{MARK}")</script>', f'"><img src=x onerror=alert("{MARK}")>',
              f"<!--{MARK}", f"]]><svg onload=alert('{MARK}')>", f"'; alert('{MARK}'); '"]
LIVE_MARKUP = ["<script>alert(", "<img src=x", f"<!--{MARK}", "<svg onload"]  # unescaped: live
SURROGATES = ["\ud800", "a\udc00b"]  # escaped in JSON; Parquet cannot hold them
ODD = ["\u202eevil\u202c", "\u200f", "nul\x00nul", "\x1b[31mred\x1b[0m", "x" * 10_000_000,
       ";".join(["frame"] * 100_000), "é" * 3000, "\ufeff", "a\nb\r\tc", ""]
TEXTS = INJECTIONS + SURROGATES + ODD
VALUES = [2**64, 2**63, 2**63 - 1, -5, -2**64, 10**40, 1e308, -1e308, float("nan"), float("inf"),
          float("-inf"), 0.5, "x", None, True, False, [], {}, [1, 2], "9" * 5000, list(range(5000))]
GARBAGE_LINES = [b"\x00\xff\xfe binary", "}{ not json", "[" * 100_000, "{" * 50_000, "9" * 10_000, "[]", "5",
                 '"x"', "null", "{}", '{"type":"interval"}', '{"type":5}', '{"type":"final","mono_ns":-1}',
                 '{"type":"latch_tables","stacks":[[0,1,2]]}']


# --- the recordings mutated -------------------------------------------------------------

@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict[str, Path]:
    """Journals only (the journal is read), tables and journal, tables only."""
    root = tmp_path_factory.mktemp("bases")
    made = {"stall": shutil.copytree(DATA / "purge-stall", root / "stall"),
            "latches": recordings.synthetic(root / "latches"),
            "views": recordings.write(root / "views", recordings.pinned_then_catch_up())}
    for name in list(made):
        made[f"{name}-tables"] = shutil.copytree(made[name], root / f"{name}-tables")
        for table in made[name].glob("*.parquet"):
            table.unlink()
    made["real"] = shutil.copytree(DATA / "pin-catch-up", root / "real")
    return made


JOURNAL_BASES, TABLE_BASES = ["stall", "latches", "views"], ["latches-tables", "latches-tables", "real"]


def spot(value, rng: random.Random):
    """(container, key) of a place in a JSON value, chosen going down at random."""
    container, key = None, None
    while isinstance(value, (dict, list)) and value and (container is None or rng.random() < 0.75):
        key = rng.choice(list(value)) if isinstance(value, dict) else rng.randrange(len(value))
        container, value = value, value[key]
    return container, key


def mutate_value(top, rng: random.Random) -> str:
    """Change one place of a JSON value in place; what was done, in words."""
    container, key = spot(top, rng)
    if container is None:
        return "nothing to change"
    what = rng.choice(["delete", "value", "text", "add"])
    if what == "delete":
        del container[key]
    elif what == "value":
        container[key] = rng.choice(VALUES)
    elif what == "text":
        container[key] = rng.choice(TEXTS)
    elif isinstance(container, dict):
        container[rng.choice(INJECTIONS + SURROGATES + ["extra"])] = rng.choice(VALUES)
    else:
        container.append(rng.choice(VALUES))
    return f"{what} at {str(key)[:30]!r}"


NAMED_BY_KEY = ("counters", "hists", "settings")  # objects whose keys are names


def inject_everywhere(value, rng: random.Random, names: bool = False):
    """Every string in a JSON value (but a record's type) replaced by markup or odd text,
    stacks frame by frame, and the names of counters and histograms too."""
    odd = INJECTIONS + SURROGATES + ODD[:4]
    if isinstance(value, str):
        return ";".join(rng.choice(odd) for _ in value.split(";")) if ";" in value else rng.choice(odd)
    if isinstance(value, list):
        return [inject_everywhere(v, rng) for v in value]
    if isinstance(value, dict):
        # a name's markup the same in every snapshot: its counter stays one counter
        return {(f"{k}{odd[zlib.crc32(k.encode()) % len(odd)]}" if names else k): v if k == "type" else
                inject_everywhere(v, rng, k in NAMED_BY_KEY) for k, v in value.items()}
    return value


def journal_case(rec: Path, rng: random.Random) -> str:
    path = rec / fmt.JOURNAL
    lines = path.read_text().splitlines(keepends=True)
    what = rng.choice(["truncate", "field", "field", "field", "field", "field", "lines", "lines", "garbage",
                       "garbage", "garbage", "inject"])
    if what == "truncate":
        data = path.read_bytes()
        cut = rng.randrange(len(data))
        path.write_bytes(data[:cut])
        return f"journal cut at byte {cut}"
    if what == "lines":
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        how = rng.choice(["duplicated", "swapped", "reversed", "dropped"])
        if how == "duplicated":
            lines.insert(j, lines[i])
        elif how == "swapped":
            lines[i], lines[j] = lines[j], lines[i]
        elif how == "reversed":
            lines.reverse()
        else:
            del lines[i]
        path.write_text("".join(lines))
        return f"journal lines {how} ({i}, {j})"
    if what == "garbage":
        garbage = rng.choice(GARBAGE_LINES)
        at = rng.randrange(len(lines) + 1)
        data = [line.encode() for line in lines]
        path.write_bytes(b"".join(data[:at] + [garbage if isinstance(garbage, bytes) else garbage.encode(), b"\n"]
                                  + data[at:]))
        return f"journal line {garbage[:30]!r} inserted at {at}"
    if what == "inject":
        path.write_text("".join(json.dumps(inject_everywhere(json.loads(line), rng)) + "\n" for line in lines))
        inject_meta(rec, rng)
        return "markup and odd text in every journal and meta field"
    done = []
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        record = json.loads(lines[i])
        done.append(f"line {i} ({record.get('type')}): {mutate_value(record, rng)}")
        lines[i] = json.dumps(record) + "\n"
    path.write_text("".join(lines))
    return "; ".join(done)


def inject_meta(rec: Path, rng: random.Random) -> None:
    meta = json.loads((rec / fmt.META).read_text())
    keep = {k: meta.pop(k) for k in ("format", "schema") if k in meta}
    (rec / fmt.META).write_text(json.dumps({**inject_everywhere(meta, rng), **keep}))


def meta_case(rec: Path, rng: random.Random) -> str:
    path = rec / fmt.META
    what = rng.choice(["truncate", "field", "field", "field", "whole", "schema", "inject"])
    if what == "truncate":
        data = path.read_bytes()
        cut = rng.randrange(len(data))
        path.write_bytes(data[:cut])
        return f"meta.json cut at byte {cut}"
    meta = json.loads(path.read_text())
    if what == "whole":
        meta = rng.choice([[], "x", 5, None, [meta], {"format": fmt.FORMAT}])
        done = f"meta.json replaced by {str(meta)[:30]}"
    elif what == "schema" and isinstance(meta.get("schema"), dict):
        done = f"schema: {mutate_value(meta['schema'], rng)}"
    elif what == "inject":
        inject_meta(rec, rng)
        return "markup and odd text in every meta field"
    else:
        key = rng.choice(["version", "target", "interval_s", "probes", "start_real_ns", "complete",
                          "governor", "own_cpu_s", "settings", "host", "end_reason"])
        meta[key] = rng.choice(VALUES + TEXTS)
        done = f"meta.json {key} = {str(meta[key])[:30]!r}"
    path.write_text(json.dumps(meta))
    return done


def table_case(rec: Path, rng: random.Random) -> str:
    tables = sorted(rec.glob("*.parquet"))
    path = rng.choice(tables)
    what = rng.choice(["truncate", "bytes", "garbage", "content", "content"])
    data = path.read_bytes()
    if what == "truncate":
        cut = rng.randrange(len(data))
        path.write_bytes(data[:cut])
        return f"{path.name} cut at byte {cut}"
    if what == "bytes":
        spoiled = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            spoiled[rng.randrange(len(spoiled))] = rng.randrange(256)
        path.write_bytes(bytes(spoiled))
        return f"{path.name}: bytes overwritten ({rng.getstate()[1][0] % 1000})"
    if what == "garbage":
        path.write_bytes(rng.randbytes(rng.randrange(1, 5000)))
        return f"{path.name} replaced by garbage"
    table = pd.read_parquet(path)
    column = rng.choice(list(table.columns) + ["stack"] * 3)
    if column not in table or not len(table):
        table[column] = pd.Series([rng.choice(INJECTIONS)] * len(table), dtype="string")
        done = f"{path.name}: column {column} added"
    else:
        kind = table[column].dtype
        textual = pd.api.types.is_string_dtype(kind) or isinstance(kind, pd.CategoricalDtype)
        values = table[column].astype(object).tolist()
        spoil = rng.choice(["text", "value", "frames", "type"])
        for i in rng.sample(range(len(values)), min(len(values), 3)):
            values[i] = {"text": lambda: rng.choice(INJECTIONS + ODD),
                         "value": lambda: rng.choice([2**63 - 1, -2**63, 10**9, -1, float("nan"), float("inf"), 1e308]),
                         "frames": lambda: ";".join(f"f{n}" for n in range(rng.choice([300, 20_000]))),
                         "type": lambda: rng.choice(["x", None, b"\x00\xff"])}[spoil]()
        try:
            table[column] = pd.Series(values, dtype=object).infer_objects()
        except (TypeError, ValueError):
            table[column] = pd.Series([str(v) for v in values], dtype="string")
        done = f"{path.name}: {'markup or odd text' if spoil == 'text' and textual else spoil} in {column}"
    try:
        table.to_parquet(path, index=False)
    except Exception:  # pyarrow would not write it: a column of mixed types, say
        table[column] = table[column].map(str)
        table.to_parquet(path, index=False)
    return done


def files_case(rec: Path, rng: random.Random, victim: Path) -> str:
    name = rng.choice([p.name for p in rec.iterdir()])
    path = rec / name
    what = rng.choice(["victim", "device", "loop", "dot", "directory", "fifo", "removed"])
    path.unlink()
    if what == "victim":
        path.symlink_to(victim)
    elif what == "device":
        path.symlink_to(rng.choice(["/dev/zero", "/dev/urandom", "/proc/self/environ"]))
    elif what == "loop":
        path.symlink_to(name)
    elif what == "dot":
        path.symlink_to(".")
    elif what == "directory":
        path.mkdir()
        (path / "inner").symlink_to("..")
    elif what == "fifo":
        os.mkfifo(path)
    return f"{name}: {what}"


# --- running a case ---------------------------------------------------------------------

class Hung(Exception):
    pass


def run_each(runs: list[tuple], what: str, seconds: int = SECONDS_PER_CASE) -> None:
    """innostall with each argument list, all within `seconds`: each ends in a report or one
    line (check), and none hangs (Hung, raised by the alarm wherever the command is)."""
    def on_alarm(signum, frame):
        raise Hung(f"still running after {seconds} s")

    before_alarm = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        for args in runs:
            said = f"{what}: {' '.join(map(str, args))}"
            try:
                check(innostall(*args), said)
            except (Hung, AssertionError):
                raise
            except Exception as e:
                raise AssertionError(f"{said}: {e.__class__.__name__}: {e}") from e
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, before_alarm)


def snapshot(root: Path, leave_out: Path) -> dict[str, str]:
    """Every entry under root but leave_out: what it is, and a regular file's content hash."""
    found = {}
    for directory, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(directory) / name
            if path == leave_out or leave_out in path.parents:
                continue
            info = path.lstat()
            found[str(path)] = (hashlib.sha1(path.read_bytes()).hexdigest() if stat.S_ISREG(info.st_mode)
                                else f"{stat.S_IFMT(info.st_mode)}:{os.readlink(path) if path.is_symlink() else ''}")
    return found


def plant_in_output(out: Path, victim: Path, rng: random.Random) -> str:
    """Links, a hard link and a FIFO where export writes: none is written through."""
    names = rng.sample(["summary.json", "counters.csv", "hists.csv", "walks.csv", "summary.csv",
                        "deep-walks.by-count.svg", "latch-waits.by-time.folded", "speedscope.json"], 4)
    (out / names[0]).symlink_to(victim)
    os.link(victim, out / names[1])
    os.mkfifo(out / names[2])
    (out / names[3]).symlink_to("/dev/null")
    return f"planted in the output: {', '.join(names)}"


def check(result, what: str) -> None:
    assert "Traceback" not in result.stderr, f"{what}: a traceback\n{result.stderr}"
    if result.returncode == 0:
        assert result.stdout or result.stderr, f"{what}: exit 0 with nothing said"
    else:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("innostall: "), f"{what}: not one line\n{result.stderr}"
    for text in (result.stdout, result.stderr):
        text.encode("utf-8")  # a lone surrogate cannot be printed
        assert "\x1b" not in text, f"{what}: an escape sequence reached the terminal"


def no_live_markup(path: Path, what: str) -> None:
    if path.is_file():
        text = path.read_text(errors="replace")
        for markup in LIVE_MARKUP:
            assert markup not in text, f"{what}: {markup!r} live in {path.name}"


@pytest.mark.parametrize("seed", range(CHECK_CASES))
def test_case(seed, bases, tmp_path):
    run_case(seed, bases, tmp_path)


@pytest.mark.heavy
@pytest.mark.parametrize("seed", range(CHECK_CASES, CASES))
def test_case_heavy(seed, bases, tmp_path):
    run_case(seed, bases, tmp_path)


def run_case(seed, bases, tmp_path):
    rng = random.Random(seed)
    family = ["journal", "journal", "journal", "meta", "tables", "files"][seed % 6]
    base = rng.choice(JOURNAL_BASES if family == "journal" else
                      TABLE_BASES if family == "tables" else list(bases))
    rec = shutil.copytree(bases[base], tmp_path / "rec")
    victim = tmp_path / "outside" / "secret"
    victim.parent.mkdir()
    victim.write_text("the secret outside the recording\n")
    mutate = {"journal": journal_case, "meta": meta_case, "tables": table_case,
              "files": lambda r, g: files_case(r, g, victim)}[family]
    what = f"case[{seed}] {base}: {mutate(rec, rng)}"
    out = tmp_path / "out"
    # where there is markup, the HTML and SVGs are checked for it; for some cases, export
    # and query run too, export into a directory with traps planted in it
    markup, planted = "markup" in what, seed % 25 == 0
    if markup or planted:
        out.mkdir()
    if planted:
        what += "; " + plant_in_output(out, victim, rng)
    before = snapshot(tmp_path, out)
    runs = [("report", rec), ("report", rec, "--json")]
    runs += [("report", rec, "--html", out / "report.html")] if markup else []
    stacks_marked = markup and ("every journal" in what or what.endswith(" in stack"))  # for the SVGs
    runs += [("export", rec, "--out", out)] if planted or stacks_marked else []
    runs += [("query", rec, "--sql", "SELECT count(*) FROM counters")] if planted else []
    run_each(runs, what)
    assert snapshot(tmp_path, out) == before, f"{what}: a file outside the output changed"
    assert victim.read_text() == "the secret outside the recording\n", what
    if markup or planted:
        for path in [out / "report.html", *out.glob("*.svg")]:
            no_live_markup(path, what)
        assert not any("the secret" in p.read_text(errors="replace") for p in out.iterdir()
                       if p.is_file() and not p.is_symlink() and p.stat().st_nlink == 1), what


# --- the limits, each tried once (at a small value: the real ones take GBs to reach) ------

def test_a_journal_past_its_limit_is_read_up_to_it_and_said(bases, tmp_path, monkeypatch):
    rec = shutil.copytree(bases["stall"], tmp_path / "rec")
    monkeypatch.setattr(journal_lines, "MAX_JOURNAL_BYTES", 4000)
    loaded = recording.load(str(rec))
    assert 0 < loaded.counters["interval"].nunique() < 27
    assert any("only the first" in w and "left out" in w for w in loaded.warnings)


def test_a_line_past_its_limit_is_damage_not_memory(bases, tmp_path, monkeypatch):
    rec = shutil.copytree(bases["stall"], tmp_path / "rec")
    lines = (rec / fmt.JOURNAL).read_text().splitlines(keepends=True)
    lines.insert(5, '{"type":"deep_walk","folded":"' + "x" * 100_000 + '"}\n')
    (rec / fmt.JOURNAL).write_text("".join(lines))
    monkeypatch.setattr(journal_lines, "MAX_LINE_BYTES", 50_000)
    loaded = recording.load(str(rec))
    assert loaded.warnings[0].startswith("1 damaged journal line(s) skipped (the first, line 6: longer than")


def test_a_footer_claiming_too_much_is_a_damaged_table(bases, tmp_path, monkeypatch):
    rec = shutil.copytree(bases["real"], tmp_path / "rec")
    monkeypatch.setattr(table_bounds, "MAX_TABLE_ROWS", 100)  # counters.parquet holds 3180 rows
    result = innostall("report", rec)
    assert result.returncode == 1 and "claims 3,180 rows" in result.stderr, result.stderr


def test_stacks_and_names_past_the_limits_are_cut_and_said(bases, tmp_path, monkeypatch):
    monkeypatch.setattr(table_bounds, "MAX_STACKS", 2)
    monkeypatch.setattr(table_bounds, "MAX_COUNTER_NAMES", 10)
    loaded = recording.load(str(bases["latches-tables"]))
    assert loaded.latch_stacks["stack"].nunique() == 2 and loaded.counters["name"].nunique() == 10
    assert any("latch_stacks: the 1 lightest stacks left out" in w for w in loaded.warnings)
    assert any("counters left out: the reader keeps 10" in w for w in loaded.warnings)


def test_a_counter_past_int64_is_clamped_and_said_one_past_u64_is_damage(bases, tmp_path):
    rec = shutil.copytree(bases["stall"], tmp_path / "rec")
    records = [json.loads(line) for line in (rec / fmt.JOURNAL).read_text().splitlines()]
    records[3]["counters"]["purge_pages"] = 2**64 - 1
    records[5]["counters"]["purge_pages"] = 2**64
    (rec / fmt.JOURNAL).write_text("".join(json.dumps(r) + "\n" for r in records))
    loaded = recording.load(str(rec))
    assert "1 count(s) above 2^63 - 1 in the journal read as 2^63 - 1" in loaded.warnings
    assert "line 6: interval.counters.'purge_pages' is not a whole number from 0 to 2^64" in loaded.warnings[0]
