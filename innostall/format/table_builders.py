"""Each recording table built from the journal's records: by its own code where it derives
columns (a latch's name, a thread's role, times in microseconds), registered in BUILDERS, or
else from the table schema alone (generic_table, tables.py). The counters and histograms are
built as the journal is read (journal.streamed); here only for their empty tables."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from innostall.errors import UserError
from innostall.format import journal as fmt
from innostall.format.tables import MERGED_LINE, LoaderTable, RecordingTable
from innostall.format.work_latches import work_latches_table
from innostall.format.writer_tables import appliers_table, flush_waits_table, redo_writers_table

if TYPE_CHECKING:
    import pandas as pd
    from innostall.format.schema import Schema

Builder = Callable[[list, "Schema"], "pd.DataFrame"]
BUILDERS: dict[str, Builder] = {
    "counters": lambda records, schema: fmt.journal_to_tables(records, schema.gauges)[0],
    "hists": lambda records, schema: fmt.journal_to_tables(records)[1],
    "walks": lambda records, schema: fmt.walks_table(records),
    "block_pages": lambda records, schema: fmt.pages_table(records),
    "wait_stacks": fmt.wait_stacks_table,
    "read_views": lambda records, schema: fmt.read_views_table(records),
    "latches": lambda records, schema: fmt.latches_table(records),
    "latch_timeline": lambda records, schema: fmt.latch_timeline_table(records),
    "latch_stacks": fmt.latch_stacks_table,
    "latch_holders": fmt.holders_table,
    "redo_writers": lambda records, schema: redo_writers_table(records),
    "flush_waits": lambda records, schema: flush_waits_table(records),
    "appliers": lambda records, schema: appliers_table(records),
    "work_latches": work_latches_table,
}
# the journal lines the tables of the recorder's own are built from (the others: their
# loader table's line)
RECORDER_LINES = {"snapshot": ("attached", "interval", "final")}


def table_names(schema: Schema) -> list[str]:
    """The recording's tables besides the counters and histograms, in the schema's order."""
    return [name for name, table in schema.tables.recording.items() if table.source != "snapshot"]


def source_lines(schema: Schema, name: str) -> tuple[str, ...]:
    """The journal lines a table is built from: a table none of whose lines is in the
    journal is empty."""
    source = schema.tables.recording[name].source
    loader = schema.tables.loader.get(source)
    return (loader.line,) if loader else RECORDER_LINES.get(source, (source,))


def build(name: str, records: list[dict], schema: Schema) -> pd.DataFrame:
    """The table of that name from the journal's records."""
    builder = BUILDERS.get(name)
    return builder(records, schema) if builder else generic_table(schema.tables.recording[name], schema, records)


EMPTY: dict[tuple, pd.DataFrame] = {}


def empty(name: str, schema: Schema) -> pd.DataFrame:
    """The table with its columns and types and no rows: built once per table, its columns
    and the wait modes (the only part of a schema a table's types depend on)."""
    key = empty_key(name, schema)
    if key not in EMPTY:
        EMPTY[key] = build(name, [], schema)
    return EMPTY[key].copy()


def empty_key(name: str, schema: Schema) -> tuple:
    """What an empty table's columns and types depend on: its columns and the wait modes."""
    return name, schema.tables.recording[name].columns, tuple(schema.wait_modes)


def generic_table(table: RecordingTable, schema: Schema, records: list[dict]) -> pd.DataFrame:
    """A table whose columns are its loader table's, by name: the whole recording's (the
    last row of each key), or per interval (each key's counts' growth over the interval, as
    the loader prints cumulative rows before each snapshot, which owns them)."""
    import pandas as pd
    source = schema.tables.loader.get(table.source)
    loose = [c for c in table.dtypes if c not in ("interval", "t_s") and c not in [k.name for k in source.columns]] \
        if source else None
    if loose is None or loose:
        raise UserError(f"table {table.name}: no builder of its own, and its columns are not its loader "
                        f"table's ({', '.join(loose) if loose else 'no loader table ' + table.source})")
    # (position in the journal's row, whether it is a wait mode, named by the schema's modes)
    taken = [(source.position(c), source.columns[source.position(c)].kind == "mode")
             for c in table.dtypes if c not in ("interval", "t_s")]

    def cells(row: list) -> list:
        values = [row[p] if p < len(row) else None for p, _ in taken]
        return [fmt.mode_name(schema.wait_modes, v) if mode else v for v, (_, mode) in zip(values, taken)]
    if table.scope == "interval":
        rows = [[interval, t, *cells(row)] for interval, t, row in growth(records, source)]
    else:
        rows = [cells(row) for row in last_rows(records, source)]
    return pd.DataFrame(rows, columns=list(table.dtypes)).astype(table.dtypes)


def last_rows(records: list[dict], source: LoaderTable) -> list[list]:
    """The last row of each key (the journal's reader has merged the latch_tables lines
    into one record: latch_table_rows.py)."""
    last: dict[tuple, list] = {}
    for record in records:
        if record.get("type") == source.line:
            last.update((tuple(row[k] for k in source.keys), row) for row in record.get(source.field, []))
            if source.line == MERGED_LINE:
                last = {tuple(row[k] for k in source.keys): row for row in record.get(source.field, [])}
    return list(last.values())


def growth(records: list[dict], source: LoaderTable):
    """(interval, t_s, row) for each row whose counts grew over the interval, its counts
    the growth: the rows printed just before a snapshot belong to its interval."""
    start = fmt.journal_start(records)
    pending, interval, before = None, 0, {}
    for record in records:
        kind = record.get("type")
        if kind == source.line:
            pending = record
        elif kind in ("interval", "final"):
            t = (record["mono_ns"] - start) / 1e9
            for row in (pending or {}).get(source.field, []):
                key = tuple(row[k] for k in source.keys)
                prev = before.get(key, {})
                grown = list(row)
                for p in source.summed:
                    grown[p] = fmt.clamp(row[p] - prev.get(p, 0))
                if any(grown[p] > 0 for p in source.summed):
                    yield interval, t, grown
                before[key] = {p: row[p] for p in source.summed}
            pending, interval = None, interval + 1
