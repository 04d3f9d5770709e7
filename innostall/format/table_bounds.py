"""A recording's tables read within stated limits, as data that may come from anywhere.

A Parquet table is read only as a regular file inside the recording (innostall/format/
files.py), only if its footer claims a size within the limits (a small file can claim a
billion rows: Parquet's encodings compress a constant to almost nothing), and only if its
columns cast to the format's types and hold values in range; else it is damaged (the
loader then rebuilds the tables from the journal, or says so in one line).

Then every table, from Parquet or rebuilt from the journal, is bounded: texts cut and made
safe to show (innostall/format/safe_text.py), stacks cut to a number of frames, and at most
so many counters, histograms and distinct stacks kept, each cut said in a note.
"""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow
import pyarrow.parquet as pq

from innostall.errors import UserError
from innostall.format import files, journal as fmt
from innostall.format.safe_text import MAX_TEXT_CHARS, UNSAFE, safe_text

# The counters of a journal at its limit (journal_lines.MAX_JOURNAL_BYTES: ~500,000
# snapshots) hold ~200 names each: 100 million rows, ~2 GB in memory. A footer claiming
# more, or more bytes once decompressed, is not one of ours.
MAX_TABLE_ROWS = 100_000_000
MAX_TABLE_BYTES = 4 * 2**30
MAX_COLUMNS = 64  # a table of the format 4 has at most 13
# The loader keeps 64 user frames of a stack and splices in 32 unwound through libc; a
# demangled C++ frame runs to a few hundred characters, a template-heavy one to ~2000.
MAX_FRAMES = 256
MAX_FRAME_CHARS = 4096
# Distinct stacks kept per table, the heaviest: four times the kernel's stack map (16384).
MAX_STACKS = 65536
# Names kept (the schema's first, then as met): the loader has ~60 counters, plus a
# hits.PROBE per probe and the governor's accounts per group (~170 in all), and ~10
# histograms. Every one is a row and a chart in the views.
MAX_COUNTER_NAMES = 4096
MAX_HIST_NAMES = 1024
MAX_SLOT = 64  # log2 buckets of a 64-bit value
# the column a table's stacks are ranked by where it has one (else by rows)
STACK_WEIGHT = "wait_us"


# the texts that may be null: the walked table and index (null where not recognised), the
# SQL user and statement (null without SQL)
MAY_BE_NULL = fmt.LATER_COLUMNS | {"user", "statement"}
# counts and times, and the intervals and slots that index them, are never negative (the
# counters' values may be: a gauge's, or a counter read lower than before)
NOT_NEGATIVE = ("interval", "slot", "count", "waits", "wait_us", "max_us", "p99_us", "depth", "latency_us")
# strings as the format's "string" columns, not cast one by one after
ARROW_STRINGS = {pyarrow.string(): pd.StringDtype(), pyarrow.large_string(): pd.StringDtype()}


class DamagedTable(UserError):
    pass


def read_table(path: str, name: str, empty: pd.DataFrame) -> pd.DataFrame:
    """A Parquet table of the recording at path as the format types it (the columns and
    dtypes of empty); DamagedTable, in one line, if it cannot be."""
    where = os.path.join(path, name)
    try:
        with files.open_regular(where) as f:
            parquet = pq.ParquetFile(f)
            claimed(parquet.metadata, name)
            arrow = parquet.read().replace_schema_metadata(None)
            arrow.validate(full=True)  # strings UTF-8 (pandas' string columns decode them lazily)
            # the pandas metadata in the file is not trusted: the columns are typed below
            table = arrow.to_pandas(ignore_metadata=True, types_mapper=ARROW_STRINGS.get)
    except FileNotFoundError:
        raise DamagedTable(f"{where}: missing")
    except files.NotRegular as e:
        raise DamagedTable(str(e))
    except (OSError, pyarrow.ArrowException, ValueError, TypeError, OverflowError, NotImplementedError) as e:
        raise DamagedTable(f"{where}: damaged table ({e.__class__.__name__}: {first_line(e)})")
    return typed(table, empty, where)


def check_parquet(path: str, name: str) -> None:
    """That a Parquet table of the recording at path is a regular file whose footer claims
    a size within the limits, for a reader that opens it by name (DuckDB); DamagedTable if
    not. (A file swapped between this and that open is not caught: that takes someone
    writing in the recording while it is read.)"""
    where = os.path.join(path, name)
    try:
        with files.open_regular(where) as f:
            claimed(pq.ParquetFile(f).metadata, name)
    except files.NotRegular as e:
        raise DamagedTable(str(e))
    except (OSError, pyarrow.ArrowException, ValueError) as e:
        raise DamagedTable(f"{where}: damaged table ({e.__class__.__name__}: {first_line(e)})")


