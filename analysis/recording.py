"""Load a recording directory into pandas, refusing anything we cannot read in one line."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import pandas as pd

from innostall.format import files, journal as fmt, journal_files, meta_shape
from innostall.errors import UserError
from innostall.format.writer_tables import (APPLIERS, FLUSH_WAITS, REDO_WRITERS, appliers_table, flush_waits_table,
                                            redo_writers_table)
from innostall.format.safe_text import safe_strings, safe_text
from innostall.format.work_latches import WORK_LATCHES, work_latches_table
from innostall.format.schema import Schema

from . import bounds


@dataclass
class Recording:
    path: str
    meta: dict
    schema: Schema  # names, kinds and units of its counters and histograms
    counters: pd.DataFrame  # interval, t_s, name, value
    hists: pd.DataFrame  # interval, t_s, name, slot, count
    walks: pd.DataFrame = field(default_factory=lambda: fmt.walks_table([]))
    # deep version walks: t_s, tid, depth, latency_us, stack (folded, root first)
    pages: pd.DataFrame = field(default_factory=lambda: fmt.pages_table([]))
    # blocks whose latch was waited for: space, page_no, waits, wait_us
    wait_stacks: pd.DataFrame | None = None
    # user stacks of latch waits: mode, stack (folded, root first), waits, wait_us
    read_views: pd.DataFrame = field(default_factory=lambda: fmt.read_views_table([]))
    # the oldest read views at each snapshot: interval, t_s, tid, opened_s, age_s, ...
    latches: pd.DataFrame = field(default_factory=lambda: fmt.latches_table([]))
    # every contended latch by name: name, kind, waits, wait_us, max_us, p99_us
    latch_timeline: pd.DataFrame = field(default_factory=lambda: fmt.latch_timeline_table([]))
    # the same per interval: interval, t_s, name, kind, waits, wait_us
    latch_stacks: pd.DataFrame | None = None
    # waiter stacks per latch: name, kind, mode, stack, waits, wait_us
    latch_holders: pd.DataFrame | None = None
    # who woke latch waiters: latch, mode, thread, role, stack (the waker's), waits, wait_us
    redo_writers: pd.DataFrame = field(default_factory=lambda: redo_writers_table([]))
    # every thread that wrote redo: tid, thread, role, stack, bytes, purge_bytes, writes
    flush_waits: pd.DataFrame = field(default_factory=lambda: flush_waits_table([]))
    # writers' waits for flushing: kind, thread, role, stack, waits, wait_us
    appliers: pd.DataFrame = field(default_factory=lambda: appliers_table([]))
    # a replica's applier threads: tid, thread, role, events, apply_ns
    work_latches: pd.DataFrame | None = None
    # the latches purge's work and the applier's waited on, per interval: interval, t_s, owner,
    # name, kind, mode, waits, wait_us
    gauges_before: dict = field(default_factory=dict)  # a window's gauges' levels at its start (window.py)
    warnings: list[str] = field(default_factory=list)  # what was read around, in words
    window: dict | None = None  # a window of the recording (window.py): where it lies in it
    # sums the views ask for dozens of times: (the table they were summed from, the sums)
    _sums: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.wait_stacks is None:
            self.wait_stacks = fmt.wait_stacks_table([], self.schema)
        if self.latch_stacks is None:
            self.latch_stacks = fmt.latch_stacks_table([], self.schema)
        if self.latch_holders is None:
            self.latch_holders = fmt.holders_table([], self.schema)
        if self.work_latches is None:
            self.work_latches = work_latches_table([], self.schema)

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

    @property
    def duration_s(self) -> float:
        """The last snapshot's time, taken once per counters table (the views ask for it
        dozens of times, and a long recording's table has millions of rows)."""
        done, last = self._sums.get("duration", (None, None))
        if done is not self.counters:
            last = float(self.counters["t_s"].max()) if len(self.counters) else 0.0
            self._sums["duration"] = (self.counters, last)
        return last


def optional_tables(schema: Schema) -> dict:
    """Tables a recording may lack (older recordings, probes not attached): field -> (file,
    builder from journal records)."""
    return {"walks": (fmt.WALKS, fmt.walks_table), "pages": (fmt.PAGES, fmt.pages_table),
            "wait_stacks": (fmt.WAIT_STACKS, lambda records: fmt.wait_stacks_table(records, schema)),
            "read_views": (fmt.READ_VIEWS, fmt.read_views_table),
            "latches": (fmt.LATCHES, fmt.latches_table),
            "latch_timeline": (fmt.LATCH_TIMELINE, fmt.latch_timeline_table),
            "latch_stacks": (fmt.LATCH_STACKS, lambda records: fmt.latch_stacks_table(records, schema)),
            "latch_holders": (fmt.HOLDERS, lambda records: fmt.holders_table(records, schema)),
            "redo_writers": (REDO_WRITERS, redo_writers_table),
            "flush_waits": (FLUSH_WAITS, flush_waits_table), "appliers": (APPLIERS, appliers_table),
            "work_latches": (WORK_LATCHES, lambda records: work_latches_table(records, schema))}


