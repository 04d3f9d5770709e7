"""The recording format, shared by its writer (collector/recorder/store.py) and its reader
(analysis/recording.py): a directory a DBA can carry to another machine.

    meta.json         what was traced, how, when, and how it ended (versioned), and the
                      measurement schema (names, kinds and units; innostall/format/schema.py)
    journal.jsonl     the loader's cumulative snapshots, appended as they arrive, so a
                      recording cut short stays readable up to its last complete line
    counters.parquet  per-interval deltas: interval, t_s, name, value (for a gauge, its
                      value at the snapshot instead of a delta); besides the kernel's
                      counters: hits.PROBE (probe hits, counted before any filter) and the
                      cost governor's accounts, governor.server_cpu_ns, .budget_ns,
                      .overhead_ns (estimated) and per sampling group .attached_ns.GROUP
                      (time attached: coverage), .windows.GROUP, .overhead_ns.GROUP; and
                      the server's state read from its memory at each snapshot, a level:
                      server.lsn, .checkpoint_lsn, .log_capacity, .max_checkpoint_age,
                      .async_flush_age, .sync_flush_age (bytes of redo), .dirty_pages,
                      .free_pages, .lru_pages, .history (collector/server/state.py)
    hists.parquet     per-interval log2 histogram deltas: interval, t_s, name, slot, count
    walks.parquet     deep version walks, one row per event: t_s, tid, depth, latency_us,
                      stack (folded, root first, frames joined by ';'), table and index
                      whose records' versions were built (null where not recognised, and
                      in recordings made before they were kept)
    block_pages.parquet  buffer blocks whose latch was waited for: space, page_no, waits,
                      wait_us (whole recording)
    wait_stacks.parquet  user stacks of latch waits: mode (S, X, SX, other), stack (folded),
                      waits, wait_us (whole recording)
    latches.parquet   every contended latch by name (whole recording): name, kind (block,
                      index, mutex, rw_lock, srw_lock), waits, wait_us, max_us, p99_us (the
                      upper edge of the log2 bucket holding the 99th percentile)
    latch_timeline.parquet  the same per interval: interval, t_s, name, kind, waits, wait_us
    latch_stacks.parquet  waiter stacks per latch: name, kind, mode, stack (folded), waits,
                      wait_us (whole recording)
    latch_holders.parquet  who held a latch while others waited: the thread that woke each
                      waiter, by latch: latch (its address), name (as latches names it),
                      mode (the waiter's), thread
                      (the waker's name), role (analysis/holders.py), stack (folded, the
                      waker's at the wake: its release site), waits, wait_us (the time the
                      woken waits lasted; whole recording)
    redo_writers.parquet  every thread that wrote redo, with its role and its bytes, purge's
                      part apart (innostall/format/writer_tables.py; whole recording)
    flush_waits.parquet   writers' waits for flushing (the log to make room): kind, thread,
                      role, stack, waits, wait_us (writer_tables.py; whole recording)
    appliers.parquet  a replica's applier threads: tid, thread, role, events, apply_ns
                      (writer_tables.py; whole recording)
    work_latches.parquet  the latches purge's work and the applier's waited on, per
                      interval: interval, t_s, owner, name, kind, mode, waits, wait_us
                      (work_latches.py)
    read_views.parquet  the oldest read views open at each snapshot (at most 8, oldest first),
                      one row per interval and view: interval, t_s, tid, opened_s (seconds
                      from the attach, negative when opened before it), age_s, history_at_open
                      (history length when it opened; null if unknown), stack (folded where
                      it was opened; empty for views found by SQL), connection_id (null
                      without SQL), user, statement, source ("probe" or "sql"), seen_open
                      (the probe caught the view at a later read, not at its opening: its
                      age is at least age_s), open (how many views were open in all)

The journal also holds the deep-walk events as they arrive, already symbolized (their
"folded" field), and every tenth interval the cumulative latch tables (stacks folded), so
a recording cut short keeps them too.
"""
from __future__ import annotations

import re
from array import array

from innostall.errors import UserError
from innostall.format import safe_text, schema as schema_module, shapes, tables as tables_module
from innostall.format.journal_lines import (JournalLines, SNAPSHOT_TYPES, read_journal_lines,  # noqa: F401
                                            read_records, records as journal_records)
from innostall.format.roles import role_of
from innostall.format.schema import Schema, format_1
from innostall.format.tables import dtypes, format_4
from innostall.names import ARROW

