"""Load a recording directory into pandas, refusing anything we cannot read in one line."""
from __future__ import annotations

import copy
import hashlib
import os
import stat
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import pandas as pd

from innostall.format import (files, journal as fmt, journal_files, journal_lines, meta_shape,
                              safe_text as safe_text_limits, table_bounds, table_builders)
from innostall.errors import UserError
from innostall.format.safe_text import safe_strings, safe_text
from innostall.format.schema import Schema


# the attribute a table is read by where it is not its name (the views' older spelling)
ATTRIBUTE_TABLES = {"pages": "block_pages"}


@dataclass(init=False)
class Recording:
    path: str
    meta: dict
    schema: Schema  # names, kinds and units of its counters and histograms, and its tables
    counters: pd.DataFrame  # interval, t_s, name, value
    hists: pd.DataFrame  # interval, t_s, name, slot, count
    # every other table of its schema by name (innostall/format/tables.py), each also an
    # attribute: rec.walks, rec.latch_holders ... (rec.pages: block_pages)
    tables: dict[str, pd.DataFrame]
    gauges_before: dict  # a window's gauges' levels at its start (window.py)
    warnings: list[str]  # what was read around, in words
    window: dict | None  # a window of the recording (window.py): where it lies in it
    # sums the views ask for dozens of times: (the table they were summed from, the sums)
    _sums: dict = field(init=False, repr=False, compare=False)

    def __init__(self, path: str, meta: dict, schema: Schema, counters: pd.DataFrame, hists: pd.DataFrame,
                 tables: dict[str, pd.DataFrame] | None = None, gauges_before: dict | None = None,
                 warnings: list[str] | None = None, window: dict | None = None, **named: pd.DataFrame):
        """named: tables given by name or attribute (walks=..., pages=...), over `tables`:
        dataclasses.replace(rec, walks=...) replaces one. A table not given is empty."""
        self.path, self.meta, self.schema, self.counters, self.hists = path, meta, schema, counters, hists
        self.tables = {**(tables or {}), **{ATTRIBUTE_TABLES.get(name, name): table for name, table in named.items()}}
        unknown = set(self.tables) - set(schema.tables.recording)
        if unknown:
            raise TypeError(f"no table {', '.join(sorted(unknown))} in the recording's schema")
        for name in table_builders.table_names(schema):
            if name not in self.tables:
                self.tables[name] = table_builders.empty(name, schema)
        self.gauges_before, self.warnings, self.window = gauges_before or {}, warnings or [], window
        self._sums = {}

    def __getattr__(self, name: str) -> pd.DataFrame:
        tables = self.__dict__.get("tables")
        name = ATTRIBUTE_TABLES.get(name, name)
        if tables is None or name not in tables:
            raise AttributeError(name)
        return tables[name]

    def summed(self, table: str, by: list[str], column: str) -> pd.Series:
        """A table's column summed by some of its columns, once per table (a test may put
        another table in its place)."""
        frame = getattr(self, table)
        done, sums = self._sums.get(table, (None, None))
        if done is not frame:
            sums = frame.groupby(by, observed=True)[column].sum()
            self._sums[table] = (frame, sums)
        return sums

    def counter_total(self, name: str) -> int:
        return int(self.summed("counters", ["name"], "value").get(name, 0))

    def setting(self, name: str, default: int) -> int:
        return int(self.meta.get("settings", {}).get(name, default))

    def probe_attached(self, name: str) -> bool:
        return any(p["name"] == name and p["attached"] for p in self.meta.get("probes", []))

    def hist(self, names: str | list[str]) -> pd.Series:
        """Counts per log2 slot over the whole recording, of one histogram or several
        added up slot by slot."""
        done, by_name = self._sums.get("hist", (None, None))
        if done is not self.hists:
            sums = self.hists.groupby(["name", "slot"], observed=True)["count"].sum()
            by_name = {name: slots.droplevel("name") for name, slots in sums.groupby(level="name", observed=True)}
            self._sums["hist"] = (self.hists, by_name)
        picked = [by_name[n] for n in dict.fromkeys([names] if isinstance(names, str) else names) if n in by_name]
        if not picked:
            return pd.Series([], dtype="int64", name="count", index=pd.Index([], dtype="int8", name="slot"))
        return (picked[0] if len(picked) == 1 else pd.concat(picked).groupby(level="slot").sum()).astype("int64")

    def derived(self, key: tuple, inputs: tuple, make):
        """make(), once while the inputs (the tables and dicts it reads) are the very objects
        they were: the views derive the same per-interval tables from a recording dozens of
        times a report (a test may put another table in one's place, and it is derived again)."""
        done, value = self._sums.get(key, ((), None))
        if len(done) != len(inputs) or any(a is not b for a, b in zip(done, inputs)):
            value = make()
            self._sums[key] = (inputs, value)
        return value

    @property
    def duration_s(self) -> float:
        """The last snapshot's time, taken once per counters table (the views ask for it
        dozens of times, and a long recording's table has millions of rows)."""
        done, last = self._sums.get("duration", (None, None))
        if done is not self.counters:
            last = float(self.counters["t_s"].max()) if len(self.counters) else 0.0
            self._sums["duration"] = (self.counters, last)
        return last


