"""Load a recording directory into pandas, refusing anything we cannot read in one line."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import pandas as pd
import pyarrow

from innostall.format import journal as fmt
from innostall.errors import UserError
from innostall.format.schema import Schema


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
    warnings: list[str] = field(default_factory=list)  # what was read around, in words

    def __post_init__(self):
        if self.wait_stacks is None:
            self.wait_stacks = fmt.wait_stacks_table([], self.schema)
        if self.latch_stacks is None:
            self.latch_stacks = fmt.latch_stacks_table([], self.schema)
        if self.latch_holders is None:
            self.latch_holders = fmt.holders_table([], self.schema)

    def counter_total(self, name: str) -> int:
        return int(self.counters.loc[self.counters["name"] == name, "value"].sum())

    def setting(self, name: str, default: int) -> int:
        return int(self.meta.get("settings", {}).get(name, default))

    def probe_attached(self, name: str) -> bool:
        return any(p["name"] == name and p["attached"] for p in self.meta.get("probes", []))

    def hist(self, names: str | list[str]) -> pd.Series:
        """Counts per log2 slot over the whole recording, of one histogram or several
        added up slot by slot."""
        rows = self.hists[self.hists["name"].isin([names] if isinstance(names, str) else names)]
        return rows.groupby("slot")["count"].sum().astype("int64")

    @property
    def duration_s(self) -> float:
        return float(self.counters["t_s"].max()) if len(self.counters) else 0.0


def optional_tables(schema: Schema) -> dict:
    """Tables a recording may lack (older recordings, probes not attached): field -> (file,
    builder from journal records)."""
    return {"walks": (fmt.WALKS, fmt.walks_table), "pages": (fmt.PAGES, fmt.pages_table),
            "wait_stacks": (fmt.WAIT_STACKS, lambda records: fmt.wait_stacks_table(records, schema)),
            "read_views": (fmt.READ_VIEWS, fmt.read_views_table),
            "latches": (fmt.LATCHES, fmt.latches_table),
            "latch_timeline": (fmt.LATCH_TIMELINE, fmt.latch_timeline_table),
            "latch_stacks": (fmt.LATCH_STACKS, lambda records: fmt.latch_stacks_table(records, schema)),
            "latch_holders": (fmt.HOLDERS, lambda records: fmt.holders_table(records, schema))}


def load(path: str) -> Recording:
    meta = _read_meta(path)
    try:
        schema = fmt.schema_of(meta)
    except UserError as e:
        raise UserError(f"{path}: {e}")
    optional = optional_tables(schema)
    counters_path = os.path.join(path, fmt.COUNTERS)
    if meta.get("complete") and os.path.exists(counters_path):
        empty_counters, empty_hists = fmt.journal_to_tables([])
        counters = _read_table(path, fmt.COUNTERS, empty_counters.columns)
        hists = _read_table(path, fmt.HISTS, empty_hists.columns)
        tables = {name: _read_table(path, file, build([]).columns)
                  if os.path.exists(os.path.join(path, file))
                  else build([]) for name, (file, build) in optional.items()}
        warnings = []
    else:  # cut short, or its tables lost: rebuild them from the journal
        journal = os.path.join(path, fmt.JOURNAL)
        if not os.path.exists(journal):
            raise UserError(f"{path}: recording has no data (no {fmt.JOURNAL})")
        counters, hists, tables, warnings = _rebuild(path, journal, optional, meta, schema)
    return Recording(path, meta, schema, counters, hists, **tables, warnings=warnings)


def _rebuild(path: str, journal: str, optional: dict, meta: dict, schema: Schema):
    """The tables from the journal, and what meta.json lacks when the recorder could not
    finish it; damaged lines are skipped and said; a journal that is not one of ours, or
    holds no interval, is one line."""
    try:
        records, damaged = fmt.read_journal_lines(journal)
        if not any(r.get("type") in ("interval", "final") for r in records):
            raise UserError(f"{path}: the recording is empty: its journal holds no interval "
                            "(it ended before the first one)")
        for key, value in fmt.journal_facts(records).items():
            meta.setdefault(key, value)
        counters, hists = fmt.journal_to_tables(records, schema.gauges)
        tables = {name: build(records) for name, (_, build) in optional.items()}
    except (UnicodeDecodeError, KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
        raise UserError(f"{path}: damaged journal ({e.__class__.__name__}: {e})")
    warnings = [f"{damaged} damaged journal line(s) skipped: the intervals around them are "
                "merged, nothing else is lost"] if damaged else []
    if meta.get("complete") and warnings:
        warnings.append("its tables were missing, so this report was rebuilt from the journal")
    return counters, hists, tables, warnings


def _read_table(path: str, name: str, columns) -> pd.DataFrame:
    try:
        table = pd.read_parquet(os.path.join(path, name))
    except (OSError, pyarrow.ArrowException) as e:
        raise UserError(f"{path}: damaged table ({e.__class__.__name__}: {str(e).splitlines()[0]})")
    # an older recording: added in the schema's order (a set's order changes run to run)
    for later in [c for c in columns if c in fmt.LATER_COLUMNS and c not in table.columns]:
        table[later] = pd.Series(pd.NA, index=table.index, dtype="string")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise UserError(f"{path}: damaged table ({name} lacks the column(s) {', '.join(missing)})")
    return table


def _read_meta(path: str) -> dict:
    if not os.path.isdir(path):
        raise UserError(f"{path}: no such recording directory")
    meta_path = os.path.join(path, fmt.META)
    try:
        with open(meta_path) as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise UserError(f"{path}: not a recording (no {fmt.META})")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UserError(f"{meta_path}: damaged metadata (not valid JSON)")
    if not isinstance(meta, dict) or meta.get("format") != fmt.FORMAT:
        raise UserError(f"{meta_path}: not an innostall recording")
    if not isinstance(meta.get("version"), int) or meta["version"] > fmt.FORMAT_VERSION:
        raise UserError(f"{path}: recording format {meta.get('version')} is newer than this "
                        f"innostall reads ({fmt.FORMAT_VERSION}); upgrade innostall")
    probes = meta.get("probes")
    if not (isinstance(meta.get("target"), dict) and isinstance(meta.get("interval_s"), (int, float))
            and isinstance(probes, list) and all(isinstance(p, dict) for p in probes)):
        raise UserError(f"{meta_path}: damaged metadata (target, interval_s or probes malformed)")
    return meta
