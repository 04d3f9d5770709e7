"""SQL over many recordings at once, with DuckDB: each table of the recording format is a
view that unions it over every recording given, with two columns in front, `recording` (its
label, else its directory's name) and `host` (the machine it was recorded on); the view
`recordings` has one row per recording. The Parquet files are read where they lie; a
recording cut short (no tables, only its journal) is read through the report's loader.
READY holds the queries people ask most, by name."""
from __future__ import annotations

import os
from dataclasses import dataclass

from typing import TYPE_CHECKING

from innostall.format import files as regular_files, journal as fmt
from innostall.format.writer_tables import (APPLIERS, FLUSH_WAITS, REDO_WRITERS, appliers_table, flush_waits_table,
                                            redo_writers_table)
from innostall.format.work_latches import WORK_LATCHES, work_latches_table
from innostall.errors import UserError

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
# duckdb, pandas and the recording reader are imported where used: the command line reads
# READY for its help, and `innostall record` must not carry them (about 100 MB).

# view name -> (file, the recording attribute the report's loader fills)
TABLES = {"counters": (fmt.COUNTERS, "counters"), "hists": (fmt.HISTS, "hists"),
          "walks": (fmt.WALKS, "walks"), "block_pages": (fmt.PAGES, "pages"),
          "wait_stacks": (fmt.WAIT_STACKS, "wait_stacks"), "read_views": (fmt.READ_VIEWS, "read_views"),
          "latches": (fmt.LATCHES, "latches"), "latch_timeline": (fmt.LATCH_TIMELINE, "latch_timeline"),
          "latch_stacks": (fmt.LATCH_STACKS, "latch_stacks"), "redo_writers": (REDO_WRITERS, "redo_writers"),
          "flush_waits": (FLUSH_WAITS, "flush_waits"), "appliers": (APPLIERS, "appliers"),
          "work_latches": (WORK_LATCHES, "work_latches")}
RECORDING_COLUMNS = ["recording", "host", "path", "family", "version", "pid", "start", "duration_s",
                     "interval_s", "deep_walk_threshold", "format_version", "complete", "end_reason"]


@dataclass(frozen=True)
class Ready:
    help: str
    sql: str
    params: tuple[tuple[str, str | None], ...] = ()  # (name, default; None: NULL)


READY = {
    "history_peak": Ready(
        "per recording: the peak and last history list length (null if it was never read)",
        # the three counters picked before the join: the scan then skips the others' rows
        # (50 recordings of 8 hours, beside a steady load: 10.6 s -> 4.9 s)
        """WITH c AS (SELECT recording, interval, t_s, name, value FROM counters
                      WHERE name IN ('history_reads', 'history_length', 'history_length_peak'))
           SELECT r.recording, r.host,
                  CASE WHEN sum(c.value) FILTER (WHERE c.name = 'history_reads') > 0
                       THEN max(c.value) FILTER (WHERE c.name IN ('history_length', 'history_length_peak'))
                  END AS history_peak,
                  CASE WHEN sum(c.value) FILTER (WHERE c.name = 'history_reads') > 0
                       THEN arg_max(c.value, c.interval) FILTER (WHERE c.name = 'history_length')
                  END AS history_last,
                  -- the first time it was reached: a peak read again later is the same peak
                  arg_max(c.t_s, [c.value, -c.t_s]) FILTER (WHERE c.name IN ('history_length', 'history_length_peak')
                                                             AND c.value > 0) AS peak_at_s
           FROM recordings r LEFT JOIN c USING (recording)
           GROUP BY ALL ORDER BY r.recording"""),
    "top_latches": Ready(
        "the N buffer pages whose latch was waited for longest, over all recordings (N: 10)",
        """SELECT space, page_no, sum(waits)::BIGINT AS waits, round(sum(wait_us) / 1000, 1) AS wait_ms,
                  count(DISTINCT recording) AS recordings,
                  string_agg(DISTINCT recording, ', ' ORDER BY recording) AS in_recordings
           FROM block_pages GROUP BY space, page_no
           ORDER BY sum(wait_us) DESC, space, page_no LIMIT CAST($n AS INTEGER)""",
        (("n", "10"),)),
    "deep_walks": Ready(
        "per recording: version walks deeper than N row versions (N: 100); a recording keeps "
        "only the walks at least its deep_walk_threshold deep",
        """SELECT r.recording, r.host, r.deep_walk_threshold, count(w.depth) AS walks,
                  max(w.depth) AS max_depth, round(sum(w.latency_us) / 1000, 1) AS latency_ms
           FROM recordings r
           LEFT JOIN walks w ON w.recording = r.recording AND w.depth > CAST($depth AS BIGINT)
           GROUP BY ALL ORDER BY r.recording""",
        (("depth", "100"),)),
    "purge_rate": Ready(
        "per recording: purge's undo pages and batches a second before and after a change at AT "
        "(seconds from each recording's start, or a UTC time such as 2026-11-24T03:40:00); "
        "without AT, the whole recording, as the _before columns",
        """WITH change AS (
               SELECT recording, host,
                      coalesce(TRY_CAST($at AS DOUBLE),
                               epoch(TRY_CAST($at AS TIMESTAMP)) - epoch(start),
                               duration_s) AS at_s
               FROM recordings),
           steps AS (
               SELECT recording, interval, any_value(t_s) AS t_s,
                      sum(value) FILTER (WHERE name = 'purge_pages') AS pages,
                      sum(value) FILTER (WHERE name = 'purge_batches') AS batches
               FROM counters WHERE name IN ('purge_pages', 'purge_batches') GROUP BY ALL),
           timed AS (
               SELECT *, t_s - coalesce(lag(t_s) OVER (PARTITION BY recording ORDER BY interval), 0) AS secs
               FROM steps)
           SELECT c.recording, c.host, round(c.at_s, 3) AS change_at_s,
                  round(sum(t.secs) FILTER (WHERE t.t_s <= c.at_s), 3) AS seconds_before,
                  round(sum(t.pages) FILTER (WHERE t.t_s <= c.at_s)
                        / sum(t.secs) FILTER (WHERE t.t_s <= c.at_s), 1) AS pages_per_s_before,
                  round(sum(t.batches) FILTER (WHERE t.t_s <= c.at_s)
                        / sum(t.secs) FILTER (WHERE t.t_s <= c.at_s), 1) AS batches_per_s_before,
                  round(sum(t.secs) FILTER (WHERE t.t_s > c.at_s), 3) AS seconds_after,
                  round(sum(t.pages) FILTER (WHERE t.t_s > c.at_s)
                        / sum(t.secs) FILTER (WHERE t.t_s > c.at_s), 1) AS pages_per_s_after,
                  round(sum(t.batches) FILTER (WHERE t.t_s > c.at_s)
                        / sum(t.secs) FILTER (WHERE t.t_s > c.at_s), 1) AS batches_per_s_after
           FROM change c LEFT JOIN timed t USING (recording)
           GROUP BY ALL ORDER BY c.recording""",
        (("at", None),)),
}