FORMAT = "innostall-recording"
FORMAT_VERSION = 4  # 2: meta.json keeps the measurement schema; 3: the journal may be rolled into .xz segments;
# 4: its latch_tables lines hold the rows changed since the line before (latch_table_rows.py)
META, JOURNAL = "meta.json", "journal.jsonl"
# the tables' files are NAME.parquet (tables.py); these two are read before any other
COUNTERS, HISTS = "counters.parquet", "hists.parquet"
READ_VIEWS = "read_views.parquet"
UNNAMED = "unknown"
# each table's columns and types, as probes/innostall_tables.h gives them (tables.py)
LATCH_COLUMNS, LATCH_TIMELINE_COLUMNS = dtypes("latches"), dtypes("latch_timeline")
LATCH_STACK_COLUMNS, HOLDER_COLUMNS, PAGE_COLUMNS = dtypes("latch_stacks"), dtypes("latch_holders"), dtypes("block_pages")
# The cost governor's accounts each snapshot carries, kept as counters governor.NAME (ns)
GOVERNOR_ACCOUNTS = ("server_cpu_ns", "budget_ns", "overhead_ns")
# What calm intervals put into the stall bank and stalls took out (collector/loader/budget.c)
BANK_ACCOUNTS = ("governor.bank_put_in_ns", "governor.bank_paid_out_ns")
# The snapshot's tracepoint_runs: the scheduler tracepoints' runs in the server's context.
TRACEPOINT_RUNS = ("sched_switch", "sched_waking")
# A snapshot's `server` map, the server's state read from its memory, kept as counters
# server.NAME holding the value at the snapshot (collector/server/state.py names them)
SERVER_STATE = "server."
# pandas is imported by the functions that build tables, never here: the recorder, which
# runs next to the database, imports this module and stays small (about 100 MB less).
WALK_COLUMNS = dtypes("walks")
# Columns a table gained after recordings were made with it: absent from older ones, null then.
LATER_COLUMNS = {"table", "index", "scan_index"}
# tid is nullable: a transaction found by SQL may have no OS thread the server can tell
READ_VIEW_COLUMNS = dtypes("read_views")


def schema_of(meta: dict) -> Schema:
    """The measurement schema a recording was written with; format 1 kept none."""
    if meta.get("version") == 1:
        return format_1()
    if "schema" not in meta:
        raise UserError("damaged metadata (no measurement schema)")
    return parsed_schema(meta["schema"])


# The last schemas parsed, by what they were parsed from and the limits they were held to:
# parsing and checking one costs ~4 ms, and a report, its checker and the writer of the
# tables each parse the same one. A Schema is never changed once made.
PARSED: dict[tuple, Schema] = {}
PARSED_KEPT = 16
LIMITING = (schema_module, tables_module, shapes, safe_text)


def parsed_schema(raw: object) -> Schema:
    key = (repr(raw), tuple((module.__name__, name, value) for module in LIMITING
                            for name, value in vars(module).items() if name.isupper() and isinstance(value, int)))
    schema = PARSED.get(key)
    if schema is None:
        schema = Schema.parse(raw)  # a schema refused is parsed (and refused) each time
        if len(PARSED) >= PARSED_KEPT:
            PARSED.clear()
        PARSED[key] = schema
    return schema


def meta_fact(record: dict) -> dict:
    """What meta.json keeps of one journal line: when the probes were attached, when the
    final snapshot was taken, and why the loader ended. The recorder notes it as lines
    arrive; the reader takes it from the journal when meta.json was never finished."""
    kind = record.get("type")
    if kind == "attached":
        return {"start_real_ns": record.get("real_ns")}
    if kind == "final":
        return {"stop_real_ns": record.get("real_ns")}
    if kind == "end":
        return {"end_reason": record.get("reason")}
    return {}


def journal_facts(records: list[dict]) -> dict:
    """What meta.json says at the end of a recording, as far as the journal tells it: for a
    recording whose recorder could not write its final meta.json (killed, disk full)."""
    facts = {}
    for record in records:
        facts.update(meta_fact(record))
    return facts


def journal_start(records: list[dict]) -> int:
    """CLOCK_MONOTONIC ns of the first snapshot (the attach): events are timed from it."""
    return next((r["mono_ns"] for r in records if r.get("type") in SNAPSHOT_TYPES), 0)


