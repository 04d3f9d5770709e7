"""`innostall bpftrace`: a ready bpftrace script for the probes that resolved, assembled
from the fragments in probes/bpftrace/ (one per measurement, plus generic shapes; an
installed release carries them as package data)."""
from __future__ import annotations

import os
import re
from string import Template

from innostall import resources

from ..discovery.discover import ResolvedProbe
from ..discovery.elf import ElfImage
from ..discovery.target import Target

FRAGMENTS = resources.bpftrace_fragments()


def fragment(name: str) -> Template:
    return Template((FRAGMENTS / f"{name}.bt").read_text())


def fragment_name(probe: ResolvedProbe) -> str:
    return probe.bpftrace or generic_fragment(probe)


def binary_path(target: Target) -> str:
    """The path bpftrace resolves symbols in: the executable itself, even when it was
    replaced or deleted on disk (then only /proc/PID/exe still reaches it)."""
    if target.pid is None:
        return target.path  # already absolute
    exe = target.exe
    return exe if os.path.exists(exe) and not exe.endswith(" (deleted)") else target.path


def attach_points(kind: str, target: Target, probe: ResolvedProbe) -> str:
    """uprobe:PATH:SYMBOL, or the address where the name lives only in a debug file (or,
    for a function of a library the server runs with, nowhere: glibc's __lll_lock_wait)."""
    if probe.path:  # the library as this host names it (map_files links to it)
        return ",\n".join(f"{kind}:{os.path.realpath(probe.path)}:{s.vaddr:#x}" for s in probe.symbols)
    path = binary_path(target)
    own = target.elf.find([s.name for s in probe.symbols], ".symtab") | \
        target.elf.find([s.name for s in probe.symbols], ".dynsym")
    where = [s.name if s.name in own else f"{s.vaddr:#x}" for s in probe.symbols]
    return ",\n".join(f"{kind}:{path}:{w}" for w in where)


def generic_fragment(probe: ResolvedProbe) -> str:
    return "span" if "return" in probe.programs else "count"


def probe_text(target: Target, probe: ResolvedProbe, by_name: dict[str, ResolvedProbe]) -> str:
    """The probe's fragment filled in; a fragment that needs another probe's uprobes (the
    catalog's bpftrace_with) falls back to the generic one when that probe is missing."""
    fields = {"name": probe.name, "description": probe.description,
              "uprobe": attach_points("uprobe", target, probe),
              "uretprobe": attach_points("uretprobe", target, probe)}
    name = fragment_name(probe)
    for placeholder, other in probe.bpftrace_with.items():
        if other not in by_name:
            name = generic_fragment(probe)
            break
        fields[placeholder] = attach_points("uprobe", target, by_name[other])
    return fragment(name).substitute(fields)


def nameless_in_library(probe: ResolvedProbe) -> bool:
    """A probe in a library whose function has no name there (glibc's __lll_lock_wait, found
    by what calls it): bpftrace refuses an address it cannot place in a symbol ("Could not
    resolve address"), so the script leaves it out."""
    if not probe.path:
        return False
    names = [s.name for s in probe.symbols]
    image = ElfImage(probe.path)
    return not (image.find(names, ".dynsym") or image.find(names, ".symtab"))


def inside_a_function(probe: ResolvedProbe) -> bool:
    """A probe at a call site (free_page_wait on MariaDB 10.6.18+): an offset inside a
    function, which bpftrace refuses where it cannot check the instruction boundary itself
    (0.17: "compiled without (k|u)probe offset support"), and the whole script with it; a
    uretprobe on the callee instead would trap every caller. The script leaves it out."""
    return bool(probe.after_calls)


def script(target: Target, probes: list[ResolvedProbe]) -> str:
    resolved = [p for p in probes if p.ok and not nameless_in_library(p) and not inside_a_function(p)]
    by_name = {p.name: p for p in resolved}
    header = fragment("header").substitute(
        server=target.label, exe=binary_path(target), build_id=target.elf.build_id or "none",
        probes=", ".join(p.name for p in resolved),
        run_hint=f"-p {target.pid}" if target.pid else "")
    # Several logical probes may share one function and fragment (sync_array_wait_event
    # serves block X, SX and other latch sleeps): emit each such pair once.
    unique = {(fragment_name(p), tuple(p.offsets)): p for p in reversed(resolved)}
    body = "".join(probe_text(target, p, by_name) for p in resolved
                   if unique[(fragment_name(p), tuple(p.offsets))] is p)
    return header + body + end_block(body)


def end_block(body: str) -> str:
    """Per-thread scratch maps hold calls still in flight at Ctrl-C: drop them unprinted."""
    scratch = sorted(set(re.findall(r"(@\w+)\[tid\]", body)))
    clears = "".join(f"\tclear({name});\n" for name in scratch)
    return f"\nEND\n{{\n{clears}}}\n" if scratch else ""