def quoted(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def labels(paths: list[str], metas: list[dict]) -> list[str]:
    """Each recording's name in the `recording` column: its meta.json label, else its
    directory's name, else (two of the same name) the path as given."""
    names = [m.get("label") or os.path.basename(os.path.normpath(p)) for p, m in zip(paths, metas)]
    return [n if names.count(n) == 1 else os.path.normpath(p) for n, p in zip(names, paths)]


def recording_row(label: str, path: str, meta: dict, duration_s: float) -> dict:
    import pandas as pd
    target = meta.get("target", {})
    start = meta.get("start_real_ns")
    return {"recording": label, "host": meta.get("host"), "path": os.path.abspath(path),
            "family": target.get("family"), "version": target.get("version"), "pid": target.get("pid"),
            "start": pd.to_datetime(start, unit="ns") if start else pd.NaT,
            "duration_s": duration_s, "interval_s": meta.get("interval_s"),
            "deep_walk_threshold": meta.get("settings", {}).get("deep_walk_threshold"),
            "format_version": meta.get("version"), "complete": bool(meta.get("complete")),
            "end_reason": meta.get("end_reason")}


def connect(paths: list[str]) -> duckdb.DuckDBPyConnection:
    """An in-memory database with the views over these recordings."""
    import duckdb
    import pandas as pd
    from . import recording
    if not paths:
        raise UserError("query: no recording given")
    con = duckdb.connect()
    parts: dict[str, list[str]] = {name: [] for name in TABLES}
    rows, metas = [], [recording.read_meta(p)[0] for p in paths]
    for i, (path, label, meta) in enumerate(zip(paths, labels(paths, metas), metas)):
        front = f"SELECT {quoted(label)} AS recording, {quoted(meta.get('host') or 'unknown')} AS host, *"
        files = {name: os.path.join(path, file) for name, (file, _) in TABLES.items()}
        if meta.get("complete") and parquet_readable(path):
            for name, file in files.items():
                if regular_files.state(file) is None:
                    parts[name].append(f"{front} FROM read_parquet({quoted(file)})")
            duration = con.execute(f"SELECT coalesce(max(t_s), 0) FROM read_parquet({quoted(files['counters'])})").fetchall()[0][0]
        else:  # cut short: its tables rebuilt from the journal, as the report reads it
            rec = recording.load(path)
            for name, (_, attribute) in TABLES.items():
                con.register(f"_{name}_{i}", getattr(rec, attribute))
                parts[name].append(f"{front} FROM _{name}_{i}")
            duration = rec.duration_s
        rows.append(recording_row(label, path, meta, duration))
    table = pd.DataFrame(rows, columns=RECORDING_COLUMNS).astype(
        {"pid": "Int64", "deep_walk_threshold": "Int64", "format_version": "Int64"})
    con.register("_recordings", table)
    con.execute("CREATE VIEW recordings AS SELECT * FROM _recordings")
    for name, selects in parts.items():
        con.execute(f"CREATE VIEW {name} AS " + (" UNION ALL BY NAME ".join(selects) if selects
                                                 else empty_view(name)))
    return con


def parquet_readable(path: str) -> bool:
    """Whether DuckDB may read the recording's Parquet tables where they lie: each one there
    a regular file (not a link out of the recording, a FIFO, a device) whose footer claims
    a size within the reader's limits (analysis/bounds.py). If not, the report's loader
    reads the recording: from its journal, or refused in one line."""
    from .bounds import DamagedTable, check_parquet
    if regular_files.state(os.path.join(path, fmt.COUNTERS)) == "missing":
        return False
    try:
        for file, _ in TABLES.values():
            if regular_files.state(os.path.join(path, file)) != "missing":
                check_parquet(path, file)
    except DamagedTable:
        return False
    return True


def empty_table(name: str) -> pd.DataFrame:
    """A table of the format with its columns and types, and no rows."""
    from innostall.format.schema import format_1
    return {"counters": lambda: fmt.journal_to_tables([])[0], "hists": lambda: fmt.journal_to_tables([])[1],
             "walks": lambda: fmt.walks_table([]), "block_pages": lambda: fmt.pages_table([]),
             "wait_stacks": lambda: fmt.wait_stacks_table([], format_1()),
             "read_views": lambda: fmt.read_views_table([]), "latches": lambda: fmt.latches_table([]),
             "latch_timeline": lambda: fmt.latch_timeline_table([]),
             "latch_stacks": lambda: fmt.latch_stacks_table([], format_1()),
             "redo_writers": lambda: redo_writers_table([]), "flush_waits": lambda: flush_waits_table([]),
             "appliers": lambda: appliers_table([]),
             "work_latches": lambda: work_latches_table([], format_1())}[name]()


def empty_view(name: str) -> str:
    """A table no recording has: its columns, no rows, so a query naming it still runs."""
    empty = empty_table(name)
    columns = ", ".join(f"NULL::VARCHAR AS {c}" if str(t) in ("category", "string", "object")
                        else f"NULL::{duck_type(t)} AS {c}" for c, t in empty.dtypes.items())
    return f"SELECT NULL::VARCHAR AS recording, NULL::VARCHAR AS host, {columns} WHERE false"


def duck_type(dtype) -> str:
    text = str(dtype).lower()
    return {"int8": "TINYINT", "int32": "INTEGER", "int64": "BIGINT", "float64": "DOUBLE",
            "bool": "BOOLEAN", "boolean": "BOOLEAN"}.get(text, "VARCHAR")


def ready_sql(name: str, args: list[str]) -> tuple[str, dict]:
    """The SQL of a ready query and its parameters from the arguments given after its name."""
    if name not in READY:
        raise UserError(f"query: no ready query {name!r} (there are: {', '.join(READY)})")
    ready = READY[name]
    if len(args) > len(ready.params):
        raise UserError(f"query: {name} takes at most {len(ready.params)} argument(s), got {len(args)}")
    values = {p: (args[i] if i < len(args) else default) for i, (p, default) in enumerate(ready.params)}
    for p, value in values.items():
        if p in ("n", "depth") and not str(value).isdigit():
            raise UserError(f"query: {name}: {p} must be a whole number, not {value!r}")
    return ready.sql, values


def run(paths: list[str], sql: str, params: dict | None = None) -> pd.DataFrame:
    import duckdb
    try:
        con = connect(paths)
    except duckdb.Error as e:  # a damaged table
        raise UserError(f"query: cannot read the recordings: {str(e).splitlines()[0]}")
    try:
        return con.execute(sql, params or {}).df()
    except duckdb.Error as e:
        raise UserError(f"query failed: {str(e).splitlines()[0]}")
    finally:
        con.close()


def render(frame: pd.DataFrame, form: str) -> str:
    import pandas as pd
    if form == "csv":
        return frame.to_csv(index=False)
    if form == "json":
        return frame.to_json(orient="records", date_format="iso", indent=2) + "\n"
    if frame.empty:
        return "(no rows: " + ", ".join(frame.columns) + ")\n"
    with pd.option_context("display.max_rows", None, "display.max_columns", None,
                           "display.width", 250, "display.max_colwidth", 80):
        return frame.to_string(index=False) + "\n"
