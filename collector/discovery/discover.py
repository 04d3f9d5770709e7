"""Discovery: walk the probe catalog for one target and resolve each logical probe to the
symbols and file offsets its uprobes attach at, or to the reason it cannot be."""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from innostall.errors import UserError

from . import call_sites, layouts, libc, machine_code, plain_name
from .elf import Symbol
from .target import Target, parse_version


@dataclass
class ResolvedProbe:
    name: str
    description: str
    core: bool
    cost: str
    programs: dict[str, str]  # role (entry/return) -> BPF program name
    symbols: list[Symbol] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    globals: dict[str, int] = field(default_factory=dict)  # data symbol -> address
    global_settings: dict[str, str] = field(default_factory=dict)  # BPF setting -> data symbol
    # BPF settings PREFIX_lo/_hi -> the function whose code range they receive (`caller`)
    caller_ranges: dict[str, Symbol] = field(default_factory=dict)
    decode: dict[str, str] = field(default_factory=dict)
    bpftrace: str | None = None  # fragment of probes/bpftrace/ (None: chosen by roles)
    exact: bool = True  # False: approximate (a subset, a threshold or an estimate; see the catalog)
    fallback: bool = False  # found outside the variants listed for this version
    reason: str | None = None  # why it is missing
    group: str = ""  # sampling group of the cost governor; "" = never sampled
    group_setting: str | None = None  # BPF setting told this probe's group number
    bpftrace_with: dict[str, str] = field(default_factory=dict)  # placeholder -> probe
    path: str | None = None  # the library the offsets are in (`library`); None: the server
    # a call-site variant (`calls`): for each offset (a call instruction), the instruction
    # after it, where the return program is attached as a plain uprobe; empty: at returns
    after_calls: list[int] = field(default_factory=list)
    callee: str | None = None  # the function those calls call
    replica_only: bool = False  # left out where the server says it is no replica (the catalog's)
    found_by: str | None = None  # found otherwise than by the catalog's names (plain_name.py)

    @property
    def ok(self) -> bool:
        return bool(self.offsets)

    @property
    def symbol(self) -> Symbol | None:
        return self.symbols[0] if self.symbols else None

    @property
    def offset(self) -> int | None:
        return self.offsets[0] if self.offsets else None

    def attach_args(self) -> list[str]:
        """The loader's --attach specs: each program at each offset; at a call site, the return
        program at the instruction after the call (collector/loader/loader.c, after-call:)."""
        where = f"@{self.path}" if self.path else ""
        return [f"{prog}=after-call:{self.after_calls[i]:#x}{where}" if role == "return" and self.after_calls
                else f"{prog}={offset:#x}{where}"
                for i, offset in enumerate(self.offsets) for role, prog in self.programs.items()]


@cache
def catalog_file() -> dict:
    return tomllib.loads(resources.files("innostall.collector.discovery").joinpath("catalog.toml").read_text())


def catalog() -> dict:
    return catalog_file()["probe"]


def tracepoints() -> dict:
    """The scheduler tracepoints some programs need: {program: its catalog entry}."""
    return catalog_file()["tracepoint"]


def check_supported(target: Target) -> None:
    oldest = catalog_file()["supported"].get(target.family)
    if target.version and oldest and target.version_tuple() < parse_version(oldest):
        raise UserError(f"{target.label} is not supported: innostall covers "
                        + ", ".join(f"{f} {v}+" for f, v in catalog_file()["supported"].items()))


def version_note(target: Target) -> str | None:
    """One plain line when the build is newer than any innostall was checked on, or of a
    family it was not checked on: its probes then resolve best-effort."""
    checked = catalog_file().get("checked", {}).get(target.family)
    if not target.version:
        return f"{target.label}: version not found in the binary; probes resolve best-effort"
    if not checked:
        return (f"{target.label}: innostall was not checked on a build of this family; "
                "probes resolve best-effort")
    if target.version_tuple() > parse_version(checked):
        return (f"{target.label} is newer than the newest release innostall was checked on "
                f"({checked}); probes resolve best-effort")
    return None