def first_line(error: Exception) -> str:
    return safe_text((str(error).splitlines() or [""])[0], 200)


def claimed(metadata, name: str) -> None:
    """What the footer says the table holds, within the limits."""
    unpacked = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    if metadata.num_rows > MAX_TABLE_ROWS or metadata.num_columns > MAX_COLUMNS or unpacked > MAX_TABLE_BYTES:
        raise ValueError(f"{name} claims {metadata.num_rows:,} rows of {metadata.num_columns} columns, "
                         f"{unpacked:,} bytes: more than the reader takes ({MAX_TABLE_ROWS:,} rows, "
                         f"{MAX_COLUMNS} columns, {MAX_TABLE_BYTES >> 30} GiB)")


def typed(table: pd.DataFrame, empty: pd.DataFrame, where: str) -> pd.DataFrame:
    # an older recording: added in the schema's order (a set's order changes run to run)
    for later in [c for c in empty.columns if c in fmt.LATER_COLUMNS and c not in table.columns]:
        table[later] = pd.Series(pd.NA, index=table.index, dtype="string")
    missing = [c for c in empty.columns if c not in table.columns]
    if missing:
        raise DamagedTable(f"{where}: damaged table (it lacks the column(s) {', '.join(missing)})")
    # a category's own categories are kept (a wait mode the schema does not name)
    types = {c: "category" if isinstance(t, pd.CategoricalDtype) else str(t) for c, t in empty.dtypes.items()}
    # each column taken out once (a DataFrame's [] costs as much as the checks on a small table)
    columns = {c: table[c] for c in types}
    unfit = [c for c, t in types.items() if not fits(columns[c], t)]
    if unfit:
        raise DamagedTable(f"{where}: damaged table (values of the wrong type or out of range in {', '.join(unfit)})")
    try:
        casts = {c: t for c, t in types.items() if columns[c].dtype != t}
        if list(table.columns) != list(empty.columns):  # (a copy of the same columns costs a ms a table)
            table = table[list(empty.columns)]
        if casts:  # (astype casts, and copies, every column even given none: 2 ms a table, 14 a recording)
            table = table.astype(casts)
            columns.update((c, table[c]) for c in casts)
    except (ValueError, TypeError, OverflowError, pyarrow.ArrowException) as e:
        raise DamagedTable(f"{where}: damaged table (a column of the wrong type: {first_line(e)})")
    # the writer's floats are times and sums of times: never NaN or infinite; its texts are
    # never null but where a name may be unknown
    out_of_range = [c for c, t in types.items() if t == "float64" and not np.isfinite(columns[c].to_numpy()).all()]
    out_of_range += [c for c, t in types.items() if t != "Int64" and c not in MAY_BE_NULL and columns[c].isna().any()]
    out_of_range += [c for c in NOT_NEGATIVE if c in columns and (columns[c] < 0).any()]
    out_of_range += [c for c in ("slot",) if c in columns and (columns[c] >= MAX_SLOT).any()]
    if {"interval", "t_s"} <= set(table.columns) and not one_time_per_interval(table):
        out_of_range.append("interval and t_s (an interval at two times, or two at one)")
    if out_of_range:
        raise DamagedTable(f"{where}: damaged table (values out of range in {', '.join(out_of_range)})")
    return table


def fits(values: pd.Series, dtype: str) -> bool:
    """Whether a column casts to its type as it is meant: texts from texts (a cast would
    make "b'..'" of bytes), integers without wrapping or rounding (a cast would do either
    silently); the rest is left to the cast."""
    if dtype in ("string", "category"):
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = values.cat.categories.to_series()
        return isinstance(values.dtype, pd.StringDtype) or (pd.api.types.is_string_dtype(values.dtype) and all(
            isinstance(v, str) for v in values.dropna().unique()))
    if dtype not in ("int8", "int32", "int64", "Int64") or str(values.dtype) in (dtype, "bool") \
            or not pd.api.types.is_numeric_dtype(values.dtype):
        return True
    numbers = values.dropna().to_numpy()
    if not len(numbers):
        return True
    limits = np.iinfo(dtype.lower())
    if numbers.dtype.kind == "f" and not (np.isfinite(numbers).all() and (numbers == np.floor(numbers)).all()):
        return False
    return bool(numbers.min() >= limits.min and numbers.max() < limits.max + 1)


def one_time_per_interval(table: pd.DataFrame) -> bool:
    """Each interval at one time, later intervals at later times, as the views expect."""
    order = np.argsort(table["interval"].to_numpy(), kind="stable")
    intervals, times = table["interval"].to_numpy()[order], table["t_s"].to_numpy()[order]
    same = intervals[1:] == intervals[:-1]
    return bool((times[1:] == times[:-1])[same].all() and (times[1:] > times[:-1])[~same].all())


