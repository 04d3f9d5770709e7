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

from innostall.format import files as regular_files, journal as fmt, table_builders
from innostall.errors import UserError

if TYPE_CHECKING:
    import duckdb
    import pandas as pd
    from innostall.format.schema import Schema
# duckdb, pandas and the recording reader are imported where used: the command line reads
# READY for its help, and `innostall record` must not carry them (about 100 MB).

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


def schema_at(meta: dict, path: str) -> Schema:
    try:
        return fmt.schema_of(meta)
    except UserError as e:
        raise UserError(f"{path}: {e}")


def connect(paths: list[str]) -> duckdb.DuckDBPyConnection:
    """An in-memory database with the views over these recordings: one per table of their
    schemas (innostall/format/tables.py), each recording's rows in it."""
    import duckdb
    import pandas as pd
    from . import recording
    if not paths:
        raise UserError("query: no recording given")
    con = duckdb.connect()
    rows, metas = [], [recording.read_meta(p)[0] for p in paths]
    schemas = [schema_at(meta, path) for meta, path in zip(metas, paths)]
    views = {name: schema for schema in [format_4_schema(), *schemas] for name in schema.tables.recording}
    parts: dict[str, list[str]] = {name: [] for name in views}
    for i, (path, label, meta, schema) in enumerate(zip(paths, labels(paths, metas), metas, schemas)):
        front = f"SELECT {quoted(label)} AS recording, {quoted(meta.get('host') or 'unknown')} AS host, *"
        files = {name: os.path.join(path, table.file) for name, table in schema.tables.recording.items()}
        if meta.get("complete") and parquet_readable(path, schema):
            for name, file in files.items():
                if regular_files.state(file) is None:
                    parts[name].append(f"{front} FROM read_parquet({quoted(file)})")
            duration = con.execute(f"SELECT coalesce(max(t_s), 0) FROM read_parquet({quoted(files['counters'])})").fetchall()[0][0]
        else:  # cut short: its tables rebuilt from the journal, as the report reads it
            rec = recording.load(path)
            for name in schema.tables.recording:
                con.register(f"_{name}_{i}", getattr(rec, name))
                parts[name].append(f"{front} FROM _{name}_{i}")
            duration = rec.duration_s
        rows.append(recording_row(label, path, meta, duration))
    table = pd.DataFrame(rows, columns=RECORDING_COLUMNS).astype(
        {"pid": "Int64", "deep_walk_threshold": "Int64", "format_version": "Int64"})
    con.register("_recordings", table)
    con.execute("CREATE VIEW recordings AS SELECT * FROM _recordings")
    for name, selects in parts.items():
        con.execute(f"CREATE VIEW {name} AS " + (" UNION ALL BY NAME ".join(selects) if selects
                                                 else empty_view(name, views[name])))
    return con


def parquet_readable(path: str, schema: Schema) -> bool:
    """Whether DuckDB may read the recording's Parquet tables where they lie: each one there
    a regular file (not a link out of the recording, a FIFO, a device) whose footer claims
    a size within the reader's limits (innostall/format/table_bounds.py). If not, the report's loader
    reads the recording: from its journal, or refused in one line."""
    from innostall.format.table_bounds import DamagedTable, check_parquet
    if regular_files.state(os.path.join(path, fmt.COUNTERS)) == "missing":
        return False
    try:
        for file in [table.file for table in schema.tables.recording.values()]:
            if regular_files.state(os.path.join(path, file)) != "missing":
                check_parquet(path, file)
    except DamagedTable:
        return False
    return True


def view_names() -> list[str]:
    """The views of the tables every recording has (more where a recording's schema has more)."""
    from innostall.format.tables import format_4
    return list(format_4().recording)


def format_4_schema() -> Schema:
    """The views every query has, whatever its recordings: the tables of format 4."""
    from innostall.format.schema import format_1
    return format_1()


def empty_view(name: str, schema: Schema) -> str:
    """A table no recording has: its columns, no rows, so a query naming it still runs."""
    empty = table_builders.empty(name, schema)
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