def walks_table(records: list[dict]) -> pd.DataFrame:
    """The deep-walk events of a journal, timed from the attach like the snapshots."""
    import pandas as pd
    start = journal_start(records)
    rows = [((r["mono_ns"] - start) / 1e9, r["tid"], r["depth"], r["latency_ns"] / 1000,
             r.get("folded", ""), r.get("table"), r.get("index") if isinstance(r.get("index"), str) else None,
             r.get("scan_index") if isinstance(r.get("scan_index"), str) else None)
            for r in records if r.get("type") == "deep_walk"]
    return pd.DataFrame(rows, columns=list(WALK_COLUMNS)).astype(WALK_COLUMNS)


def read_views_table(records: list[dict]) -> pd.DataFrame:
    """The read views of a journal, one row per interval and view. The loader prints a
    read_views line just before each interval or final snapshot, so a line belongs to the
    snapshot that follows it (the same interval numbers as the counters); one with no
    snapshot after it (a recording cut short) has no interval and is left out."""
    import pandas as pd
    start = journal_start(records)
    rows, pending, interval = [], [], 0
    for r in records:
        kind = r.get("type")
        if kind == "read_views":
            pending.append(r)
        elif kind in ("interval", "final"):
            t = (r["mono_ns"] - start) / 1e9
            rows += [_view_row(interval, t, views, view, start) for views in pending[-1:]
                     for view in views.get("views", [])]
            pending, interval = [], interval + 1
    return pd.DataFrame(rows, columns=list(READ_VIEW_COLUMNS)).astype(READ_VIEW_COLUMNS)


def _view_row(interval: int, t_s: float, views: dict, view: dict, start: int) -> tuple:
    # A view first seen in the server's memory is stamped when the walk read it, which can
    # fall a little after the line's own stamp: its age is then at least 0, never below.
    age_ns = max(0, views["mono_ns"] - view["opened_ns"])
    return (interval, t_s, view.get("tid"), (view["opened_ns"] - start) / 1e9,
            age_ns / 1e9, view.get("history_at_open"),
            view.get("folded", ""), view.get("connection_id"), view.get("user"),
            view.get("statement"), view.get("source", "probe"), bool(view.get("seen_open")),
            views.get("open", 0))


def latest_latch_tables(records: list[dict]) -> dict:
    return next((r for r in reversed(records) if r.get("type") == "latch_tables"), {})


def pages_table(records: list[dict]) -> pd.DataFrame:
    import pandas as pd
    rows = [(space, page, waits, ns / 1000)
            for space, page, waits, ns in latest_latch_tables(records).get("pages", [])]
    return pd.DataFrame(rows, columns=list(PAGE_COLUMNS)).astype(PAGE_COLUMNS)


def mode_name(modes: list[str], mode: int) -> str:
    """A wait mode by the schema's name, or by number where the schema names none."""
    return modes[mode] if mode < len(modes) else f"mode {mode}"


def wait_stacks_table(records: list[dict], schema: Schema) -> pd.DataFrame:
    import pandas as pd
    modes = schema.wait_modes
    rows = [(mode_name(modes, mode), folded, waits, ns / 1000)
            for mode, waits, ns, folded in latest_latch_tables(records).get("stacks", [])]
    columns = dtypes("wait_stacks")
    df = pd.DataFrame(rows, columns=list(columns))
    unnamed = sorted({mode for mode, *_ in rows} - set(modes))
    return df.astype({**columns, "mode": pd.CategoricalDtype(modes + unnamed)})  # every mode a category


def _latch_rows(record: dict, sites: dict | None = None) -> list[tuple]:
    """(key, name, kind, waits, ns, max_ns, slots) of each row of a `latches` line, as the
    recorder named it ([kind, id, mode, waits, ns, max_ns, address, slots, name, label]),
    or by its lock site (lock_site_names) where the recorder could not."""
    rows = []
    for row in record.get("latches", []):
        kind, ident, mode, waits, ns, max_ns, _address, slots = row[:8]
        name, label = (row[8], row[9]) if len(row) >= 10 else (UNNAMED, "latch")
        name = (sites or {}).get((kind, ident), name)
        rows.append(((kind, ident, mode), name, label, waits, ns, max_ns, slots))
    return rows


def latch_names_of(records: list[dict], sites: dict | None = None) -> dict[tuple[int, int], tuple[str, str]]:
    """(kind, id) -> (name, kind label), the last name each latch was given."""
    names = {}
    for r in records:
        if r.get("type") == "latches":
            names.update({key[:2]: (name, label) for key, name, label, *_ in _latch_rows(r, sites)})
    return names


