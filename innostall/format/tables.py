"""The recording's tables as the loader describes them: one definition, the X-macros of
probes/innostall_tables.h, printed by `innostall-loader --schema` and kept in each
recording's meta.json (schema.py), read here. Everything per table derives from it:

    loader tables     the rows the loader prints in its journal lines: each line's shape
                      (shapes.py), the columns that key a row (latch_table_rows.py), the
                      stacks the recorder folds and the counts it sums (folded_tables.py)
    recording tables  the Parquet files: name, file, scope (per interval, per event, the
                      whole recording), columns and types, the empty table, the query views
                      (analysis/query.py) and the frames (load_frames, analysis/__init__.py)

A recording table whose columns are its loader table's (with interval and t_s when per
interval) is built here from the schema alone (generic_table); the others are built by
their own code, registered in BUILDERS (table_builders.py). Recordings written before
meta.json kept the tables are read with tables-v4.json, the description of the loader that
wrote them (frozen data, never edited)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources

from innostall.errors import UserError
from innostall.format import shapes
from innostall.format.shapes import Fault, Reading, fields, list_of, text

SCOPES = ("interval", "event", "recording")
# How each kind of loader column reads once the recorder has written it (a stack folded, the
# row id dropped, a named column appended): innostall_tables.h lists the kinds.
KIND_SPECS = {"count": shapes.count, "identity": shapes.identity, "tid": shapes.TID, "code": shapes.small(256),
              "mode": shapes.MODE, "text": text, "stack": text, "named": text,
              "slots": list_of(shapes.count, shapes.MAX_HIST_SLOTS)}
LOADER_KINDS = (*KIND_SPECS, "row_id")
# The pandas type of a recording column's type ("time": seconds from the attach)
TYPES = {"time": "float64", "string": "string", "int8": "int8", "int32": "int32", "int64": "int64",
         "Int64": "Int64", "float64": "float64", "bool": "bool", "category": "category"}
ROLES = ("key", "value", "added")
MOST = 256  # tables, or columns of one: the format has 14 tables of at most 13 columns
COLUMNS = list_of(fields({"name": text, "role": text}, {"kind": text, "type": text}), MOST)
SHAPE = fields({"tables": list_of(fields({"name": text, "line": text, "field": text, "scope": text,
                                          "columns": COLUMNS}), MOST),
                "recording_tables": list_of(fields({"name": text, "from": text, "scope": text,
                                                    "columns": COLUMNS}), MOST)})
NAME_CHARACTERS = set("abcdefghijklmnopqrstuvwxyz0123456789_")


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # a loader column's kind, or a recording column's type
    role: str

    @property
    def key(self) -> bool:
        return self.role == "key"


@dataclass(frozen=True)
class LoaderTable:
    """A table the loader prints: under `field` in lines of type `line`."""
    name: str
    line: str
    field: str
    scope: str
    printed: tuple[Column, ...]  # as the loader prints a row, in order

    @cached_property
    def columns(self) -> tuple[Column, ...]:
        """A row as the journal keeps it: the row id dropped (the loader prints it last),
        the recorder's named columns appended."""
        return tuple(c for c in self.printed if c.kind != "row_id")

    def position(self, name: str) -> int:
        return [c.name for c in self.columns].index(name)

    @cached_property
    def keys(self) -> tuple[int, ...]:
        """The positions of the columns that tell a row from the others of its table."""
        return tuple(i for i, c in enumerate(self.columns) if c.key)

    @cached_property
    def stack(self) -> int | None:
        return next((i for i, c in enumerate(self.columns) if c.kind == "stack"), None)

    @cached_property
    def row_id(self) -> int | None:
        return next((i for i, c in enumerate(self.printed) if c.kind == "row_id"), None)

    @cached_property
    def summed(self) -> tuple[int, ...]:
        """The counts summed over the kernel rows whose key stacks fold alike."""
        return tuple(i for i, c in enumerate(self.columns) if c.role == "value" and c.kind == "count")

    def row_shape(self):
        added = sum(c.role == "added" for c in self.columns)
        return shapes.row(*(KIND_SPECS[c.kind] for c in self.columns), optional=added)


