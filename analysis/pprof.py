"""Stack profiles in pprof's format (profile.proto, gzipped), which `go tool pprof`, Grafana
Pyroscope and other pprof readers open: one profile per family of flame graphs (the deep
version walks, the latch waits), each with one typed value per graph of the family.

The encoder is ours and writes only the messages a stack profile needs: Profile, ValueType,
Sample, Label, Location, Line, Function and Mapping, with three protobuf wire types (varint,
length-delimited, packed varints). No package on PyPI writes pprof profiles, and the
`protobuf` runtime would need a protoc step at build time and generated code for these few
fields, whose numbers profile.proto has kept since 2016.
"""
from __future__ import annotations

import gzip
import time
from dataclasses import dataclass, field

import pandas as pd

from .flamegraph import FLAME_GRAPHS, NO_STACK, FlameGraph

# Field numbers of profile.proto (github.com/google/pprof, proto/profile.proto)
PROFILE_SAMPLE_TYPE, PROFILE_SAMPLE, PROFILE_MAPPING, PROFILE_LOCATION = 1, 2, 3, 4
PROFILE_FUNCTION, PROFILE_STRING_TABLE, PROFILE_TIME_NANOS, PROFILE_DURATION_NANOS = 5, 6, 9, 10
PROFILE_COMMENT, PROFILE_DEFAULT_SAMPLE_TYPE = 13, 14
VALUE_TYPE_TYPE, VALUE_TYPE_UNIT = 1, 2
SAMPLE_LOCATION_ID, SAMPLE_VALUE, SAMPLE_LABEL = 1, 2, 3
LABEL_KEY, LABEL_STR = 1, 2
MAPPING_ID, MAPPING_FILENAME, MAPPING_BUILD_ID, MAPPING_HAS_FUNCTIONS = 1, 5, 6, 7
LOCATION_ID, LOCATION_MAPPING_ID, LOCATION_LINE = 1, 2, 4
LINE_FUNCTION_ID = 1
FUNCTION_ID, FUNCTION_NAME, FUNCTION_SYSTEM_NAME = 1, 2, 3
VARINT, LENGTH_DELIMITED = 0, 2


# --- protobuf wire format ------------------------------------------------------------------

def varint(value: int) -> bytes:
    """Base-128, least significant group first; negative int64 as its two's complement."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def int_field(number: int, value: int) -> bytes:
    """A scalar varint field; proto3 leaves zero out."""
    return key(number, VARINT) + varint(value) if value else b""


def bytes_field(number: int, payload: bytes) -> bytes:
    return key(number, LENGTH_DELIMITED) + varint(len(payload)) + payload


def packed_field(number: int, values: list[int]) -> bytes:
    return bytes_field(number, b"".join(varint(v) for v in values)) if values else b""


# --- the profile ---------------------------------------------------------------------------

@dataclass(frozen=True)
class SampleType:
    """One value of each sample, as pprof names it: type/unit (e.g. wait_time/nanoseconds),
    and the factor from the table's column to that unit."""
    graph: FlameGraph
    type: str
    unit: str
    scale: float = 1.0


def sample_type(graph: FlameGraph) -> SampleType:
    """pprof's type and unit for a flame graph's weight: a row count is a count of the thing
    counted (walks, waits), a time column in µs or ns is a time in nanoseconds (wait_us:
    wait_time), any other column a count of its unit's last word (row versions: versions)."""
    if graph.weight is None:
        return SampleType(graph, graph.unit, "count")
    for suffix, scale in (("_us", 1000.0), ("_ns", 1.0)):
        if graph.weight.endswith(suffix):
            return SampleType(graph, graph.weight[:-len(suffix)] + "_time", "nanoseconds", scale)
    return SampleType(graph, graph.unit.split()[-1], "count")


def families() -> dict[str, list[FlameGraph]]:
    """Flame graphs by family (the part of the name before the dot): graphs of one family
    weigh the same table's stacks, so they are one profile with one value per graph."""
    grouped: dict[str, list[FlameGraph]] = {}
    for graph in FLAME_GRAPHS:
        grouped.setdefault(graph.name.split(".")[0], []).append(graph)
    return grouped


@dataclass
class StringTable:
    strings: list[str] = field(default_factory=lambda: [""])  # index 0 is always ""
    index: dict[str, int] = field(default_factory=lambda: {"": 0})

    def __call__(self, text: str) -> int:
        if text not in self.index:
            self.index[text] = len(self.strings)
            self.strings.append(text)
        return self.index[text]


