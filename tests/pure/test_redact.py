"""`innostall redact` (analysis/redact.py): the copy of a recording holds none of its
statements' literals in any file, Parquet included; with --pseudonyms no user, host or
socket name either, each replaced by the same pseudonym wherever it appears; the original
is left byte for byte; the copy reports; and what it refuses is one line. The reports say
how the statements they show were kept (record's fingerprints or --keep-literals)."""
from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pandas as pd
import pytest

import recordings
from conftest import REPO, innostall
from innostall.analysis import recording, summary, views
from innostall.format.fingerprint import fingerprint
from recordings import purge_journal, view

SOCKET = "/proc/4242/root/run/mysqld/orders-primary.sock"
USERS = ("alice_admin", "bob_app")  # in order of first appearance; the SQL login is root
HOST = "db-orders-7.internal"
STATEMENTS = ("SELECT * FROM users WHERE email = 'alice.smith@example.com' FOR UPDATE",
              "UPDATE sessions SET token = 'a3f9c2e1b4d5', city = 'Zürich' WHERE id IN (9071, 9072)")
LITERALS = ("alice.smith@example.com", "a3f9c2e1b4d5", "Zürich", "9071")


def sql_meta(statements: str | None) -> dict:
    return {"access": True, "socket": SOCKET, "user": "root", "tid_source": "information_schema.PROCESSLIST.TID",
            "note": None, **({"statements": statements} if statements else {})}


def pinned(directory: Path, statements: str | None = "literals kept") -> Path:
    """A recording whose two oldest views pinned purge for 12 s, each naming its user and a
    statement with literals (as record --keep-literals keeps them)."""
    first = view(4321, 0.5, 1000, connection_id=17, user=USERS[0], statement=STATEMENTS[0])
    second = view(4400, 1.5, 1500, connection_id=18, user=USERS[1], statement=STATEMENTS[1])
    steps = [{"history": 1000 + 800 * i, "purge_batches": 1, "purge_empty_batches": 1,
              "views": [first, second] if i > 1 else [first]} for i in range(1, 13)]
    steps += [{"history": 0, "purge_batches": 60, "purge_pages": 60 * 127}] * 2
    return recordings.write(directory, purge_journal(steps), host=HOST, sql=sql_meta(statements))


def contents(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def leaks(directory: Path, words) -> list[tuple[str, str]]:
    """(file, word) for each word found in a file's bytes, as UTF-8 or as JSON escapes it."""
    found = []
    for name, data in contents(directory).items():
        for word in words:
            forms = {word.encode(), json.dumps(word)[1:-1].encode()}
            found += [(name, word) for form in forms if form in data]
    return sorted(set(found))


def redacted(source: Path, target: Path, *options: str) -> dict:
    done = innostall("redact", source, "-o", target, *options)
    assert done.returncode == 0, done.stderr
    return json.loads((target / "meta.json").read_text())


def test_the_copy_holds_no_literal_in_any_file_and_the_original_is_untouched(tmp_path):
    source = pinned(tmp_path / "rec")
    (source / "loader.log").write_text(f"libbpf: loaded for {USERS[0]} via {SOCKET}\n")
    (source / "notes.txt").write_text(f"ask {LITERALS[0]}\n")
    before = contents(source)
    assert all(leaks(source, [word]) for word in LITERALS)  # there to be found, Parquet included
    meta = redacted(source, tmp_path / "shared")
    assert leaks(tmp_path / "shared", LITERALS) == []
    assert contents(source) == before
    assert meta["sql"]["statements"] == "fingerprinted"
    assert meta["redacted"]["left_out"] == ["loader.log", "notes.txt"]
    assert meta["host"] == HOST and meta["sql"]["user"] == "root"  # no pseudonyms asked
    report = json.loads(innostall("report", tmp_path / "shared", "--json").stdout)
    assert report["purge"]["statements"] == "fingerprinted"
    assert [v["statement"] for v in report["purge"]["pinned_by"]] == [fingerprint(STATEMENTS[0])]
    views = pd.read_parquet(tmp_path / "shared" / "read_views.parquet")
    assert set(views["statement"]) == {fingerprint(s) for s in STATEMENTS}
    assert set(views["user"]) == set(USERS)


def test_pseudonyms_name_each_user_host_and_socket_alike_everywhere(tmp_path):
    source = pinned(tmp_path / "rec")
    meta = redacted(source, tmp_path / "shared", "--pseudonyms")
    assert leaks(tmp_path / "shared", LITERALS + USERS + (HOST, SOCKET, "orders-primary")) == []
    assert (meta["host"], meta["sql"]["socket"], meta["sql"]["user"]) == ("host-1", "socket-1", "user-3")
    assert meta["redacted"]["pseudonyms"] is True
    original = [r for r in map(json.loads, (source / "journal.jsonl").read_text().splitlines())
                if r["type"] == "read_views"]
    copied = [r for r in map(json.loads, (tmp_path / "shared" / "journal.jsonl").read_text().splitlines())
              if r["type"] == "read_views"]
    pseudonym = {"alice_admin": "user-1", "bob_app": "user-2"}  # by first appearance
    assert [[pseudonym[v["user"]] for v in r["views"]] for r in original] == \
        [[v["user"] for v in r["views"]] for r in copied]
    views = pd.read_parquet(tmp_path / "shared" / "read_views.parquet")
    assert dict(zip(views["connection_id"], views["user"])) == {17: "user-1", 18: "user-2"}


def test_a_damaged_journal_line_is_left_out_and_said(tmp_path):
    source = pinned(tmp_path / "rec")
    lines = (source / "journal.jsonl").read_text().splitlines(keepends=True)
    lines.insert(5, '{"type": "read_views", "views": [{"statement": "SELECT \'hunter2\'"\n')
    (source / "journal.jsonl").write_text("".join(lines))
    done = innostall("redact", source, "-o", tmp_path / "shared")
    assert done.returncode == 0
    assert "innostall: 1 damaged journal line(s) left out" in done.stderr.splitlines()
    assert leaks(tmp_path / "shared", ("hunter2",) + LITERALS) == []
    assert json.loads((tmp_path / "shared" / "meta.json").read_text())["redacted"]["damaged_journal_lines"] == 1
    assert innostall("report", tmp_path / "shared").returncode == 0


def test_the_copy_is_its_owners_alone(tmp_path):
    old = os.umask(0o022)
    try:
        redacted(pinned(tmp_path / "rec"), tmp_path / "shared")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "shared").stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "shared").iterdir()} == {0o600}