def load(path: str) -> Recording:
    """The recording at path: its Parquet tables, or, when it was cut short or they are
    damaged, its journal's; within the reader's limits (innostall/format/table_bounds.py).
    Whatever it cannot read is one line (UserError); whatever it read around is in its warnings.
    A small recording read again unchanged (the same bytes in every file) is a copy of the
    last reading: reading and checking its tables costs ~0.15 s of CPU, and the report, the
    checker and `diff` each read the same one (a test suite does it hundreds of times)."""
    before = contents(path)
    with READING_KEPT:  # a watch's verdict may be read in a thread of its own
        kept = READ_LATELY.get(before) if before is not None else None
        if kept is not None:
            READ_LATELY.move_to_end(before)
    if kept is not None:
        return copied(kept)
    rec = read(path)
    if before is not None and contents(path) == before:  # not rewritten while it was read
        with READING_KEPT:
            READ_LATELY[before] = copied(rec)
            while len(READ_LATELY) > KEPT_READINGS:
                READ_LATELY.popitem(last=False)
    return rec


# The last readings of small recordings, by contents(path); each handed out as a copy, which
# its reader may change as it likes.
READ_LATELY: OrderedDict[tuple, Recording] = OrderedDict()
READING_KEPT = threading.Lock()
KEPT_READINGS = 8
KEPT_BYTES = 4 * 2**20  # of files: a recording of minutes (a test's, a watch's) is a few hundred KB
LIMITED = (table_bounds, journal_lines, journal_files, meta_shape, safe_text_limits)


def contents(path: str) -> tuple | None:
    """The path, and every name, mode, size and byte under it; None for a recording of more
    than KEPT_BYTES, one holding anything but files and directories (a link, a FIFO: read
    as load reads them, refused or said), or one that cannot be read whole (load says why)."""
    digest, total = hashlib.blake2b(), 0
    try:
        pending = [(path, "")]
        while pending:
            directory, prefix = pending.pop()
            for entry in sorted(os.scandir(directory), key=lambda e: e.name):
                st = entry.stat(follow_symlinks=False)
                digest.update(f"{prefix}{entry.name}\0{st.st_mode}\0{st.st_size}\0".encode("utf-8", "surrogateescape"))
                if stat.S_ISDIR(st.st_mode):
                    pending.append((entry.path, f"{prefix}{entry.name}/"))
                    continue
                total += st.st_size
                if not stat.S_ISREG(st.st_mode) or total > KEPT_BYTES:
                    return None
                with files.open_regular(entry.path) as f:
                    digest.update(f.read(KEPT_BYTES + 1))
        return path, os.stat(path).st_mode, digest.hexdigest(), limits()
    except (OSError, UserError):
        return None


def limits() -> tuple:
    """The reader's limits as they are now (a test lowers one to reach it), which a reading
    depends on as much as on the bytes: every number named in capitals in the modules that
    read and bound a recording."""
    return tuple((module.__name__, name, value) for module in LIMITED
                 for name, value in vars(module).items()
                 if name.isupper() and isinstance(value, (int, float)))


def copied(rec: Recording) -> Recording:
    return Recording(rec.path, copy.deepcopy(rec.meta), rec.schema, rec.counters.copy(), rec.hists.copy(),
                     {name: table.copy() for name, table in rec.tables.items()},
                     gauges_before=copy.deepcopy(rec.gauges_before), warnings=list(rec.warnings),
                     window=copy.deepcopy(rec.window))