# C library frames of a pthread mutex wait (as its symbols, or the file, name them), and the
# C++ library's, whose std::condition_variable waits through them: the server's frame is
# the first one past both
LIBC_FRAME = re.compile(r"^(libc\.so\.6\+|libc-[\d.]+\.so\+|libstdc\+\+\.so[\d.]*\+|_*pthread_|__lll_|"
                        r"__futex|_*GI_|syscall$)")


def lock_site(folded: str) -> str | None:
    """Where a pthread mutex was taken: the first two frames under the C library's (root
    first in `folded`), and whether it was a condition variable's mutex taken back."""
    frames = folded.split(";")
    inner = len(frames)
    while inner and LIBC_FRAME.match(frames[inner - 1]):
        inner -= 1
    callers = [f.split("(")[0] for f in frames[max(0, inner - 2):inner] if not f.startswith("[unknown]")]
    if inner == len(frames) or not callers:
        return None
    what = "condition's mutex retaken" if any("cond_" in f for f in frames[inner:]) else "mutex locked"
    return f"{what} in {ARROW.join(reversed(callers))}"


def lock_site_names(records: list[dict]) -> dict[tuple[int, int], str]:
    """(kind, id) -> a name for each pthread mutex the recorder could not name (a mutex of
    the SQL layer, or on the heap), from its waiters' heaviest stack: where it was taken.
    A name by use, not by identity, so it says which."""
    names, sites = latch_names_of(records), {}
    heaviest: dict[tuple[int, int], tuple[int, str]] = {}
    for kind, ident, _mode, _waits, ns, folded in latest_latch_tables(records).get("latch_stacks", []):
        if names.get((kind, ident)) == (UNNAMED, "mutex") and ns > heaviest.get((kind, ident), (-1, ""))[0]:
            heaviest[(kind, ident)] = (ns, folded)
    for key, (_ns, folded) in heaviest.items():
        site = lock_site(folded)
        if site:
            sites[key] = site
    return sites


def p99_us(slots: list[int]) -> float:
    """The upper edge, in us, of the log2 bucket holding the 99th percentile."""
    total, seen = sum(slots), 0
    for slot, n in enumerate(slots):
        seen += n
        if total and seen >= 0.99 * total:
            return float(2 ** (slot + 1))
    return 0.0


def latches_table(records: list[dict]) -> pd.DataFrame:
    """Every contended latch by name over the whole recording: the last row of each latch
    (a `latches` line holds only the latches waited for since the line before)."""
    import pandas as pd
    last, sites = {}, lock_site_names(records)
    for r in records:
        if r.get("type") == "latches":
            last.update({row[0]: row for row in _latch_rows(r, sites)})
    by_name: dict[tuple[str, str], list] = {}
    for _key, name, label, waits, ns, max_ns, slots in last.values():
        entry = by_name.setdefault((name, label), [0, 0, 0, []])
        entry[0] += waits
        entry[1] += ns
        entry[2] = max(entry[2], max_ns)
        entry[3] = [a + b for a, b in zip(entry[3] + [0] * len(slots), slots + [0] * len(entry[3]))]
    rows = [(name, label, clamp(waits), ns / 1000, max_ns / 1000, p99_us(slots))
            for (name, label), (waits, ns, max_ns, slots) in by_name.items()]
    return pd.DataFrame(rows, columns=list(LATCH_COLUMNS)).astype(LATCH_COLUMNS)


def interval_growth(records: list[dict], line_type: str, rows_of):
    """(interval, t_s, key, what, waits, ns) for each row whose waits grew since the line
    before, from lines of line_type holding cumulative rows and printed just before each
    snapshot, so that each belongs to that snapshot's interval (as the read views).
    rows_of(line) gives (key, what, waits, ns) per row; what is handed back as it is."""
    start = journal_start(records)
    pending, interval, before = None, 0, {}
    for r in records:
        kind = r.get("type")
        if kind == line_type:
            pending = r
        elif kind in ("interval", "final"):
            t = (r["mono_ns"] - start) / 1e9
            for key, what, waits, ns in rows_of(pending or {}):
                prev = before.get(key, (0, 0))
                if waits > prev[0]:
                    yield interval, t, key, what, waits - prev[0], ns - prev[1]
                before[key] = (waits, ns)
            pending, interval = None, interval + 1