def test_a_recording_without_its_journal_has_its_read_views_table_redacted(tmp_path):
    source = tmp_path / "rec"
    shutil.copytree(REPO / "tests" / "data" / "pin-catch-up", source)
    views = pd.read_parquet(source / "read_views.parquet")
    named = views["user"].notna()
    views.loc[named, "statement"] = STATEMENTS[0]
    views.to_parquet(source / "read_views.parquet", index=False)
    assert leaks(source, LITERALS[:1])
    redacted(source, tmp_path / "shared", "--pseudonyms")
    assert leaks(tmp_path / "shared", LITERALS[:1]) == []
    copied = pd.read_parquet(tmp_path / "shared" / "read_views.parquet")
    assert set(copied.loc[named, "statement"]) == {fingerprint(STATEMENTS[0])}
    assert set(copied.loc[named, "user"]) == {"user-1"}
    assert set(os.listdir(tmp_path / "shared")) == set(os.listdir(source))
    assert innostall("report", tmp_path / "shared", "--json").returncode == 0


@pytest.mark.parametrize("case", ["not empty", "inside", "itself", "missing", "a file"])
def test_what_redact_refuses_is_one_line(tmp_path, case):
    source = pinned(tmp_path / "rec")
    target = {"not empty": tmp_path / "full", "inside": source / "shared", "itself": source,
              "missing": tmp_path / "new", "a file": tmp_path / "file"}[case]
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    (tmp_path / "file").write_text("x")
    before = contents(source)
    done = innostall("redact", tmp_path / "gone" if case == "missing" else source, "-o", target)
    assert done.returncode != 0 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("innostall: "), done.stderr
    assert contents(source) == before
    assert not (source / "shared").exists() and not (tmp_path / "new").exists()


# --- what the reports say of the statements -----------------------------------------------

@pytest.mark.parametrize("kept, said", [
    ("fingerprinted", "statements shown as fingerprints (literals replaced by ?); record --keep-literals keeps them"),
    ("literals kept", "statements shown with their literals (record --keep-literals)"),
    (None, None)])  # a recording made before it was said
def test_the_reports_say_how_the_statements_shown_were_kept(tmp_path, kept, said):
    rec = recording.load(str(pinned(tmp_path / "rec", kept)))
    report = views.text_report(rec)
    assert summary.summary(rec)["purge"]["statements"] == (kept or "as recorded")
    if said:
        assert f"    {said}" in report.splitlines()
    else:
        assert "statements shown" not in report
    if kept == "fingerprinted":  # the page's sentence starts with a capital
        assert f"<p class=\"none\">S{said[1:]}.</p>" in views.html_report(rec)
