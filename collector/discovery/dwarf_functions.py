"""Functions found in the build's DWARF by their plain name, where the catalog's symbol
names all miss: the copies GCC inlined into their callers (DW_TAG_inlined_subroutine whose
abstract origin has that DW_AT_name), each with the address its inlined code starts at and
the function it was inlined into.

Why not all of .debug_info: walking every DIE of a 100 MB .debug_info in pyelftools takes
minutes. A unit can only name the function if it holds the name's .debug_str offset (a
4-byte DW_FORM_strp) or the name itself (DW_FORM_string), so the raw section is searched
for those bytes first and only the units holding them are parsed; a chance match costs one
unit's parse, never a wrong answer (every DIE is checked by name). A function defined in a
header is named in many units: past MAX_UNITS the lookup gives up and says so.

The answer is kept per build id in innostall's cache (cache.py): the build does not change."""
from __future__ import annotations

import bisect
import json
import os
import struct
from dataclasses import asdict, dataclass

from . import cache

MAX_UNITS = 40  # units parsed per name, ~1 s each for a large one
FORMAT = 1  # of the cached answer


@dataclass(frozen=True)
class InlinedSite:
    entry: int  # link-time address where the inlined code begins (DW_AT_entry_pc, low_pc, ranges)
    caller: str  # the concrete function it was inlined into
    call_line: int | None  # DW_AT_call_line


@dataclass
class Inlined:
    name: str
    sites: list[InlinedSite]
    error: str | None = None  # why the DWARF could not be searched (no DWARF, too many units)

    def callers(self) -> list[str]:
        return list(dict.fromkeys(s.caller for s in self.sites))


def unit_starts(info: bytes) -> list[int]:
    """Offsets of the units in .debug_info (32-bit DWARF; a 64-bit unit ends the walk)."""
    starts, at = [], 0
    while at + 4 <= len(info):
        length = struct.unpack_from("<I", info, at)[0]
        if length >= 0xFFFFFFF0:
            break
        starts.append(at)
        at += 4 + length
    return starts


def string_offsets(strings: bytes, name: str) -> list[int]:
    """Every .debug_str offset whose string is `name` (a linker may merge it into the tail of
    a longer string, so the byte before it is not required to be a NUL)."""
    wanted, found, at = name.encode() + b"\0", [], 0
    while (at := strings.find(wanted, at)) >= 0:
        found.append(at)
        at += 1
    return found


def candidate_units(info: bytes, strings: bytes, name: str) -> list[int]:
    """The units whose bytes hold the name's .debug_str offset or the name inline."""
    starts = unit_starts(info)
    needles = [struct.pack("<I", off) for off in string_offsets(strings, name)] + [name.encode() + b"\0"]
    units = set()
    for needle in needles:
        at = 0
        while (at := info.find(needle, at)) >= 0:
            units.add(starts[bisect.bisect_right(starts, at) - 1])
            at += 1
    return sorted(units)


def _name_of(die, depth: int = 0) -> str | None:
    """A DIE's DW_AT_name, through DW_AT_abstract_origin and DW_AT_specification."""
    if "DW_AT_name" in die.attributes:
        value = die.attributes["DW_AT_name"].value
        return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    for link in ("DW_AT_abstract_origin", "DW_AT_specification"):
        if link in die.attributes and depth < 8:
            return _name_of(die.get_DIE_from_attribute(link), depth + 1)
    return None


def _entry_of(die, dwarf) -> int | None:
    """Where an inlined instance starts: DW_AT_entry_pc, else low_pc, else its first range's
    start (the ranges are relative to the unit's base address in DWARF 2-4)."""
    attrs = die.attributes
    if "DW_AT_entry_pc" in attrs and attrs["DW_AT_entry_pc"].form == "DW_FORM_addr":
        return attrs["DW_AT_entry_pc"].value
    if "DW_AT_low_pc" in attrs:
        return attrs["DW_AT_low_pc"].value
    if "DW_AT_ranges" in attrs and die.cu["version"] < 5:
        base = die.cu.get_top_DIE().attributes.get("DW_AT_low_pc")
        entries = dwarf.range_lists().get_range_list_at_offset(attrs["DW_AT_ranges"].value)
        starts = [e.begin_offset for e in entries if hasattr(e, "begin_offset")]
        return starts[0] + (base.value if base else 0) if starts else None
    return None


def _caller_of(die) -> str:
    parent = die.get_parent()
    while parent is not None and parent.tag != "DW_TAG_subprogram":
        parent = parent.get_parent()
    return (_name_of(parent) if parent is not None else None) or "?"


def sites_in_unit(dwarf, offset: int, name: str) -> list[InlinedSite]:
    cu = dwarf.get_CU_at(offset)
    sites = []
    for die in cu.iter_DIEs():
        if die.tag != "DW_TAG_inlined_subroutine" or _name_of(die) != name:
            continue
        entry = _entry_of(die, dwarf)
        if entry:  # none inside an abstract instance tree (a function inlined in turn)
            line = die.attributes.get("DW_AT_call_line")
            sites.append(InlinedSite(entry, _caller_of(die), line.value if line else None))
    return sites


def search(path: str, name: str) -> Inlined:
    """The inlined instances of the function `name` in the DWARF of the ELF file at path."""
    from elftools.elf.elffile import ELFFile
    with open(path, "rb") as f:
        elf = ELFFile(f)
        info, strings = elf.get_section_by_name(".debug_info"), elf.get_section_by_name(".debug_str")
        if info is None or info.compressed or strings is None:
            return Inlined(name, [], "no uncompressed DWARF in the build")
        units = candidate_units(info.data(), strings.data(), name)
        if len(units) > MAX_UNITS:
            return Inlined(name, [], f"named in {len(units)} DWARF units, more than the {MAX_UNITS} searched")
        dwarf = elf.get_dwarf_info()
        sites = sorted({s for u in units for s in sites_in_unit(dwarf, u, name)}, key=lambda s: s.entry)
        return Inlined(name, sites)


def inlined(image, name: str) -> Inlined:
    """search(), cached per build id and name beside the other per-build facts."""
    directory, build_id = cache.cache_dir(), image.build_id
    where = os.path.join(directory, f"inlined-{build_id}.json") if directory and build_id else None
    known = {}
    if where and os.path.exists(where):
        try:
            with open(where) as f:
                known = json.load(f)
        except (OSError, ValueError):
            known = {}
        if known.get("format") != FORMAT:
            known = {}
    if name in known.get("names", {}):
        entry = known["names"][name]
        return Inlined(name, [InlinedSite(**s) for s in entry["sites"]], entry["error"])
    found = search(image.path, name)
    if where:
        known = {"format": FORMAT, "names": {**known.get("names", {}),
                                             name: {"sites": [asdict(s) for s in found.sites],
                                                    "error": found.error}}}
        try:
            with open(where + ".tmp", "w") as f:
                json.dump(known, f)
            os.replace(where + ".tmp", where)
        except OSError:
            pass
    return found
