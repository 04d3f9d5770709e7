"""The measurement schema: every counter and histogram the kernel side produces, with its
kind and unit, the latch wait modes and the struct-layout members the latch programs read.

It is defined once, in the X-macros of probes/innostall.h (the tables' in
probes/innostall_tables.h, read by tables.py). The loader prints it
(`innostall-loader --schema`), every recording keeps it in meta.json, and the Python side
reads it from there, so the writer and the reader of a recording agree without re-typing
names. Recordings of format 1 predate this and did not keep it: they are read with
schema-v1.json, the schema of the loader that wrote them (frozen data, never edited).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources

from innostall.errors import UserError
from innostall.format.safe_text import safe_strings
from innostall.format.shapes import Fault, Reading, fields, list_of, nullable, signed, text
from innostall.format.tables import Tables, tables_of

# How units read where people look at them: bcc's histogram headers, and prose/HTML.
BCC_UNITS = {"us": "usecs", "ns": "nsecs", "ms": "msecs"}
PROSE_UNITS = {"us": "µs", "ns": "ns", "ms": "ms"}
# The kernel's latch wait modes (probes/innostall.h), which the views name; a later loader
# may add modes, not take these away.
WAIT_MODES = ("S", "X", "SX", "other")
# What the views read of a schema. The loader's has ~60 counters, ~10 histograms, 4 wait
# modes; a thousand times that is not a schema.
MOST = 4096
SHAPE = fields({"counters": list_of(fields({"name": text, "kind": text}, {"unit": nullable(text)}), MOST),
                "hists": list_of(fields({"name": text}, {"unit": text, "section": nullable(text),
                                                         "title": nullable(text)}), MOST),
                "wait_modes": list_of(text, 256)},
               {"latch_models": list_of(text, MOST), "layout": list_of(fields({"member": text}), MOST),
                "max_groups": signed})


@dataclass(frozen=True)
class Schema:
    raw: dict

    @classmethod
    def parse(cls, raw: object) -> Schema:
        """The schema, its names made safe to show; one from another machine may be anything:
        of the wrong shape, it is refused in one line."""
        try:
            SHAPE(raw, "schema", Reading())
        except Fault as e:
            raise UserError(f"damaged measurement schema ({e})")
        if not set(WAIT_MODES) <= set(raw["wait_modes"]):
            raise UserError(f"damaged measurement schema (its wait modes lack one of {', '.join(WAIT_MODES)})")
        tables_of(raw)  # its tables, if any, refused in one line too
        return cls(safe_strings(raw))

    @cached_property
    def tables(self) -> Tables:
        """The loader's and the recording's tables (tables.py)."""
        return tables_of(self.raw)

    @cached_property
    def counters(self) -> dict[str, dict]:
        """name -> {kind, unit}"""
        return {c["name"]: c for c in self.raw["counters"]}

    @cached_property
    def hists(self) -> dict[str, dict]:
        """name -> {unit, section, title}"""
        return {h["name"]: h for h in self.raw["hists"]}

    @cached_property
    def gauges(self) -> frozenset[str]:
        """Counters that hold a level (the value at each snapshot), not a running count."""
        return frozenset(self.counters_of("gauge"))

    def counters_of(self, *kinds: str) -> list[str]:
        return [c["name"] for c in self.raw["counters"] if c["kind"] in kinds]

    def hists_of(self, section: str) -> list[str]:
        return [h["name"] for h in self.raw["hists"] if h.get("section") == section]

    def kind(self, counter: str) -> str | None:
        return self.counters.get(counter, {}).get("kind")

    def hist_unit(self, name: str) -> str:
        return self.hists.get(name, {}).get("unit", "value")

    def hist_title(self, name: str) -> str:
        return self.hists.get(name, {}).get("title") or name.replace("_", " ").capitalize()

    @property
    def wait_modes(self) -> list[str]:
        return list(self.raw["wait_modes"])

    @property
    def latch_models(self) -> list[str]:
        return list(self.raw.get("latch_models", []))

    @property
    def layout_members(self) -> list[str]:
        return [m["member"] for m in self.raw.get("layout", [])]

    @property
    def max_groups(self) -> int:
        return int(self.raw["max_groups"])


def bcc_unit(unit: str) -> str:
    return BCC_UNITS.get(unit, unit)


def prose_unit(unit: str) -> str:
    return PROSE_UNITS.get(unit, unit)


@cache
def format_1() -> Schema:
    """The schema recordings of format 1 were written with."""
    text = resources.files("innostall.format").joinpath("schema-v1.json").read_text()
    return Schema.parse(json.loads(text))