def select(spec: str | None) -> list[str]:
    """Probe names from a comma-separated list of set names and probe names."""
    entries = catalog()
    names: list[str] = []
    for item in (spec or "default").split(","):
        item = item.strip()
        members = [item] if item in entries else [n for n, e in entries.items() if item in e["sets"]]
        if not members:
            sets = sorted({s for e in entries.values() for s in e["sets"]})
            raise UserError(f"unknown probe or set '{item}' (sets: {', '.join(sets)}; "
                            f"probes: {', '.join(entries)})")
        names += [n for n in members if n not in names]
    return names


def in_range(version: tuple[int, ...], spec: str) -> bool:
    low, high = (parse_version(bound) for bound in spec.split("-"))
    return low <= version[:len(low)] and version[:len(high)] <= high


def ordered_variants(variants: list[dict], target: Target) -> list[tuple[dict, bool]]:
    """(variant, matches the version) for the target's family, version matches first."""
    version = target.version_tuple()
    family = [v for v in variants if target.family in v["families"]]
    exact = [v for v in family if version and in_range(version, v["versions"])]
    return [(v, True) for v in exact] + [(v, False) for v in family if v not in exact]


class LayoutUnknown(Exception):
    """The function is there, but with a parameter list the programs cannot decode."""


def variant_symbols(variant: dict, target: Target) -> list[Symbol]:
    """The symbols a variant attaches at: its mangled `symbols` (the first present, or all
    with match = "all"), else every copy of its `function`, found by demangled name
    whatever its parameter list. A variant whose programs read arguments lists the
    parameter lists it decodes (`params`, regular expressions); a copy with any other
    list is never attached."""
    found = target.find_functions(variant["symbols"]) if variant.get("symbols") else {}
    present = [found[name] for name in variant.get("symbols", []) if name in found]
    if present:
        return present if variant.get("match", "first") == "all" else present[:1]
    if "function" not in variant:
        return []
    copies = target.find_function_copies(variant["function"])
    patterns = [re.compile(p) for p in variant.get("params", [".*"])]
    decodable = [sym for sym, params in copies if any(p.fullmatch(params) for p in patterns)]
    if copies and not decodable:
        raise LayoutUnknown(f"{variant['function']}({copies[0][1]}) is in the binary, but its "
                            "arguments are not laid out as any build innostall knows")
    return decodable


class MembersUnknown(Exception):
    """The function is there, but the programs need struct members the catalog lacks."""


def library_symbols(variant: dict, target: Target) -> tuple[libc.Libc | None, list[Symbol]]:
    """A variant in a library the server runs with (`library = "libc"`): its `symbols`,
    named in the library's symbol tables or its debug file; a hidden one (`hidden_in`:
    the exported function that calls it) found as that function's unexported callee."""
    lib = libc.find(target.pid)
    if lib is None:
        return None, []
    names = variant.get("symbols", [])
    found = lib.functions(names)
    present = [found[n] for n in names if n in found][:1]
    if not present and "hidden_in" in variant:
        callee = libc.hidden_callee(lib, variant["hidden_in"])
        present = [callee] if callee else []
    return lib, present


def resolve_variant(probe: ResolvedProbe, variant: dict, target: Target,
                    found: list[Symbol] | None = None) -> bool:
    """The variant's functions (in the server, or in the C library it runs with), with the
    layout members, globals and callers its programs need; False when one is missing.
    `found`: where plain_name.py found them, when the variant's names miss."""
    if found:
        lib, present = target.elf, found
    elif variant.get("library") == "libc":
        lib, present = library_symbols(variant, target)
    else:
        lib, present = target.elf, variant_symbols(variant, target)
    if not present:
        return False
    missing = missing_members(variant, target)
    if missing:
        refused = (layout(target) or {}).get("refused", {})
        said = [f"{m} refused, the build's code disagreeing ({refused[m]})" for m in missing if m in refused]
        unknown = [m for m in missing if m not in refused]
        raise MembersUnknown("; ".join(said + ([f"{', '.join(unknown)} of {target.label} is not in the catalog"]
                                               if unknown else [])))
    global_settings = variant.get("globals", {})
    globals_found = target.find_objects(list(global_settings.values()))
    if len(globals_found) < len(global_settings):
        return False
    callers = {prefix: target.find_functions(names) for prefix, names in variant.get("caller", {}).items()}
    if not all(callers.values()):
        return False
    probe.symbols = present
    probe.offsets = [lib.file_offset(s.vaddr) for s in present]
    if "calls" in variant:
        sites = confirmed_call_sites(variant, target)
        probe.symbols = list(dict.fromkeys(site.function for site in sites))
        probe.offsets = [lib.file_offset(site.call) for site in sites]
        probe.after_calls = [lib.file_offset(site.after) for site in sites]
        probe.callee = variant["calls"]
    if lib is not target.elf:
        probe.path = lib.path
    probe.globals = {name: s.vaddr for name, s in globals_found.items()}
    probe.global_settings = dict(global_settings)
    probe.caller_ranges = {prefix: next(iter(found.values())) for prefix, found in callers.items()}
    probe.programs = dict(variant.get("programs", probe.programs))
    probe.decode = dict(variant.get("decode", {}))
    probe.exact = variant.get("exact", True)
    probe.bpftrace = variant.get("bpftrace", probe.bpftrace)
    return True