def read(path: str) -> Recording:
    """The recording at path, read (load)."""
    meta, warnings = read_meta(path)
    watched = meta.get("watch")
    if isinstance(watched, dict) and isinstance(watched.get("saved"), list):
        saved = [s.get("directory") for s in watched["saved"] if isinstance(s, dict) and isinstance(s.get("directory"), str)]
        raise UserError(f"{path} is a watch's directory, not a recording: " + (
            f"its recordings are {', '.join(os.path.join(path, safe_text(d, 100)) for d in saved)}" if saved
            else "nothing triggered, nothing was saved"))
    try:
        schema = fmt.schema_of(meta)
    except UserError as e:
        raise UserError(f"{path}: {e}")
    optional = table_builders.table_names(schema)
    read, damaged, journal = None, None, journal_files.has_journal(path)
    if meta.get("complete") and files.state(os.path.join(path, fmt.COUNTERS)) != "missing":
        try:
            read = _read_tables(path, optional, schema, journal)
        except table_bounds.DamagedTable as e:
            if not journal:
                raise
            damaged = f"{e}: this report was rebuilt from the journal"
            warnings.append(damaged)
    if read is None:  # cut short, or its tables lost or damaged: rebuild them from the journal
        read = _rebuild(path, optional, meta, schema, tables_lost=bool(meta.get("complete")) and not damaged)
    counters, hists, tables, notes = read
    counters, hists, limits = table_bounds.bound(counters, hists, tables, schema)
    return Recording(path, meta, schema, counters, hists, tables, warnings=warnings + notes + limits)


def _read_tables(path: str, optional: list[str], schema: Schema, journal: bool):
    """The Parquet tables. A table the recording lacks is empty (older recordings); a damaged
    one is DamagedTable (the tables are then rebuilt from the journal), or, without a journal,
    left out and said if the views can do without it."""
    tables, notes = {}, []
    for name in optional:
        file = schema.tables.recording[name].file
        tables[name] = table_builders.empty(name, schema)
        if files.state(os.path.join(path, file)) != "missing":
            try:
                tables[name] = table_bounds.read_table(path, file, tables[name])
            except table_bounds.DamagedTable as e:
                if journal:
                    raise
                notes.append(f"{e}: left out")
    counters, hists = (table_builders.empty(name, schema) for name in ("counters", "hists"))
    counters = table_bounds.read_table(path, fmt.COUNTERS, counters)
    if not len(counters):  # the recorder writes the tables only after an interval: this one lost its rows
        raise table_bounds.DamagedTable(f"{os.path.join(path, fmt.COUNTERS)}: damaged table (it holds no interval)")
    return counters, table_bounds.read_table(path, fmt.HISTS, hists), tables, notes


def _rebuild(path: str, optional: list[str], meta: dict, schema: Schema, tables_lost: bool):
    """The tables from the journal, and what meta.json lacks when the recorder could not
    finish it. The journal's reader checks each line's shape and skips (and counts) the
    damaged ones; a journal holding no interval is one line."""
    read = fmt.JournalLines()
    try:  # read once, its snapshots not held (fmt.streamed)
        records, counters, hists = fmt.streamed(path, schema.gauges, read, schema.tables)
    except FileNotFoundError:
        raise UserError(f"{path}: recording has no data (no {fmt.JOURNAL})")
    except OSError as e:
        raise UserError(f"{path}: cannot read its journal ({e.strerror})")
    if not any(r["type"] in ("interval", "final") for r in records):
        raise UserError(f"{path}: the recording is empty: its journal holds no interval "
                        "(it ended before the first one)")
    for key, value in safe_strings(fmt.journal_facts(records)).items():
        meta.setdefault(key, value)
    # a table none of whose lines are in the journal is empty, and built once (a fresh build
    # costs a few ms, and a journal cut short often has half of them)
    kinds = {r["type"] for r in records}
    tables = {name: table_builders.build(name, records, schema)
              if set(table_builders.source_lines(schema, name)) & kinds else table_builders.empty(name, schema)
              for name in optional}
    warnings = read.notes()
    if tables_lost and warnings:
        warnings.append("its tables were missing, so this report was rebuilt from the journal")
    return counters, hists, tables, warnings


def read_meta(path: str) -> tuple[dict, list[str]]:
    """meta.json, checked (innostall/format/meta_shape.py), and what was left out of it."""
    if not os.path.isdir(path):
        raise UserError(f"{path}: no such recording directory")
    return meta_shape.read_meta(path)
