"""The C library the traced server runs with: where it is mapped, its functions (the
pthread mutex's wait is not exported), and its frame table for the BPF unwinder.

Debian builds glibc without frame pointers: a stack taken inside it loses the server
function that called it. The table turns libc's .eh_frame (DWARF call frame information)
into rows the BPF programs search (probes/unwind.bpf.h, struct cfi_row): from each row's
pc on, the caller's frame (CFA) is rsp or rbp plus an offset, and rbp may have been saved
at an offset from it. Rows whose rule is anything else (an expression: PLT stubs, signal
frames) and gaps between functions stop the unwinder.
"""
from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from elftools.dwarf.callframe import FDE
from elftools.common.exceptions import DWARFError

from innostall.errors import UserError

from .debuginfo import find_debug_file
from .elf import ElfImage, Symbol
from .symbolize import read_maps

LIBC_NAME = re.compile(r"/libc(?:\.so\.6|-[\d.]+\.so)$")
CFI_ROW = np.dtype([("pc", "<u4"), ("cfa_offset", "<i4"), ("cfa_base", "u1"), ("rbp_offset", "i1"),
                    ("pad", "<u2")])
CFA_UNKNOWN, CFA_RSP, CFA_RBP = 0, 1, 2  # enum cfa_base
DWARF_RSP, DWARF_RBP = 7, 6  # x86-64 DWARF register numbers
MAX_CFI_ROWS = 65536  # innostall.h
CFI_PAGE_SHIFT, MAX_CFI_PAGES = 12, 8192  # innostall.h
DW_CFA_GNU_ARGS_SIZE = 0x2E


@dataclass
class Libc:
    path: str  # as this host opens it: /proc/PID/map_files/START-END
    image: ElfImage
    bias: int  # runtime address minus link-time address
    root: str | None = None

    @cached_property
    def debug(self) -> ElfImage | None:
        """Its separate debug file (libc6-dbg), where the hidden functions are named."""
        return find_debug_file(self.image, self.path, root=self.root)

    def text_range(self) -> tuple[int, int]:
        """Where its code lies in the process: the executable segment."""
        segs = [s for s in self.image.load_segments if s.flags & 1]
        lo = min(s.vaddr for s in segs)
        hi = max(s.vaddr + s.memsz for s in segs)
        return lo + self.bias, hi + self.bias

    def functions(self, names: list[str]) -> dict[str, Symbol]:
        found: dict[str, Symbol] = {}
        for image, table in [(self.image, ".symtab"), (self.debug, ".symtab"), (self.image, ".dynsym")]:
            wanted = [n for n in names if n not in found]
            if image and wanted:
                found.update(image.find(wanted, table))
        return found

    def file_offset(self, vaddr: int) -> int:
        return self.image.file_offset(vaddr)


def find(pid: int | None) -> Libc | None:
    """The libc mapped in the process, or None (no process, or a static build)."""
    if not pid:
        return None
    for m in read_maps(pid):
        if LIBC_NAME.search(m.path) and m.offset == 0:
            # The mapped file itself, whatever root or mount namespace the server runs in
            # (maps shows paths as this process sees them: a chroot's under its directory,
            # a container's maybe not at all); uprobes attach through it as well.
            path = f"/proc/{pid}/map_files/{m.start:x}-{m.end:x}"
            try:
                image = ElfImage(path)
            except UserError:
                return None
            root = f"/proc/{pid}/root"
            return Libc(path, image, m.start - image.first_load_vaddr,
                        root if os.path.realpath(root) != "/" else None)
    return None


# --- the hidden wait function ---------------------------------------------------------

def call_targets(libc: Libc, caller: str) -> Counter:
    """Functions a function calls directly (e8 rel32), as counts by target, keeping only
    targets where .eh_frame says a function begins: a stray e8 byte inside another
    instruction almost never lands on one."""
    sym = libc.functions([caller]).get(caller)
    if not sym or not sym.size:
        return Counter()
    code = libc.image._map[libc.file_offset(sym.vaddr):libc.file_offset(sym.vaddr) + sym.size]
    starts = function_starts(libc.image)
    targets = Counter()
    for i in range(len(code) - 4):
        if code[i] == 0xE8:
            target = sym.vaddr + i + 5 + int.from_bytes(code[i + 1:i + 5], "little", signed=True)
            if target in starts:
                targets[target] += 1
    return targets


