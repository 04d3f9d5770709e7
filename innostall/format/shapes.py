"""The shape of each journal line, checked once as the line is read: its type, the fields
the reader uses and their types and ranges. A recording may come from another machine or
another person, so a line of the wrong shape is damaged data, skipped and counted like a
line that is not JSON, and the table builders (journal.py) index fields without a guard.

The shapes follow what the loader prints (collector/loader/json_output.c, governor.c) and
what the recorder adds to it (collector/recorder/stack_journal.py, server/view_names.py);
the table lines' shapes come from the recording's table schema (tables.py).
Fields the reader does not use are not checked; a line of a type it does not know is kept
and ignored, as a newer recorder's would be.

The limits say how much one line may claim, each well above what the loader can print.
"""
from __future__ import annotations

import math

INT64_MAX = 2**63 - 1
U64_END = 2**64
MAX_HIST_SLOTS = 64  # log2 buckets of a 64-bit value; the loader prints 32 (MAX_SLOTS), latches 24
MAX_SERVER_STATE = 64  # the server's state read from memory: collector/server/state.py reads 10
MAX_COUNTERS = 4096  # per snapshot; the loader prints NR_COUNTERS (55) and a hits.PROBE per probe
MAX_HISTS = 1024  # per snapshot; the loader prints NR_HISTS (11)
MAX_PROGRAMS = 1024  # attachments; the loader has MAX_ATTACHMENTS (64) slots
MAX_GROUPS = 256  # sampling groups; the loader has MAX_GROUPS (16)
MAX_VIEWS = 65536  # per read_views line: 8 oldest, and whatever SQL found long open
MAX_ROWS = 65536  # per latch table or latches line: four times the kernel's maps (16384)


class Fault(ValueError):
    """What is wrong with a line, in words: the first field found wrong."""


class Reading:
    """What checking the lines of one journal found besides damage: the counts the loader
    printed as unsigned 64-bit numbers that a signed 64-bit column cannot hold."""

    def __init__(self):
        self.clamped = 0


# A spec is a function (value, where, reading) -> the value to keep, raising Fault.

def count(value, where: str, reading: Reading):
    """An unsigned 64-bit number, as the loader prints its counters, sums and times: a
    bool, a negative, a fraction or 2^64 is not one. Above 2^63 - 1 it is clamped there
    (and counted): a real loader may print such a value (a gauge read from memory that was
    not what it expected), and refusing the line would lose every counter in it."""
    if type(value) is not int or not 0 <= value < U64_END:
        raise Fault(f"{where} is not a whole number from 0 to 2^64")
    if value > INT64_MAX:
        reading.clamped += 1
        return INT64_MAX
    return value


def identity(value, where: str, reading: Reading):
    """An unsigned 64-bit name, kept whole: a latch's id (a block's is its space << 32 | its
    page number, and undo tablespaces' ids are near 2^32, so past 2^63). Clamped, two
    latches would become one."""
    if type(value) is not int or not 0 <= value < U64_END:
        raise Fault(f"{where} is not a whole number from 0 to 2^64")
    return value


def signed(value, where: str, reading: Reading):
    """A signed 64-bit number (a time from SQL may be before the monotonic clock's zero)."""
    if type(value) is not int or not -INT64_MAX <= value <= INT64_MAX:
        raise Fault(f"{where} is not a whole number in the signed 64-bit range")
    return value


def number(value, where: str, reading: Reading):
    """A finite number from 0 to 2^64 (the governor prints its estimates as %.0f)."""
    if type(value) not in (int, float) or not (math.isfinite(value) and 0 <= value < U64_END):
        raise Fault(f"{where} is not a finite number from 0 to 2^64")
    return min(value, INT64_MAX)


def text(value, where: str, reading: Reading):
    if type(value) is not str:
        raise Fault(f"{where} is not a string")
    return value


def flag(value, where: str, reading: Reading):
    if type(value) is not bool:
        raise Fault(f"{where} is not true or false")
    return value


def small(limit: int):
    """An index into a short list (a wait mode, a latch kind): 0 to limit - 1."""
    def check(value, where: str, reading: Reading):
        if type(value) is not int or not 0 <= value < limit:
            raise Fault(f"{where} is not a whole number from 0 to {limit - 1}")
        return value
    return check


def nullable(spec):
    def check(value, where: str, reading: Reading):
        return None if value is None else spec(value, where, reading)
    return check


def either(*specs):
    def check(value, where: str, reading: Reading):
        for spec in specs[:-1]:
            try:
                return spec(value, where, reading)
            except Fault:
                pass
        return specs[-1](value, where, reading)
    return check


def plain_counts(values) -> bool:
    """Whether every value is a count that needs no clamping: checked in C loops, since a
    snapshot holds hundreds (each checked by count() would cost more than parsing it)."""
    return not values or (set(map(type, values)) == {int} and min(values) >= 0 and max(values) <= INT64_MAX)


