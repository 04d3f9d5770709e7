"""Discovery: walk the probe catalog for one target and resolve each logical probe to a
symbol and the file offset its uprobes attach at, or to the reason it cannot be."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from innostall.errors import UserError

from .elf import Symbol
from .target import Target, parse_version


@dataclass
class ResolvedProbe:
    name: str
    description: str
    programs: dict[str, str]  # role (entry/return) -> BPF program name
    symbol: Symbol | None = None
    offset: int | None = None
    fallback: bool = False  # found outside the variants listed for this version
    reason: str | None = None  # why it is missing

    @property
    def ok(self) -> bool:
        return self.offset is not None

    def attach_args(self) -> list[str]:
        return [f"{prog}={self.offset:#x}" for prog in self.programs.values()]


@cache
def catalog() -> dict:
    text = resources.files("innostall.collector").joinpath("catalog.toml").read_text()
    return tomllib.loads(text)["probe"]


def select(spec: str | None) -> list[str]:
    """Probe names from a comma-separated list of set names and probe names."""
    entries = catalog()
    names: list[str] = []
    for item in (spec or "default").split(","):
        item = item.strip()
        members = [n for n, e in entries.items() if item in e["sets"]] if item not in entries else [item]
        if not members:
            sets = sorted({s for e in entries.values() for s in e["sets"]})
            raise UserError(f"unknown probe or set '{item}' (sets: {', '.join(sets)}; "
                            f"probes: {', '.join(entries)})")
        names += [n for n in members if n not in names]
    return names


def in_range(version: tuple[int, ...], spec: str) -> bool:
    low, high = (parse_version(bound) for bound in spec.split("-"))
    return low <= version[:len(low)] and version[:len(high)] <= high


def candidate_symbols(variants: list[dict], target: Target) -> tuple[list[str], list[str]]:
    """Symbols of the variants matching the target's version, then the family's others."""
    version = target.version_tuple()
    family = [v for v in variants if target.family in v["families"]]
    exact = [s for v in family if version and in_range(version, v["versions"]) for s in v["symbols"]]
    others = [s for v in family for s in v["symbols"] if s not in exact]
    return exact, others


def resolve(target: Target, names: list[str] | None = None) -> list[ResolvedProbe]:
    entries = catalog()
    resolved = []
    for name in names or list(entries):
        entry = entries[name]
        probe = ResolvedProbe(name, entry["description"], dict(entry["programs"]))
        exact, others = candidate_symbols(entry["variant"], target)
        found = target.elf.find_functions(exact + others)
        for symbol_name in exact + others:
            if symbol_name in found:
                probe.symbol = found[symbol_name]
                probe.offset = target.elf.file_offset(probe.symbol.vaddr)
                probe.fallback = symbol_name not in exact
                break
        else:
            probe.reason = missing_reason(target, exact + others)
        resolved.append(probe)
    return resolved


def missing_reason(target: Target, tried: list[str]) -> str:
    if not tried:
        return f"no symbol known for {target.label}"
    if not target.elf.has_symtab and target.family == "mariadb":
        return "binary is stripped and MariaDB hides InnoDB symbols: install its debug symbols"
    return "none of " + ", ".join(tried) + " is in the binary"