FUTEX_SYSCALL = re.compile(rb"\xb8\xca\x00\x00\x00.{0,32}?\x0f\x05", re.S)  # mov $SYS_futex,%eax .. syscall


def hidden_callee(libc: Libc, caller: str) -> Symbol | None:
    """The function `caller` calls that no exported symbol names and that makes the futex
    system call itself: in glibc 2.34+, pthread_mutex_lock's __lll_lock_wait (its stripped
    builds keep no name for it; its other hidden callees, such as the priority-protocol
    helpers, make no futex call)."""
    exported = {s.vaddr for s in exported_functions(libc.image)}
    sizes = {e["initial_location"]: e["address_range"] for e in fde_entries(libc.image)}
    waits = []
    for target, calls in call_targets(libc, caller).items():
        start = libc.file_offset(target)
        if target not in exported and FUTEX_SYSCALL.search(libc.image._map[start:start + sizes[target]]):
            waits.append((calls, target))
    if not waits:
        return None
    return Symbol(f"{caller}'s futex wait", max(waits)[1], 0, ".eh_frame")


def exported_functions(image: ElfImage) -> list[Symbol]:
    section = image._elf.get_section_by_name(".dynsym")
    return [Symbol(s.name, s["st_value"], s["st_size"], ".dynsym") for s in section.iter_symbols()
            if s["st_info"]["type"] == "STT_FUNC" and s["st_value"]] if section else []


def function_starts(image: ElfImage) -> set[int]:
    return {entry["initial_location"] for entry in fde_entries(image)}


def fde_entries(image: ElfImage) -> list[FDE]:
    if not image._elf.get_section_by_name(".eh_frame"):
        return []
    dwarf = image._elf.get_dwarf_info(follow_links=False)
    return [e for e in dwarf.EH_CFI_entries() if isinstance(e, FDE)]


# --- the frame table --------------------------------------------------------------------

def row_of(row: dict) -> tuple[int, int, int]:
    """(cfa_base, cfa_offset, rbp_offset) of one decoded CFI row."""
    cfa = row["cfa"]
    if cfa.expr is not None or cfa.reg not in (DWARF_RSP, DWARF_RBP) or not -2**31 <= cfa.offset < 2**31:
        return CFA_UNKNOWN, 0, 0
    rbp = row.get(DWARF_RBP)
    rbp_offset = rbp.arg if rbp is not None and rbp.type == "OFFSET" else 0
    if not -128 <= rbp_offset < 128:
        return CFA_UNKNOWN, 0, 0
    return (CFA_RSP if cfa.reg == DWARF_RSP else CFA_RBP), cfa.offset, rbp_offset


def cfi_table(image: ElfImage) -> np.ndarray:
    """The rows of struct cfi_row, sorted by pc; each function's rows end with a stop row
    at its end unless the next function starts there."""
    rows: dict[int, tuple[int, int, int]] = {}
    ends: set[int] = set()
    for fde in fde_entries(image):
        start, end = fde["initial_location"], fde["initial_location"] + fde["address_range"]
        # DW_CFA_GNU_args_size (0x2e) says how much a call pushed, nothing about the frame;
        # pyelftools cannot decode it
        fde.instructions = [i for i in fde.instructions if i.opcode != DW_CFA_GNU_ARGS_SIZE]
        try:
            decoded = fde.get_decoded().table
        except (DWARFError, ValueError, KeyError, AssertionError):
            decoded = []  # an opcode pyelftools does not know: this function stops the unwinder
        rows[start] = (CFA_UNKNOWN, 0, 0)
        for row in decoded:
            if start <= row["pc"] < end:
                rows[row["pc"]] = row_of(row)
        ends.add(end)
    for end in ends - rows.keys():
        rows[end] = (CFA_UNKNOWN, 0, 0)
    table = np.zeros(len(rows), dtype=CFI_ROW)
    for i, pc in enumerate(sorted(rows)):
        base, offset, rbp = rows[pc]
        table[i] = (pc, offset, base, rbp, 0)
    return table


