"""Symbolize user stacks of the traced process on the host, while it still runs.

An address becomes (mapped file, file offset) through /proc/PID/maps, then a function
name through that file's ELF symbol tables, demangled. A stack becomes one folded string,
root first and frames joined by ';', the format flame-graph tools read. Each unique stack
is symbolized once.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from innostall.errors import UserError
from innostall.names import demangle

from .debuginfo import find_debug_file
from .elf import ElfImage, FunctionIndex
from .target import Target


@dataclass(frozen=True)
class Mapping:
    start: int
    end: int
    offset: int  # file offset mapped at start
    path: str


def read_maps(pid: int) -> list[Mapping]:
    """The file-backed mappings of a process; [] once it is gone."""
    mappings = []
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and fields[5].startswith("/"):
                    start, end = (int(x, 16) for x in fields[0].split("-"))
                    mappings.append(Mapping(start, end, int(fields[2], 16), fields[5].rstrip("\n")))
    except OSError:
        pass
    return mappings


class StackSymbolizer:
    def __init__(self, target: Target):
        self.target = target
        self._maps: dict[int, list[Mapping]] = {}
        self._indexes: dict[str, FunctionIndex | None] = {}
        self._frames: dict[tuple[int, int], str] = {}
        self._stacks: dict[tuple[int, tuple[int, ...]], str] = {}

    def folded(self, pid: int, addresses: list[int]) -> str:
        """'root;...;leaf' for a stack given innermost first, as the kernel records it."""
        key = (pid, tuple(addresses))
        if key not in self._stacks:
            self._stacks[key] = ";".join(self.frame(pid, a) for a in reversed(addresses))
        return self._stacks[key]

    def frame(self, pid: int, address: int) -> str:
        key = (pid, address)
        if key not in self._frames:
            self._frames[key] = self._symbolize(pid, address)
        return self._frames[key]

    def _symbolize(self, pid: int, address: int) -> str:
        # Every recorded address is a return address (the stack is taken where a function
        # returns): the call that made the frame is just before it, and when that call ends
        # a function the return address already belongs to the next one.
        call = address - 1
        mapping = self._mapping(pid, call)
        if mapping is None:
            return f"[unknown] {address:#x}"
        offset = call - mapping.start + mapping.offset
        index = self._index(pid, mapping)
        name = index.name_at_offset(offset) if index else None
        return demangle(name) if name else f"{os.path.basename(mapping.path)}+{offset:#x}"

    def _mapping(self, pid: int, address: int) -> Mapping | None:
        for fresh in (False, True):  # a miss may be a library mapped since we last looked
            if fresh or pid not in self._maps:
                self._maps[pid] = read_maps(pid)
            for m in self._maps[pid]:
                if m.start <= address < m.end:
                    return m
        return None

    def index_executable(self) -> None:
        """The executable's function index built now, not at the first stack, which comes
        while the probes are attached: MariaDB 11.4.5's symbol table took 0.25 s of CPU,
        read by make bench's 10-s steady windows as 2.5% of a core. The recorder builds it
        while it starts, on the CPU the server leaves (collector/recorder/idle.py)."""
        if self.target.exe not in self._indexes:
            self._indexes[self.target.exe] = self._executable_index()

    def _executable_index(self) -> FunctionIndex:
        return FunctionIndex(self.target.elf, *([self.target.debug] if self.target.debug else []))

    def _index(self, pid: int, mapping: Mapping) -> FunctionIndex | None:
        if mapping.path not in self._indexes:
            self._indexes[mapping.path] = self._open_index(pid, mapping)
        return self._indexes[mapping.path]

    def _open_index(self, pid: int, mapping: Mapping) -> FunctionIndex | None:
        path = mapping.path
        if path == self.target.exe or path == os.path.realpath(self.target.path):
            return self._executable_index()
        try:  # the mapped file itself, whatever root or namespace the server runs in
            image = ElfImage(f"/proc/{pid}/map_files/{mapping.start:x}-{mapping.end:x}")
        except UserError:
            return None
        # a library's debug file names its hidden functions (glibc's __lll_lock_wake ...)
        debug = find_debug_file(image, path, root=f"/proc/{pid}/root")
        return FunctionIndex(image, debug) if debug else FunctionIndex(image)