# the journal lines each optional table is built from
BUILT_FROM = {"walks": "deep_walk", "pages": "latch_tables", "wait_stacks": "latch_tables",
              "read_views": "read_views", "latches": "latches", "latch_timeline": "latches",
              "latch_stacks": "latch_tables", "latch_holders": "latch_tables", "redo_writers": "latch_tables",
              "flush_waits": "latch_tables", "appliers": "latch_tables", "work_latches": "work_latches"}


def load(path: str) -> Recording:
    """The recording at path: its Parquet tables, or, when it was cut short or they are
    damaged, its journal's; within the reader's limits (bounds.py). Whatever it cannot read
    is one line (UserError); whatever it read around is in its warnings."""
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
    optional = optional_tables(schema)
    read, damaged, journal = None, None, journal_files.has_journal(path)
    if meta.get("complete") and files.state(os.path.join(path, fmt.COUNTERS)) != "missing":
        try:
            read = _read_tables(path, optional, schema, journal)
        except bounds.DamagedTable as e:
            if not journal:
                raise
            damaged = f"{e}: this report was rebuilt from the journal"
            warnings.append(damaged)
    if read is None:  # cut short, or its tables lost or damaged: rebuild them from the journal
        read = _rebuild(path, optional, meta, schema, tables_lost=bool(meta.get("complete")) and not damaged)
    counters, hists, tables, notes = read
    counters, hists, limits = bounds.bound(counters, hists, tables, schema)
    return Recording(path, meta, schema, counters, hists, **tables, warnings=warnings + notes + limits)


def _read_tables(path: str, optional: dict, schema: Schema, journal: bool):
    """The Parquet tables. A table the recording lacks is empty (older recordings); a damaged
    one is DamagedTable (the tables are then rebuilt from the journal), or, without a journal,
    left out and said if the views can do without it."""
    tables, notes = {}, []
    for name, (file, build) in optional.items():
        tables[name] = empty(file, build, schema)
        if files.state(os.path.join(path, file)) != "missing":
            try:
                tables[name] = bounds.read_table(path, file, tables[name])
            except bounds.DamagedTable as e:
                if journal:
                    raise
                notes.append(f"{e}: left out")
    counters, hists = (empty(file, lambda records, i=i: fmt.journal_to_tables(records)[i], schema)
                       for i, file in enumerate((fmt.COUNTERS, fmt.HISTS)))
    counters = bounds.read_table(path, fmt.COUNTERS, counters)
    if not len(counters):  # the recorder writes the tables only after an interval: this one lost its rows
        raise bounds.DamagedTable(f"{os.path.join(path, fmt.COUNTERS)}: damaged table (it holds no interval)")
    return counters, bounds.read_table(path, fmt.HISTS, hists), tables, notes


EMPTY: dict[tuple, pd.DataFrame] = {}


def empty(file: str, build, schema: Schema) -> pd.DataFrame:
    """What a table builder builds from no records, its columns and types: built once per
    table and set of wait modes (the only part of a schema a table's types depend on)."""
    key = (file, tuple(schema.wait_modes))
    if key not in EMPTY:
        EMPTY[key] = build([])
    return EMPTY[key].copy()


def _rebuild(path: str, optional: dict, meta: dict, schema: Schema, tables_lost: bool):
    """The tables from the journal, and what meta.json lacks when the recorder could not
    finish it. The journal's reader checks each line's shape and skips (and counts) the
    damaged ones; a journal holding no interval is one line."""
    read = fmt.JournalLines()
    try:  # read once, its snapshots not held (fmt.streamed)
        records, counters, hists = fmt.streamed(path, schema.gauges, read)
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
    tables = {name: build(records) if BUILT_FROM[name] in kinds else empty(file, build, schema)
              for name, (file, build) in optional.items()}
    warnings = read.notes()
    if tables_lost and warnings:
        warnings.append("its tables were missing, so this report was rebuilt from the journal")
    return counters, hists, tables, warnings


def read_meta(path: str) -> tuple[dict, list[str]]:
    """meta.json, checked (innostall/format/meta_shape.py), and what was left out of it."""
    if not os.path.isdir(path):
        raise UserError(f"{path}: no such recording directory")
    return meta_shape.read_meta(path)