def confirmed_call_sites(variant: dict, target: Target) -> list[call_sites.CallSite]:
    """A call-site variant's calls (`function` calls `calls` with `first_argument`, a global's
    address plus a layout member), as the build's code confirms them (call_sites.py)."""
    global_name, member = variant["first_argument"]
    try:
        found = target.find_objects([global_name])
        if global_name not in found:
            raise call_sites.Unconfirmed(f"{global_name} is not in the binary's symbols")
        address = found[global_name].vaddr + layout(target)["members"][member]
        return call_sites.find(target, variant["function"], variant["calls"], address)
    except call_sites.Unconfirmed as e:
        raise call_sites.Unconfirmed(f"not available: {variant['function']}'s call to {variant['calls']} on "
                                     f"&{global_name}.{member.split('.')[-1]} is not confirmed in the build's "
                                     f"code ({e})") from None


def catalog_layout(target: Target) -> dict | None:
    """The catalog's struct layout for this build: merged from every [[layout]] whose range
    holds it (the latch structs and, say, the history length are known for different
    ranges); None when none does."""
    version = target.version_tuple()
    found = None
    for entry in catalog_file().get("layout", []):
        if target.family in entry["families"] and version and in_range(version, entry["versions"]):
            found = found or {"latch_model": None, "members": {}}
            found["latch_model"] = found["latch_model"] or entry.get("latch_model")
            found["members"].update(entry["members"])
    return found


def layout(target: Target) -> dict | None:
    """The struct layout of this build the programs read: {"latch_model": NAME or None,
    "members": {C member: value}, "source", "differs"}: each member from the build's own
    DWARF where it has one (layouts.py), else from the catalog; `differs` lists the members
    where the two disagree (the DWARF's value is taken). None when neither knows any."""
    listed = catalog_layout(target)
    dwarf = layouts.layout_of(target.elf, target.debug)
    if not dwarf or not (dwarf["members"] or dwarf["latch_model"]):
        return checked_by_code(target, listed) if listed else None
    listed = listed or {"latch_model": None, "members": {}}
    differs = {m: (listed["members"][m], v) for m, v in dwarf["members"].items()
               if m in listed["members"] and listed["members"][m] != v}
    return {"latch_model": dwarf["latch_model"] or listed["latch_model"],
            "members": {**listed["members"], **dwarf["members"]},
            "source": "DWARF" if not listed["members"] else "DWARF and catalog", "differs": differs}


def checked_by_code(target: Target, listed: dict) -> dict:
    """The catalog's layout with each member the build's code can say (machine_code.py)
    either `confirmed` or, where the code says otherwise, `refused`: left out, with why."""
    key = (target.path, target.version, tuple(sorted(listed["members"].items())))
    if key not in _code_checks:
        _code_checks[key] = machine_code.check(target, listed["members"], catalog_file().get("code", []))
    checks = _code_checks[key]
    refused = {c.member: f"{c.claimed:#x} in the catalog, {', '.join(map(hex, c.found))} in the code of "
                         f"{c.function}" for c in checks if not c.agrees}
    return {**listed, "members": {m: v for m, v in listed["members"].items() if m not in refused},
            "source": "catalog", "differs": {}, "confirmed": [c.member for c in checks if c.agrees],
            "refused": refused}


