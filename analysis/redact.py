"""`innostall redact DIR -o NEWDIR`: a copy of a recording that can leave the host. Every
statement becomes its fingerprint (innostall/format/fingerprint.py: literals as `?`), in
the journal and so in the tables, which are rebuilt from it; with pseudonyms, the database
user names become user-1, user-2 ... (by first appearance, the same name the same
pseudonym), the host name host-1 and the SQL socket socket-1. The original is only read.

What is written: meta.json (saying what was done, under "redacted"), journal.jsonl, line
by line, and the Parquet tables. A recording whose journal is gone (its tables alone) has
its read views' table rewritten and its other tables written as read. Everything else is
left out and named in meta.json: loader.log (the loader's and libbpf's free-form messages,
which the report never reads), and any file the format does not know.

A journal line that does not parse is left out and counted; the new directory and its
files are the owner's alone (0700, 0600)."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field

import pandas as pd

from innostall import __version__
from innostall.errors import UserError
from innostall.format import files, journal as fmt, journal_files, meta_shape, table_builders
from innostall.format.fingerprint import fingerprint
from innostall.format.output_path import check_path

from .recording import Recording, load

# in meta.json's sentences about SQL access: a socket path, 'user'@'host', and user@socket
PATH = re.compile(r"(?<![\w.-])/[^\s:;,()'\"]+")
QUOTED_ACCOUNT = re.compile(r"'([^']*)'@")
LOGIN = re.compile(r"(?<![\w'.$-])([\w.$-]+)@(?=socket-)")


@dataclass
class Redacted:
    """What redact() did, for the command's one line and for meta.json."""
    damaged: int = 0  # journal lines left out
    left_out: list[str] = field(default_factory=list)  # files of the original not carried over


class Pseudonyms:
    """name -> PREFIX-N, numbered by first appearance."""

    def __init__(self, prefix: str):
        self.prefix, self.names = prefix, {}

    def __call__(self, name: str) -> str:
        if name not in self.names:
            self.names[name] = f"{self.prefix}-{len(self.names) + 1}"
        return self.names[name]


def redact(source: str, target: str, pseudonyms: bool = False) -> Redacted:
    """Write the redacted copy of the recording at source into target (new, or empty)."""
    check_target(source, target)
    rec = load(source)  # a recording we can read, or one line saying why not
    meta = read_meta(source)
    users = Pseudonyms("user") if pseudonyms else None
    done = Redacted(left_out=sorted(left_out(source, rec)))
    created = make_private_dir(target)
    try:
        if journal_files.parts(source):
            records, done.damaged = redact_journal(source, target, users, rec.schema.tables)
            tables = tables_from_journal(records, rec)
        else:
            tables = tables_as_read(source, rec, users)
        for name, table in tables.items():
            with private_file(os.path.join(target, name), "wb") as f:
                table.to_parquet(f, index=False)
        with private_file(os.path.join(target, fmt.META), "w") as f:
            json.dump(redacted_meta(meta, done, users), f, indent=2)
            f.write("\n")
    except BaseException as e:
        discard(target, created)
        if isinstance(e, OSError):  # reading the original or writing the copy
            raise UserError(f"{e.filename or target}: {e.strerror or e}")
        raise
    return done


# --- where -----------------------------------------------------------------------------------

def check_target(source: str, target: str) -> None:
    """A target that is neither the source nor in it, and holds nothing yet."""
    if not os.path.isdir(source):
        raise UserError(f"{source}: no such recording directory")
    check_path(target)  # as record -o: no link or other user's directory to redirect the copy
    real_source, real_target = os.path.realpath(source), os.path.realpath(target)
    if real_target == real_source or real_target.startswith(real_source.rstrip(os.sep) + os.sep):
        raise UserError(f"{target}: the redacted copy must go outside the recording {source}")
    if os.path.lexists(target) and not os.path.isdir(target):
        raise UserError(f"{target}: exists and is not a directory")
    try:
        full = os.path.isdir(target) and bool(os.listdir(target))
    except OSError as e:
        raise UserError(f"{target}: {e.strerror or e}")
    if full:
        raise UserError(f"{target}: exists and is not empty; give a new directory")


def make_private_dir(target: str) -> bool:
    """The target, made the owner's alone if we create it; whether we did."""
    if os.path.isdir(target):
        return False
    try:
        os.makedirs(target, mode=0o700)
    except OSError as e:
        raise UserError(f"cannot create {target}: {e.strerror or e}")
    os.chmod(target, 0o700)  # makedirs' mode goes through the umask
    return True