def latch_timeline_table(records: list[dict]) -> pd.DataFrame:
    """Waits per interval and latch name (interval_growth of the `latches` lines)."""
    import pandas as pd
    sites = lock_site_names(records)
    sums: dict[tuple[int, float, str, str], list[int]] = {}

    def rows_of(line: dict):
        return ((key, (name, label), waits, ns) for key, name, label, waits, ns, *_ in _latch_rows(line, sites))
    for interval, t, _key, (name, label), waits, ns in interval_growth(records, "latches", rows_of):
        total = sums.setdefault((interval, t, name, label), [0, 0])
        total[0] += waits
        total[1] += ns
    rows = [(interval, t, name, label, clamp(w), ns / 1000) for (interval, t, name, label), (w, ns) in sums.items()]
    return pd.DataFrame(rows, columns=list(LATCH_TIMELINE_COLUMNS)).astype(LATCH_TIMELINE_COLUMNS)


def latch_stacks_table(records: list[dict], schema: Schema) -> pd.DataFrame:
    """Waiter stacks per latch name (the last latch_tables line), names from the latches."""
    import pandas as pd
    modes, names = schema.wait_modes, latch_names_of(records, lock_site_names(records))
    rows = []
    for kind, ident, mode, waits, ns, folded in latest_latch_tables(records).get("latch_stacks", []):
        name, label = names.get((kind, ident), (UNNAMED, "latch"))
        rows.append((name, label, mode_name(modes, mode), folded, waits, ns / 1000))
    df = pd.DataFrame(rows, columns=list(LATCH_STACK_COLUMNS)).astype(LATCH_STACK_COLUMNS)
    return df.groupby(format_4().recording["latch_stacks"].keys, as_index=False, observed=True)[["waits", "wait_us"]].sum() \
        .astype(LATCH_STACK_COLUMNS) if len(df) else df


def holders_table(records: list[dict], schema: Schema) -> pd.DataFrame:
    import pandas as pd
    modes = schema.wait_modes
    rows = [(latch, (name or [UNNAMED])[0], mode_name(modes, mode), thread, role_of(thread, folded), folded, waits,
             ns / 1000)
            for latch, mode, thread, waits, ns, folded, *name in latest_latch_tables(records).get("holders", [])]
    return pd.DataFrame(rows, columns=list(HOLDER_COLUMNS)).astype(HOLDER_COLUMNS)


def governor_counters(snapshot: dict, attached: dict) -> dict[str, int]:
    """The probes' hits and the governor's accounts of a snapshot, as cumulative counters."""
    flat: dict[str, int] = {}
    for program, hits in zip(attached.get("programs", []), snapshot.get("hits", [])):
        if program.get("tracepoint"):  # its runs are tracepoint_runs, below
            continue
        for probe in program.get("probes", []):
            flat[f"hits.{probe}"] = flat.get(f"hits.{probe}", 0) + hits
    for tracepoint, runs in zip(TRACEPOINT_RUNS, snapshot.get("tracepoint_runs", [])):
        flat[f"hits.{tracepoint}"] = runs
    gov = snapshot.get("governor")
    if gov:
        flat.update({f"governor.{key}": int(gov[key]) for key in GOVERNOR_ACCOUNTS})
        names = attached.get("groups", [])
        for number, attached_ns, windows, overhead_ns in gov["groups"]:
            name = names[number - 1] if 1 <= number <= len(names) else str(number)
            flat.update({f"governor.attached_ns.{name}": attached_ns,
                         f"governor.windows.{name}": windows,
                         f"governor.overhead_ns.{name}": int(overhead_ns)})
        # the server's state that opened groups at once: [value, held ns, windows opened, wanting]
        for name, (_, held_ns, opened, _) in zip(attached.get("signals", []), gov.get("signals", [])):
            flat.update({f"governor.signal_held_ns.{name}": held_ns, f"governor.signal_windows.{name}": opened})
        # the stall bank: [in it now, put in, paid out], where signals were read
        if "bank_ns" in gov:
            flat.update(zip(BANK_ACCOUNTS, (int(ns) for ns in gov["bank_ns"][1:])))
    return flat