@dataclass(frozen=True)
class RecordingTable:
    """A table of the recording, NAME.parquet, built from `source`: a loader table, or a
    journal line the recorder writes (snapshot, deep_walk, read_views)."""
    name: str
    source: str
    scope: str
    columns: tuple[Column, ...]

    @property
    def file(self) -> str:
        return f"{self.name}.parquet"

    @cached_property
    def dtypes(self) -> dict[str, str]:
        return {c.name: TYPES[c.kind] for c in self.columns}

    @cached_property
    def keys(self) -> list[str]:
        return [c.name for c in self.columns if c.key]

    @cached_property
    def times(self) -> list[str]:
        """Columns of seconds from the attach (a window of the recording moves them)."""
        return [c.name for c in self.columns if c.kind == "time"]

    @property
    def whole(self) -> bool:
        """Kept for the whole recording only (a window leaves it whole)."""
        return self.scope == "recording"


@dataclass(frozen=True)
class Tables:
    loader: dict[str, LoaderTable]
    recording: dict[str, RecordingTable]

    @classmethod
    def parse(cls, raw: object) -> Tables:
        """The tables of a schema; one of the wrong shape is refused in one line."""
        try:
            shape_of(raw)
        except Fault as e:
            raise UserError(f"damaged table schema ({e})")
        loader = {t["name"]: LoaderTable(t["name"], t["line"], t["field"], t["scope"],
                                         tuple(Column(c["name"], c.get("kind", ""), c["role"]) for c in t["columns"]))
                  for t in raw["tables"]}
        recording = {t["name"]: RecordingTable(t["name"], t["from"], t["scope"],
                                               tuple(Column(c["name"], c.get("type", ""), c["role"])
                                                     for c in t["columns"]))
                     for t in raw["recording_tables"]}
        return cls(loader, recording)

    def of_line(self, line: str) -> list[LoaderTable]:
        return [t for t in self.loader.values() if t.line == line]

    @cached_property
    def line_shapes(self) -> dict[str, object]:
        """Each table line's shape: a line of the whole recording's tables may lack one (a
        line from before it was added); a line per interval holds its tables."""
        shapes_of = {}
        for line in dict.fromkeys(t.line for t in self.loader.values()):
            tables = {t.field: list_of(t.row_shape(), shapes.MAX_ROWS) for t in self.of_line(line)}
            if all(t.scope == "recording" for t in self.of_line(line)):
                # "changed": only the rows changed since the line before (latch_table_rows.py)
                shapes_of[line] = fields({}, {"rows": text, **tables})
            else:
                shapes_of[line] = fields(tables)
        return shapes_of

    @cached_property
    def merged_keys(self) -> dict[str, tuple[int, ...]]:
        """field -> key positions of the tables of the latch_tables line, whose rows the
        reader merges (latch_table_rows.py)."""
        return {t.field: t.keys for t in self.of_line(MERGED_LINE)}


MERGED_LINE = "latch_tables"  # the line of the whole recording's tables, merged by key


def shape_of(raw: object) -> None:
    """Fault unless raw is a table schema whose names, kinds, types, roles and scopes are
    ones this reader knows."""
    SHAPE(raw, "tables", Reading())
    for table in raw["tables"] + raw["recording_tables"]:
        if not set(table["name"]) <= NAME_CHARACTERS or not table["name"]:
            raise Fault(f"table {table['name'][:40]!r} is not a name")
        if table["scope"] not in SCOPES:
            raise Fault(f"table {table['name']}: unknown scope {table['scope'][:40]!r}")
        for column in table["columns"]:
            known = LOADER_KINDS if "line" in table else TYPES
            what = column.get("kind") if "line" in table else column.get("type")
            if what not in known or column["role"] not in ROLES or not set(column["name"]) <= NAME_CHARACTERS:
                raise Fault(f"table {table['name']}: column {column['name'][:40]!r} of unknown kind, type or role")


def tables_of(raw_schema: dict) -> Tables:
    """The tables of a measurement schema as meta.json keeps it; one from before the
    schema held them, the tables of format 4."""
    if "tables" not in raw_schema:
        return format_4()
    return Tables.parse({"tables": raw_schema["tables"], "recording_tables": raw_schema.get("recording_tables")})


def dtypes(name: str, tables: Tables | None = None) -> dict[str, str]:
    """A recording table's columns and pandas types: its builder's (the tables of format 4,
    which test_table_schema holds equal to the loader's, when not given)."""
    return dict((tables or format_4()).recording[name].dtypes)


@cache
def format_4() -> Tables:
    """The tables of recordings written before meta.json kept them."""
    return Tables.parse(json.loads(resources.files("innostall.format").joinpath("tables-v4.json").read_text()))