_code_checks: dict[tuple, list] = {}  # a build's checks, made once: layout() is asked per variant


def missing_members(variant: dict, target: Target) -> list[str]:
    """The layout members a variant's programs need (its `needs`) that the catalog does not
    give for this build."""
    known = (layout(target) or {}).get("members", {})
    return [m for m in variant.get("needs", []) if m not in known]


def named(spec: str | None) -> set[str]:
    """The probes a --probes list names one by one (not through a set)."""
    return {item.strip() for item in (spec or "").split(",")} & set(catalog())


def resolve(target: Target, names: list[str] | None = None, kept: set[str] | None = None) -> list[ResolvedProbe]:
    """Each probe for this build, attachable or with the reason it is not. A probe whose
    catalog entry says it is `read_from_memory` is left out when this build's memory
    answers the same, unless kept (None: every probe is kept)."""
    check_supported(target)
    entries = catalog()
    walkable = kept is not None and layouts.views_walkable(layouts.answer(target.elf, target.debug)
                                                          if target.elf else None)
    known_layout = (layout(target) or {}).get("latch_model") is not None
    resolved = []
    for name in names or list(entries):
        entry = entries[name]
        probe = ResolvedProbe(name, entry["description"], entry.get("core", False),
                              entry["cost"], dict(entry["programs"]), bpftrace=entry.get("bpftrace"),
                              group=entry.get("group", name),
                              group_setting=entry.get("group_setting"),
                              bpftrace_with=dict(entry.get("bpftrace_with", {})),
                              replica_only=entry.get("replica_only", False))
        variants = ordered_variants(entry["variant"], target)
        if entry.get("read_from_memory") and walkable and name not in kept:
            probe.reason = f"not needed: {entry['read_from_memory']}"
            resolved.append(probe)
            continue
        if entry.get("needs_layout") and not known_layout:
            probe.reason = (f"block and latch structs of {target.label} are neither in its DWARF "
                            "nor in the catalog, so block latches cannot be told apart")
            resolved.append(probe)
            continue
        undecodable = None
        for variant, version_matches in variants:
            if "absent" in variant or "unavailable" in variant:  # the catalog says why there is none
                if version_matches:
                    probe.reason = (f"not needed: {variant['absent']}" if "absent" in variant
                                    else f"not available: {variant['unavailable']}")
                    break
                continue
            try:
                if resolve_variant(probe, variant, target):
                    probe.fallback = not version_matches
                    break
            except (LayoutUnknown, MembersUnknown, call_sites.Unconfirmed) as e:
                undecodable = undecodable or str(e)
        else:
            probe.reason = undecodable or found_otherwise(probe, variants, target)
        resolved.append(probe)
    return resolved


def found_otherwise(probe: ResolvedProbe, variants: list[tuple[dict, bool]], target: Target) -> str | None:
    """Where every name the catalog lists misses: the function by its plain name, under
    another signature or inlined (plain_name.py); None once attached so, else the reason."""
    found = plain_name.find(variants, target, plain_name.none_read(catalog_file()), probe.programs)
    if isinstance(found, tuple):
        variant, symbols, how = found
        try:
            if resolve_variant(probe, variant, target, symbols):
                probe.found_by = how
                return None
        except MembersUnknown as e:
            return str(e)
        found = None
    return (f"{missing_reason(target, variants)}; {found}" if found else missing_reason(target, variants))


def missing_reason(target: Target, variants: list[tuple[dict, bool]]) -> str:
    if not variants:
        return f"not available on {target.label}"
    if all(v.get("library") for v, _ in variants):
        if not target.pid:
            return "in a library the server runs with: needs a running server (--pid)"
        return "the function is not in the server's C library (not glibc 2.34+, or it is renamed)"
    tried = [s for v, _ in variants for s in v.get("symbols", []) + [v.get("function")] if s]
    if not target.elf.has_symtab and not target.debug:
        return "not exported, and the binary has no symbol table: install its debug symbols"
    return f"none of {len(tried)} known names is in the binary (inlined or renamed in this build)"
