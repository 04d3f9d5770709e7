"""meta.json checked once as it is read, as data that may come from anywhere: what every
view needs (format, version, target, interval_s, probes) must be there and of its type, or
the recording is refused in one line; anything else of the wrong type is left out and said,
so that the views may use what is left without a guard. Every string is made safe to show
(safe_text): cut to a length, control and direction-overriding characters replaced.
"""
from __future__ import annotations

import json
import math
import os

from innostall.errors import UserError
from innostall.format import files
from innostall.format.journal import FORMAT, FORMAT_VERSION, META
from innostall.format.safe_text import safe_strings, safe_text
from innostall.format.shapes import Fault, Reading, fields, flag, list_of, map_of, nullable, signed, text

# A real meta.json is ~20 KB, most of it the schema and the probe list; a thousand times
# that is not one of ours, and parsing it would cost memory for nothing.
MAX_META_BYTES = 16 * 2**20
MAX_PROBES = 4096  # the catalog has ~40 probes
MAX_INTERVAL_S = 86400.0  # the recorder's interval is seconds; a day between snapshots is not one
def finite(value, where: str, reading: Reading):
    if type(value) not in (int, float) or not math.isfinite(value):
        raise Fault(f"{where} is not a finite number")
    return value


def wall_ns(value, where: str, reading: Reading):
    """A CLOCK_REALTIME time in ns: 0 to 2^63 (the year 2262), as datetime can show it."""
    if type(value) is not int or not 0 <= value < 2**63:
        raise Fault(f"{where} is not a time in ns")
    return value


def own_cpu(value, where: str, reading: Reading):
    """start always; tracing and tables both, or neither (a recording ended by a full disk)."""
    value = fields({"start": finite}, {"tracing": finite, "tables": finite})(value, where, reading)
    if ("tracing" in value) != ("tables" in value):
        raise Fault(f"{where} has one of tracing and tables")
    return value


NAMES = list_of(text, MAX_PROBES)
PROBE = fields({"name": text, "attached": flag},
               {"fallback": flag, "symbol": nullable(text), "reason": nullable(text), "offset": nullable(signed)})
HIT_COST = fields({}, {"entry": finite, "return": finite, "tracepoint": finite, "indirect_factor": finite,
                       "floored": flag, "entry_range": list_of(finite, 2)})
GOVERNOR = fields({}, {"budget_pct": nullable(finite), "groups": NAMES, "hit_cost_ns": HIT_COST,
                       "attachments": list_of(fields({"probes": NAMES, "group": text}), MAX_PROBES)})
TARGET = {"pid": nullable(signed), "exe": nullable(text), "family": nullable(text),
          "version": nullable(text), "build_id": nullable(text)}
# what the views read besides the required fields and the schema (checked by Schema.parse)
OPTIONAL = {"tool_version": text, "host": text, "kernel": text, "label": nullable(text),
            "end_reason": nullable(text), "complete": flag, "start_real_ns": nullable(wall_ns),
            "stop_real_ns": nullable(wall_ns), "settings": map_of(signed, MAX_PROBES),
            "governor": GOVERNOR, "own_cpu_s": own_cpu, "sql": fields({}, {"access": flag}),
            "server_state": fields({"read": list_of(text, 64)},
                                   {"note": text, "sources": map_of(text, 64), "sql_failed": list_of(text, 8)}),
            # the server's settings in force (collector/server/settings_read.py), for the advice
            "server_variables": fields({"at_start": map_of(text, 64)},
                                       {"changed": map_of(list_of(nullable(text), 2), 64), "note": nullable(text)})}


def read_meta(path: str) -> tuple[dict, list[str]]:
    """meta.json of the recording at path, checked: (meta, what was left out, in words)."""
    meta_path = os.path.join(path, META)
    try:
        with files.open_regular(meta_path) as f:
            raw = f.read(MAX_META_BYTES + 1)
    except FileNotFoundError:
        raise UserError(f"{path}: not a recording (no {META})")
    except OSError as e:
        raise UserError(f"{meta_path}: cannot read ({e.strerror})")
    if len(raw) > MAX_META_BYTES:
        raise UserError(f"{meta_path}: damaged metadata (larger than {MAX_META_BYTES >> 20} MiB)")
    try:
        meta = json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        raise UserError(f"{meta_path}: damaged metadata (not valid JSON)")
    return checked_meta(meta, path, meta_path)


def checked_meta(meta, path: str, meta_path: str) -> tuple[dict, list[str]]:
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise UserError(f"{meta_path}: not an innostall recording")
    version = meta.get("version")
    if type(version) is not int or version < 1:
        raise UserError(f"{meta_path}: damaged metadata (format version {safe_text(str(version), 40)!r})")
    if version > FORMAT_VERSION:
        raise UserError(f"{path}: recording format {version} is newer than this "
                        f"innostall reads ({FORMAT_VERSION}); upgrade innostall")
    interval, probes = meta.get("interval_s"), meta.get("probes")
    if not (isinstance(meta.get("target"), dict) and type(interval) in (int, float)
            and 0 < interval <= MAX_INTERVAL_S and isinstance(probes, list) and len(probes) <= MAX_PROBES):
        raise UserError(f"{meta_path}: damaged metadata (target, interval_s or probes malformed)")
    schema = meta.get("schema")
    meta = safe_strings({k: v for k, v in meta.items() if k != "schema"})
    if schema is not None:
        meta["schema"] = schema  # Schema.parse checks it, and its names go through the tables
    left_out = [key for key, spec in OPTIONAL.items() if key in meta and not _fits(meta[key], spec)]
    left_out += [f"target.{key}" for key, spec in TARGET.items()
                 if key in meta["target"] and not _fits(meta["target"][key], spec)]
    for key in left_out:
        holder, _, name = key.rpartition(".")
        del (meta[holder] if holder else meta)[name]
    kept = [p for p in meta["probes"] if _fits(p, PROBE)]
    meta["probes"] = [{"fallback": False, "symbol": None, "reason": None, **p} for p in kept]
    notes = [f"meta.json: {', '.join(left_out)} malformed, left out"] if left_out else []
    if len(kept) < len(probes):
        notes.append(f"meta.json: {len(probes) - len(kept)} malformed probe entries left out")
    return meta, notes


def _fits(value, spec) -> bool:
    try:
        spec(value, "", Reading())
        return True
    except Fault:
        return False