def list_of(spec, most: int):
    def check(value, where: str, reading: Reading):
        if type(value) is not list or len(value) > most:
            raise Fault(f"{where} is not a list of at most {most} items")
        if spec is count and plain_counts(value):
            return value
        return [spec(item, f"{where}[{i}]", reading) for i, item in enumerate(value)]
    return check


def map_of(spec, most: int):
    def check(value, where: str, reading: Reading):
        if type(value) is not dict or len(value) > most:
            raise Fault(f"{where} is not an object of at most {most} fields")
        if spec is count and plain_counts(value.values()):
            return value
        return {key: spec(item, f"{where}.{key[:40]!r}", reading) for key, item in value.items()}
    return check


def row(*specs, optional: int = 0):
    """A list read by position (the builders unpack it): the specs' items, the last
    `optional` of them may be left out."""
    def check(value, where: str, reading: Reading):
        if type(value) is not list or not len(specs) - optional <= len(value) <= len(specs):
            raise Fault(f"{where} is not a list of {len(specs) - optional} to {len(specs)} items")
        return [spec(item, f"{where}[{i}]", reading) for i, (spec, item) in enumerate(zip(specs, value))]
    return check


def fields(required: dict, optional: dict | None = None):
    """An object whose required fields are there and, like its optional ones when present,
    of their spec; other fields are kept unchecked."""
    def check(value, where: str, reading: Reading):
        if type(value) is not dict:
            raise Fault(f"{where} is not an object")
        checked = dict(value)
        for name, spec in required.items():
            if name not in value:
                raise Fault(f"{where} lacks {name}")
            checked[name] = spec(value[name], f"{where}.{name}", reading)
        for name, spec in (optional or {}).items():
            if name in value:
                checked[name] = spec(value[name], f"{where}.{name}", reading)
        return checked
    return check


TID = small(2**31)  # an int32 column; Linux's pid_max is at most 2^22
MODE = small(256)  # a wait mode (the schema names 4); one it does not name reads "mode N"
GOVERNOR = fields({"server_cpu_ns": number, "budget_ns": number, "overhead_ns": number,
                   "groups": list_of(row(count, count, count, number), MAX_GROUPS)},
                  # the server's state signals (the loader's state_signals.c, at most 8):
                  # [value, held ns, windows opened, wanting now]
                  {"signals": list_of(row(count, count, count, count), 8),
                   # the stall bank (the loader's budget.c): [in it now, put in, paid out] ns
                   "bank_ns": row(number, number, number)})
SNAPSHOT = fields({"mono_ns": count, "counters": map_of(count, MAX_COUNTERS),
                   "hists": map_of(list_of(count, MAX_HIST_SLOTS), MAX_HISTS)},
                  {"real_ns": count, "hits": list_of(count, MAX_PROGRAMS),
                   "tracepoint_runs": list_of(count, MAX_PROGRAMS), "governor": GOVERNOR,
                   "server": map_of(count, MAX_SERVER_STATE)})
PROGRAM = fields({}, {"tracepoint": flag, "probes": list_of(text, MAX_PROGRAMS)})
VIEW = fields({"opened_ns": signed},
              {"tid": nullable(count), "history_at_open": nullable(count), "folded": text,
               "connection_id": nullable(count), "user": nullable(text), "statement": nullable(text),
               "source": text, "seen_open": nullable(flag)})
# the walked index by name (the recorder's) or by address (a journal the recorder left raw)
INDEX = nullable(either(text, count))
SHAPES = {
    "attached": fields({"mono_ns": count}, {"real_ns": count, "programs": list_of(PROGRAM, MAX_PROGRAMS),
                                            "groups": list_of(text, MAX_GROUPS), "signals": list_of(text, 8)}),
    "interval": SNAPSHOT,
    "final": SNAPSHOT,
    "deep_walk": fields({"mono_ns": count, "tid": TID, "depth": count, "latency_ns": count},
                        {"folded": text, "table": nullable(text), "index": INDEX, "scan_index": INDEX}),
    "read_views": fields({"mono_ns": count, "views": list_of(VIEW, MAX_VIEWS)}, {"open": count}),
    "end": fields({}, {"reason": nullable(text)}),
    "segment": fields({"number": count}),
}


def checked(record, reading: Reading, table_lines: dict | None = None) -> dict:
    """The record as the reader may use it (counts past 2^63 clamped), or Fault; the lines
    of tables are checked against table_lines (tables.Tables.line_shapes)."""
    if type(record) is not dict:
        raise Fault("not an object")
    kind = record.get("type")
    if type(kind) is not str:
        raise Fault("no type")
    shape = SHAPES.get(kind) or (table_lines or {}).get(kind)
    return shape(record, kind, reading) if shape else record