def safe_stack(folded: str) -> str:
    """A folded stack cut to MAX_FRAMES frames (its root and leaf ends kept, the middle said)
    of MAX_FRAME_CHARS characters, each safe to show."""
    frames = folded.split(";")
    if len(frames) > MAX_FRAMES:
        half = MAX_FRAMES // 2
        frames = frames[:half] + [f"[{len(frames) - 2 * half} frames cut]"] + frames[-half:]
    return ";".join(safe_text(f, MAX_FRAME_CHARS) for f in frames)


def unsafe_stack(folded: str) -> bool:
    return (folded.count(";") >= MAX_FRAMES or UNSAFE.search(folded) is not None
            or (len(folded) > MAX_FRAME_CHARS and max(map(len, folded.split(";"))) > MAX_FRAME_CHARS))


def unsafe_text(text: str) -> bool:
    return len(text) > MAX_TEXT_CHARS or UNSAFE.search(text) is not None


def bounded_texts(table: pd.DataFrame) -> int:
    """Make the table's texts safe in place (each distinct one checked once: a stack is in
    many rows); how many were cut."""
    cut = 0
    for column in table.columns:
        values = table[column]
        categorical = isinstance(values.dtype, pd.CategoricalDtype)
        if not (categorical or pd.api.types.is_string_dtype(values.dtype)):
            continue
        distinct = values.cat.categories if categorical else values.unique()
        fix, cut_one = (unsafe_stack, safe_stack) if column == "stack" else (unsafe_text, safe_text)
        fixed = {v: cut_one(v) for v in distinct if isinstance(v, str) and fix(v)}
        if not fixed:
            continue
        cut += sum(len(new) < len(old) for old, new in fixed.items())  # (a character replaced is one)
        renamed = values.astype(object).map(lambda v: fixed.get(v, v))
        table[column] = renamed.astype("category" if categorical else values.dtype)
    return cut


def kept_names(table: pd.DataFrame, known: list[str], most: int) -> tuple[pd.DataFrame, int]:
    """At most `most` names of a counters or hists table: the schema's, then in the order
    met; (the table, how many names were left out)."""
    names = table["name"]
    if (len(names.cat.categories) if isinstance(names.dtype, pd.CategoricalDtype) else names.nunique()) <= most:
        return table, 0
    names = pd.unique(names.astype(str))
    if len(names) <= most:
        return table, 0
    met, schema_names = set(names), set(known)
    ordered = [n for n in known if n in met] + [n for n in names if n not in schema_names]
    keep = set(ordered[:most])
    return table[table["name"].astype(str).isin(keep)].reset_index(drop=True), len(names) - most


def heaviest_stacks(table: pd.DataFrame, weight: str | None) -> tuple[pd.DataFrame, int]:
    """The rows of the MAX_STACKS heaviest distinct stacks; (the table, how many left out)."""
    if table["stack"].nunique() <= MAX_STACKS:
        return table, 0
    stacks = table["stack"].astype(str)
    weights = (table[weight].astype("float64") if weight else pd.Series(1.0, index=table.index))
    totals = weights.groupby(stacks.to_numpy()).sum()
    if len(totals) <= MAX_STACKS:
        return table, 0
    keep = set(totals.nlargest(MAX_STACKS).index)
    return table[stacks.isin(keep)].reset_index(drop=True), len(totals) - MAX_STACKS


def bound(counters: pd.DataFrame, hists: pd.DataFrame, tables: dict,
          schema) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The tables within the limits; tables (the optional ones) bounded in place; notes."""
    notes = []
    counters, extra_counters = kept_names(counters, list(schema.counters), MAX_COUNTER_NAMES)
    hists, extra_hists = kept_names(hists, list(schema.hists), MAX_HIST_NAMES)
    for what, extra, most in (("counters", extra_counters, MAX_COUNTER_NAMES),
                              ("histograms", extra_hists, MAX_HIST_NAMES)):
        if extra:
            notes.append(f"{extra:,} {what} left out: the reader keeps {most:,}")
    for name in [n for n in tables if "stack" in tables[n].columns]:  # the schema's tables with a stack
        if len(tables[name]):
            weight = STACK_WEIGHT if STACK_WEIGHT in tables[name].columns else None
            tables[name], extra = heaviest_stacks(tables[name], weight)
            if extra:
                notes.append(f"{name}: the {extra:,} lightest stacks left out: the reader keeps "
                             f"the {MAX_STACKS:,} heaviest")
    cut = sum(bounded_texts(t) for t in [counters, hists, *tables.values()])
    if cut:
        notes.append(f"{cut:,} names or stacks cut to the reader's limits ({MAX_FRAMES} frames of "
                     f"{MAX_FRAME_CHARS} characters a stack, {MAX_TEXT_CHARS} characters a name)")
    return counters, hists, notes