def stack_samples(rows: pd.DataFrame, types: list[SampleType], leaf: str | None) -> pd.DataFrame:
    """One row per distinct (stack, leaf label) with each type's total in its unit, rounded;
    rows whose every value rounds to 0 are left out."""
    stacks = rows["stack"].fillna("").astype(str)
    stacks = stacks.where(stacks.str.strip(";") != "", NO_STACK)
    values = pd.DataFrame({"stack": stacks, "label": rows[leaf].astype(str) if leaf else ""})
    for t in types:
        weight = rows[t.graph.weight].astype("float64") * t.scale if t.graph.weight else 1.0
        values[t.type] = weight
    totals = values.groupby(["stack", "label"], sort=False).sum().round().astype("int64")
    totals = totals[(totals > 0).any(axis=1)]
    return totals.sort_values(types[0].type, ascending=False, kind="stable").reset_index()


def encode(samples: pd.DataFrame, types: list[SampleType], leaf: str | None, meta: dict,
           duration_s: float) -> bytes:
    """The Profile message: frames become functions and locations (one each per distinct
    frame, ids from 1), a sample lists its locations leaf first; the leaf column (the mode
    waited for) is a label, not a frame."""
    strings = StringTable()
    target = meta.get("target", {})
    locations: dict[str, int] = {}
    body = bytearray()
    for t in types:
        body += bytes_field(PROFILE_SAMPLE_TYPE, int_field(VALUE_TYPE_TYPE, strings(t.type))
                            + int_field(VALUE_TYPE_UNIT, strings(t.unit)))
    for row in samples.itertuples(index=False):
        frames = [f for f in row.stack.split(";") if f]
        ids = [locations.setdefault(f, len(locations) + 1) for f in reversed(frames)]
        message = packed_field(SAMPLE_LOCATION_ID, ids)
        message += packed_field(SAMPLE_VALUE, [int(getattr(row, t.type)) for t in types])
        if leaf:
            message += bytes_field(SAMPLE_LABEL, int_field(LABEL_KEY, strings(leaf))
                                   + int_field(LABEL_STR, strings(row.label)))
        body += bytes_field(PROFILE_SAMPLE, message)
    # one mapping, the server binary, whose functions are already named: no reader tries
    # to symbolize addresses (there are none; the stacks were folded at record time)
    body += bytes_field(PROFILE_MAPPING, int_field(MAPPING_ID, 1)
                        + int_field(MAPPING_FILENAME, strings(target.get("exe", "mysqld")))
                        + int_field(MAPPING_BUILD_ID, strings(target.get("build_id") or ""))
                        + int_field(MAPPING_HAS_FUNCTIONS, 1))
    for frame, ident in locations.items():
        line = int_field(LINE_FUNCTION_ID, ident)
        body += bytes_field(PROFILE_LOCATION, int_field(LOCATION_ID, ident)
                            + int_field(LOCATION_MAPPING_ID, 1) + bytes_field(LOCATION_LINE, line))
    for frame, ident in locations.items():
        name = strings(frame)
        body += bytes_field(PROFILE_FUNCTION, int_field(FUNCTION_ID, ident)
                            + int_field(FUNCTION_NAME, name) + int_field(FUNCTION_SYSTEM_NAME, name))
    body += int_field(PROFILE_TIME_NANOS, int(meta.get("start_real_ns") or time.time_ns()))
    body += int_field(PROFILE_DURATION_NANOS, int(duration_s * 1e9))
    server = f"{target.get('family', '?')} {target.get('version', '?')} pid {target.get('pid', '?')}"
    body += int_field(PROFILE_COMMENT, strings(f"innostall recording of {server} on {meta.get('host', '?')}"))
    body += int_field(PROFILE_DEFAULT_SAMPLE_TYPE, strings(types[-1].type))
    for text in strings.strings:  # last: every string above has its index by now
        body += bytes_field(PROFILE_STRING_TABLE, text.encode())
    return bytes(body)


def profiles(rec) -> list[tuple[str, bytes]]:
    """(family, gzipped profile) for each family this recording has stacks for."""
    out = []
    for family, graphs in families().items():
        rows = getattr(rec, graphs[0].table, None)  # older recordings lack newer tables
        if rows is None or not len(rows):
            continue
        types = [sample_type(g) for g in graphs]
        samples = stack_samples(rows, types, graphs[0].leaf)
        if len(samples):
            message = encode(samples, types, graphs[0].leaf, rec.meta, rec.duration_s)
            out.append((family, gzip.compress(message, mtime=0)))
    return out