def page_index(table: np.ndarray) -> np.ndarray:
    """For each 4 KB page up to the table's last, the row in force at its first byte (the
    search's start; probes/unwind.bpf.h); none when libc is too large for the map."""
    pages = (int(table["pc"][-1]) >> CFI_PAGE_SHIFT) + 2
    if pages > MAX_CFI_PAGES:
        return np.zeros(0, "<u4")
    starts = np.arange(pages, dtype=np.uint64) << CFI_PAGE_SHIFT
    return np.maximum(np.searchsorted(table["pc"], starts, side="right") - 1, 0).astype("<u4")


def unwind_settings(libc: Libc, rows: int, pages: int) -> dict[str, int]:
    """The loader's --set values that go with a table of rows rows and pages index pages
    (probes/unwind.bpf.h)."""
    lo, hi = libc.text_range()
    return {"libc_text_lo": lo, "libc_text_hi": hi, "libc_bias": libc.bias,
            "libc_cfi_rows": rows, "libc_cfi_page_count": pages}


def main(argv: list[str]) -> int:
    """python -m innostall.collector.discovery.libc PID PATH: write the libc frame table of process
    PID to PATH, its counts to PATH.json, and print its settings as JSON (nothing when
    there is none). The recorder runs it in a process of its own: decoding libc's
    .eh_frame takes about 100 MB, which the recorder, running next to the database, keeps
    for nothing once the table is out."""
    lib = find(int(argv[0]))
    settings = write_table(lib, argv[1]) if lib else None
    if settings:
        keep_counts(argv[1], settings)
        print(json.dumps(settings))
    return 0


def write_table(libc: Libc, path: str) -> dict[str, int] | None:
    """Write libc's frame table, then its page index, to path (atomically: a cached table
    is read by other recorders); the settings that go with them, or None when the table
    does not fit the BPF map (the stacks then stop at libc's first frame)."""
    table = cfi_table(libc.image)
    if not len(table) or len(table) > MAX_CFI_ROWS:
        return None
    pages = page_index(table)
    with open(path + ".tmp", "wb") as f:
        table.tofile(f)
        pages.tofile(f)
    os.replace(path + ".tmp", path)
    return unwind_settings(libc, len(table), len(pages))


# --- the table, cached per libc build ------------------------------------------------------
# Decoding .eh_frame costs about a second of CPU at every start, next to a busy server, and
# its result depends on the libc file alone: it is kept per build-id, with its row and page
# counts beside it, which a start that finds it reads instead of decoding.

TABLE_FORMAT = 1  # raise when CFI_ROW, the page index or what the rows mean change


def cached_table_path(libc: Libc, cache_dir: str) -> str | None:
    """Where libc's table is kept, whether or not it is there yet; None for a libc without a
    build-id, which cannot be told from another."""
    build_id = libc.image.build_id
    return os.path.join(cache_dir, f"libc-cfi-v{TABLE_FORMAT}-{build_id}.bin") if build_id else None


def cached_settings(libc: Libc, path: str) -> dict[str, int] | None:
    """The settings of the table cached at path, from the counts beside it (path.json), or
    None when either is missing or the file's size is not what they say (a damaged or
    half-written table is decoded again)."""
    try:
        with open(path + ".json") as f:
            counts = json.load(f)
        rows, pages = int(counts["rows"]), int(counts["pages"])
        size = os.path.getsize(path)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if size != rows * CFI_ROW.itemsize + pages * np.dtype("<u4").itemsize:
        return None
    return unwind_settings(libc, rows, pages)


def keep_counts(path: str, settings: dict[str, int]) -> None:
    """What cached_settings reads back, written beside a table just written to the cache."""
    with open(path + ".json.tmp", "w") as f:
        json.dump({"rows": settings["libc_cfi_rows"], "pages": settings["libc_cfi_page_count"]}, f)
    os.replace(path + ".json.tmp", path + ".json")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