def journal_to_tables(records: list[dict], gauges: frozenset[str] = frozenset()
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Turn cumulative snapshots into tidy per-interval deltas (counters, hists); other
    journal records (events, the end line) are skipped (SnapshotDeltas)."""
    deltas = SnapshotDeltas(gauges)
    for record in records:
        if record.get("type") in SNAPSHOT_TYPES:
            deltas.add(record)
    return deltas.tables()


def streamed(directory: str, gauges: frozenset[str], read: JournalLines | None = None, tables=None
             ) -> tuple[list[dict], pd.DataFrame, pd.DataFrame]:
    """The journal read once (what was skipped counted in `read`), its snapshots turned into
    the counters' and histograms' rows as they come: (every other record, with of each
    snapshot only what the other tables' builders read of it, its type and times; counters;
    hists). An 8-hour journal's snapshots are not held: the table writer's peak memory went
    from 2.6 GB to 0.68 GB. The table lines are read as `tables` (tables.Tables) describes them."""
    deltas, records = SnapshotDeltas(gauges), []
    for record in journal_records(directory, read or JournalLines(), tables):
        if record["type"] in SNAPSHOT_TYPES:
            deltas.add(record)
            record = {key: record[key] for key in ("type", "mono_ns", "real_ns") if key in record}
        records.append(record)
    return records, *deltas.tables()


class SnapshotDeltas:
    """The counters' and histograms' per-interval deltas, taken snapshot by snapshot as the
    journal is read, so that a long recording's snapshots need not be held: an 8-hour
    journal's 28,800 snapshots took 1.1 GB as parsed records. The rows go into typed
    arrays (8 hours: 5.2 million counter rows, 130 MB). Gauges (the schema's kind "gauge",
    a level such as the history length) keep their value at each snapshot, not a delta, as
    do the server's state read from its memory (server.NAME: its LSN, checkpoint LSN ...)."""

    def __init__(self, gauges: frozenset[str] = frozenset()):
        self.gauges, self.attached, self.start = gauges, {}, None
        self.samples = 0
        self.names: dict[str, int] = {}  # counter and histogram names, as codes
        self.counters = {"interval": array("i"), "t_s": array("d"), "name": array("i"), "value": array("q")}
        self.hists = {"interval": array("i"), "t_s": array("d"), "name": array("i"), "slot": array("b"),
                      "count": array("q")}
        self.prev_counters: dict[str, int] = {}
        self.prev_hists: dict[str, list[int]] = {}

    def code(self, name: str) -> int:
        return self.names.setdefault(name, len(self.names))

    def add(self, s: dict) -> None:
        if s["type"] == "attached":
            self.attached, self.start = s, s["mono_ns"]
            return
        if self.start is None:
            self.start = s["mono_ns"]
        i, t = self.samples, (s["mono_ns"] - self.start) / 1e9
        state = {f"{SERVER_STATE}{name}": value for name, value in s.get("server", {}).items()}
        counters_now = {**s["counters"], **governor_counters(s, self.attached), **state}
        rows = self.counters
        for name, value in counters_now.items():
            delta = value if name in self.gauges or name in state else value - self.prev_counters.get(name, 0)
            rows["interval"].append(i)
            rows["t_s"].append(t)
            rows["name"].append(self.code(name))
            rows["value"].append(clamp(delta))
        rows = self.hists
        for name, slots in s["hists"].items():
            before = self.prev_hists.get(name, [0] * len(slots))
            # a cumulative count read lower than before (a damaged journal) adds nothing
            for slot, (n, b) in enumerate(zip(slots, before)):
                if n > b:
                    rows["interval"].append(i)
                    rows["t_s"].append(t)
                    rows["name"].append(self.code(name))
                    rows["slot"].append(slot)
                    rows["count"].append(n - b)
        self.prev_counters, self.prev_hists, self.samples = counters_now, s["hists"], i + 1

    def tables(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        return self.frame(self.counters), self.frame(self.hists)

    def frame(self, columns: dict[str, array]) -> pd.DataFrame:
        """The rows as a DataFrame of the table's types, its names a category in the order
        of their text (as astype("category") orders them)."""
        import numpy as np
        import pandas as pd
        data = {key: np.frombuffer(column, dtype=column.typecode) if len(column) else np.array([], column.typecode)
                for key, column in columns.items()}
        names = np.array(list(self.names) or [""], dtype=object)
        used = np.unique(data["name"])
        order = np.argsort(names[used].astype(str), kind="stable")
        recode = np.empty(len(names), dtype="int32")
        recode[used[order]] = np.arange(len(used), dtype="int32")
        data["name"] = pd.Categorical.from_codes(recode[data["name"]], categories=names[used[order]].tolist())
        return pd.DataFrame(data)


def clamp(value: int) -> int:
    """A sum or difference of counts into int64: the counts are clamped below 2^63 as they
    are read (shapes.py), their sums may not be."""
    return max(-shapes.INT64_MAX, min(shapes.INT64_MAX, value))