def private_file(path: str, mode: str):
    """A new file only its owner may read: 0600, which a umask can only take from."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), mode)


def discard(target: str, created: bool) -> None:
    """Undo a redaction that failed half-way: no half copy is left to be shared."""
    if created:
        shutil.rmtree(target, ignore_errors=True)
        return
    for name in os.listdir(target):
        with contextlib.suppress(OSError):
            os.remove(os.path.join(target, name))


def known_files(rec: Recording) -> set[str]:
    return {fmt.META, fmt.JOURNAL} | {table.file for table in rec.schema.tables.recording.values()}


def left_out(source: str, rec: Recording) -> list[str]:
    known = known_files(rec)
    return [name for name in os.listdir(source) if name not in known and not journal_files.SEGMENT.match(name)]


# --- what ------------------------------------------------------------------------------------

def read_meta(source: str) -> dict:
    """meta.json as written (load() has checked it), not as the reader completes it; bytes
    that are not UTF-8 read as U+FFFD, as load() read them."""
    with files.open_regular(os.path.join(source, fmt.META)) as f:
        return json.loads(f.read(meta_shape.MAX_META_BYTES + 1).decode("utf-8", "replace"))


def redact_record(record: dict, users: Pseudonyms | None) -> None:
    """Fingerprint every statement of a journal record in place, whatever record carries it,
    and, with pseudonyms, name every user by one. Walked without recursion: a line nested
    deep enough to parse is not deep enough to stop us."""
    stack: list = [record]
    while stack:
        node = stack.pop()
        for key, value in list(node.items() if isinstance(node, dict) else enumerate(node)):
            if isinstance(node, dict) and key == "statement" and value is not None:
                node[key] = fingerprint(value) if isinstance(value, str) else None
            elif isinstance(node, dict) and key == "user" and users is not None and value is not None:
                node[key] = users(value) if isinstance(value, str) else None
            elif isinstance(value, (dict, list)):
                stack.append(value)


def redact_journal(source: str, target: str, users: Pseudonyms | None, tables=None) -> tuple[list[dict], int]:
    """Rewrite the journal line by line, from one recording directory into another: (the
    records written, lines left out). It is read as the report reads it
    (innostall/format/journal_lines.py: regular files, each line of its shape, within the
    limits); every line is written anew from what it parses to, so nothing of its text
    survives but that. A long journal is rolled and compressed as the recorder does."""
    read = fmt.read_journal_lines(source, tables)  # its table lines as its schema describes them
    out = journal_files.JournalWriter(target)
    try:
        for record in read.records:
            redact_record(record, users)
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
            if record["type"] == "interval" and (number := out.roll()) is not None:
                journal_files.compress_segment(target, number)
    finally:
        out.close()
    return read.records, read.damaged


def tables_from_journal(records: list[dict], rec: Recording) -> dict[str, pd.DataFrame]:
    """Every table, built from the redacted records as the recorder builds them (each
    record of the shape the builders index: journal_lines.py)."""
    counters, hists = fmt.journal_to_tables(records, rec.schema.gauges)
    tables = {fmt.COUNTERS: counters, fmt.HISTS: hists}
    for name in table_builders.table_names(rec.schema):
        tables[rec.schema.tables.recording[name].file] = table_builders.build(name, records, rec.schema)
    return tables


def tables_as_read(source: str, rec: Recording, users: Pseudonyms | None) -> dict[str, pd.DataFrame]:
    """The tables of a recording without its journal, those it has: the read views' with
    their statements fingerprinted (and users named by pseudonyms), the others as read."""
    fields = {table.file: name for name, table in rec.schema.tables.recording.items()}
    tables = {file: getattr(rec, name) for file, name in fields.items()
              if os.path.exists(os.path.join(source, file))}
    if fmt.READ_VIEWS in tables:
        views = tables[fmt.READ_VIEWS].copy()
        views["statement"] = views["statement"].map(
            lambda s: fingerprint(s) if isinstance(s, str) else None).astype("string")
        if users:
            views["user"] = views["user"].map(lambda u: users(u) if isinstance(u, str) else None).astype("string")
        tables[fmt.READ_VIEWS] = views
    return tables


def redacted_meta(meta: dict, done: Redacted, users: Pseudonyms | None) -> dict:
    """meta.json of the copy: statements said fingerprinted, what was done under "redacted",
    and with pseudonyms the host, the socket and the SQL user replaced."""
    meta = dict(meta)
    sql = dict(meta["sql"]) if isinstance(meta.get("sql"), dict) else {}
    if users:
        if "host" in meta:
            meta["host"] = "host-1"
        sql = pseudonymous_sql(sql, users)
    meta["sql"] = {**sql, "statements": "fingerprinted"}
    meta["redacted"] = {"by": f"innostall {__version__}", "statements": "fingerprinted",
                        "pseudonyms": users is not None, "damaged_journal_lines": done.damaged,
                        "left_out": done.left_out}
    return meta


def pseudonymous_sql(sql: dict, users: Pseudonyms) -> dict:
    """meta.json's sql with its socket and user replaced, in their own fields and in its
    sentences ("no SQL access: root@/run/mysqld/mysqld.sock: Access denied for user
    'root'@'localhost'" → "no SQL access: user-1@socket-1: Access denied for user
    'user-1'@'localhost'"): every absolute path there is a socket tried."""
    sockets = Pseudonyms("socket")
    for key, names in (("socket", sockets), ("user", users)):
        if sql.get(key) is not None:
            sql[key] = names(sql[key]) if isinstance(sql[key], str) else None
    for key, value in sql.items():
        if isinstance(value, str) and key not in ("socket", "user"):
            value = PATH.sub(lambda m: sockets(m.group()), value)
            value = QUOTED_ACCOUNT.sub(lambda m: f"'{users(m.group(1))}'@", value)
            sql[key] = LOGIN.sub(lambda m: f"{users(m.group(1))}@", value)
    return sql
