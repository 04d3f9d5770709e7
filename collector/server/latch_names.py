"""Which latch is that? Names for the latches the probes saw waited for (latch.bpf.c), from
the server's own objects, read-only:

  block     a buffer block's latch, by its page: the page's index id, read from the
            frame's page header, gives the table and index through the dictionary
            (`dictionary`, read by SQL at start when innostall may log in)
  symbol    an address inside a global object of the server (ELF symbols): the object and
            member from the catalog's [[latch_names]] for this build, else `symbol+offset`
  array     a latch in an array a global points to (lock_sys's hash cells, buf_pool's
            page hash): the catalog says where the pointer and the count are
  heap      an object recognised by reading back from the latch: an index tree latch
            (dict_index_t: its id, name and table read at known offsets and checked), a
            table's lock latch, a tablespace's latch (fil_space_t: its first file must
            point back to it)
  self      latches that carry their identity (rw_lock servers): a mutex's latch id,
            named by the server's own latch_meta table; an rw_lock_t's creation site
            (cfile_name, cline)

Anything else keeps the name `unknown`. `LatchNamer.name_address` names a bare address
(for tables keyed by latch address, such as the holders of a mutex).
"""
from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field

import numpy as np

from innostall.names import address_name, demangle

from ..discovery import layouts
from ..discovery.elf import STT_OBJECT

# enum latch_kind (probes/innostall.h)
LATCH_SRW, LATCH_BLOCK, LATCH_MUTEX, LATCH_RW_LOCK = 0, 1, 2, 3
KIND_NAMES = {LATCH_SRW: "srw_lock", LATCH_BLOCK: "block", LATCH_MUTEX: "mutex",
              LATCH_RW_LOCK: "rw_lock"}
UNKNOWN = "unknown"

# The on-disk page header (fil0types.h, page0types.h), the same in every release
FIL_PAGE_OFFSET, FIL_PAGE_TYPE, FIL_PAGE_SPACE_ID, FIL_PAGE_DATA = 4, 24, 34, 38
PAGE_INDEX_ID = FIL_PAGE_DATA + 28
INDEX_PAGE_TYPES = {17855: "index", 17854: "rtree", 20: "sdi"}  # FIL_PAGE_INDEX, _RTREE, _SDI
PAGE_TYPE_NAMES = {2: "undo log page", 3: "inode page", 5: "trx system page",
                   6: "system page", 7: "trx system page", 8: "space header", 0: "page"}
SOURCE_FILE = re.compile(rb"(?:^|/)([a-z0-9_]+\.(?:cc|c|h|ic))$")
BLOCK_SCAN = 320  # bytes of a block searched for its frame pointer


class ServerMemory:
    """Read-only access to the traced process's memory (/proc/PID/mem, never written)."""

    def __init__(self, pid: int | None):
        self.fd = None
        if pid:
            try:
                self.fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
            except OSError:
                self.fd = None

    def read(self, address: int, size: int) -> bytes | None:
        if self.fd is None or address <= 0:
            return None
        try:
            data = os.pread(self.fd, size, address)
        except (OSError, OverflowError, ValueError):
            return None
        return data if len(data) == size else None

    def u64(self, address: int) -> int | None:
        data = self.read(address, 8)
        return None if data is None else struct.unpack("<Q", data)[0]

    def u32(self, address: int) -> int | None:
        data = self.read(address, 4)
        return None if data is None else struct.unpack("<I", data)[0]

    def cstring(self, address: int, limit: int = 200) -> str | None:
        data = self.read(address, limit) if address else None
        if data is None or b"\0" not in data:
            return None
        text = data[:data.index(b"\0")]
        return text.decode() if text and text.isascii() and text.decode().isprintable() else None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


@dataclass
class NamingRules:
    """The catalog's [[latch_names]] for one build (merged over the entries that hold it)."""
    members: dict[str, list] = field(default_factory=dict)  # symbol -> [[offset, size, name]]
    # the same from the build's DWARF (discovery/layouts.py): each member of a latch-holding
    # global by its own name, for offsets the catalog does not name
    dwarf_members: dict[str, list] = field(default_factory=dict)
    arrays: list = field(default_factory=list)  # [symbol, ptr offset, count offset, elem size, name]
    index_lock: int | None = None  # latch - this = dict_index_t (index tree latch)
    index_id: int = 0  # dict_index_t.id
    index_name: int = 16  # dict_index_t.name (char*)
    index_table: int = 24  # dict_index_t.table
    table_name: int = 16  # dict_table_t.name (char*)
    index_table_name: int | None = None  # dict_index_t.table_name (char*), where it has one
    table_lock: int | None = None  # latch - this = dict_table_t (its lock_latch)
    space_latch: list | None = None  # [latch - fil_space_t, offset of its chain's first fil_node_t]
    mutex_id: int | None = None  # offset of a sync-array mutex's latch_id_t (rw_lock servers)
    rw_lock_file: int | None = None  # rw_lock_t.cfile_name
    rw_lock_line_bits: list | None = None  # [bit offset, width] of rw_lock_t.cline
    latch_meta_at: int = 8  # offset of the begin pointer in the latch_meta vector


def rules_for(entries: list[dict], family: str | None, version: tuple[int, ...],
              in_range) -> NamingRules:
    rules = NamingRules()
    for entry in entries:
        if family in entry["families"] and version and in_range(version, entry["versions"]):
            for key, value in entry.items():
                if key == "members":
                    for symbol, members in value.items():
                        rules.members.setdefault(symbol, []).extend(members)
                elif key == "arrays":
                    rules.arrays.extend(value)
                elif key not in ("families", "versions"):
                    setattr(rules, key, value)
    return rules


class GlobalObjects:
    """Data objects of the executable (.symtab and .dynsym), searchable by runtime address."""

    def __init__(self, images, bias: int):
        starts, ends, names = [], [], []
        for image in images:
            for table in (".symtab", ".dynsym"):
                symbols = image.symbol_table(table) if image else None
                if symbols is None:
                    continue
                syms, strtab = symbols
                syms = syms[((syms["info"] & 0xF) == STT_OBJECT) & (syms["size"] > 0)
                            & (syms["shndx"] != 0)]
                starts.append(syms["value"] + bias)
                ends.append(syms["value"] + syms["size"] + bias)
                names += [(strtab, int(n)) for n in syms["name"]]
        self.starts = np.concatenate(starts) if starts else np.empty(0, "<u8")
        self.ends = np.concatenate(ends) if ends else np.empty(0, "<u8")
        order = np.argsort(self.starts, kind="stable")
        self.starts, self.ends = self.starts[order], self.ends[order]
        self.names = [names[i] for i in order]
        self.bias = bias

    def find(self, address: int) -> tuple[str, int] | None:
        """(symbol, offset) of the object holding address."""
        i = int(np.searchsorted(self.starts, address, side="right")) - 1
        if i < 0 or address >= int(self.ends[i]):
            return None
        strtab, at = self.names[i]
        return strtab[at:strtab.index(b"\0", at)].decode(errors="replace"), address - int(self.starts[i])

    def address_of(self, symbol: str) -> int | None:
        for i, (strtab, at) in enumerate(self.names):
            if strtab[at:at + len(symbol) + 1] == symbol.encode() + b"\0":
                return int(self.starts[i])
        return None


class LatchNamer:
    """Names latches of one running server. dictionary: index id -> (table, index)."""

    def __init__(self, memory: ServerMemory, objects: GlobalObjects | None, rules: NamingRules,
                 dictionary: dict[int, tuple[str, str]] | None = None):
        self.memory = memory
        self.objects = objects
        self.rules = rules
        self.dictionary = dictionary or {}
        self.cache: dict[tuple[int, int], tuple[str, str]] = {}
        self._latch_meta: list[str | None] | None = None
        self._arrays: list[tuple[int, int, int, str]] | None = None

    # --- the entry points ------------------------------------------------------------------
    def name(self, kind: int, ident: int, address: int) -> tuple[str, str]:
        """(name, kind label) of one latch: a block's by its page (ident), any other by its
        address. Names found are kept; `unknown` is asked again next time."""
        key = (kind, ident)
        if key in self.cache:
            return self.cache[key]
        if kind == LATCH_BLOCK:
            found = self.block_name(ident >> 32, ident & 0xFFFFFFFF, address)
        else:
            found = self.name_address(ident, kind)
        if found[0] != UNKNOWN and found[0] != f"block {ident >> 32}:{ident & 0xFFFFFFFF}":
            self.cache[key] = found  # a bare page is asked again: its frame may be found later
        return found

    def name_address(self, address: int, kind: int = LATCH_SRW) -> tuple[str, str]:
        """(name, kind label) of the latch at address, whatever holds it."""
        label = KIND_NAMES.get(kind, "latch")
        for finder in (self.self_named, self.global_member, self.array_member,
                       self.index_lock, self.table_lock, self.space_latch):
            found = finder(address, kind)
            if found:
                return found if isinstance(found, tuple) else (found, label)
        return UNKNOWN, label

    # --- blocks ------------------------------------------------------------------------
    def block_name(self, space: int, page_no: int, block_latch: int) -> tuple[str, str]:
        """`block SPACE:PAGE table index` when the page's index is in the dictionary, else
        what its header says it is."""
        where = f"block {space}:{page_no}"
        frame = self.block_frame(block_latch, space, page_no)
        if frame is None:
            return where, "block"
        page_type = struct.unpack(">H", frame[FIL_PAGE_TYPE:FIL_PAGE_TYPE + 2])[0]
        if page_type in INDEX_PAGE_TYPES:
            index_id = struct.unpack(">Q", frame[PAGE_INDEX_ID:PAGE_INDEX_ID + 8])[0]
            table_index = self.dictionary.get(index_id)
            if table_index:
                return f"{where} {table_index[0]} {table_index[1]}", "block"
            return f"{where} index id {index_id}", "block"
        return f"{where} {PAGE_TYPE_NAMES.get(page_type, f'page type {page_type}')}", "block"

    def block_frame(self, block_latch: int, space: int, page_no: int) -> bytes | None:
        """The header of the page's frame: the block's frame pointer is found among its first
        bytes as the page-aligned pointer whose frame names this very page, so no layout is
        needed, and a block that moved on to another page is not misread."""
        block = self.memory.read(block_latch - BLOCK_SCAN // 2, BLOCK_SCAN)
        if block is None:
            return None
        for (pointer,) in struct.iter_unpack("<Q", block):
            if pointer and not pointer & 4095 and pointer > 1 << 20:
                header = self.memory.read(pointer, PAGE_INDEX_ID + 8)
                if header and struct.unpack(">I", header[FIL_PAGE_OFFSET:FIL_PAGE_OFFSET + 4])[0] == page_no \
                        and struct.unpack(">I", header[FIL_PAGE_SPACE_ID:FIL_PAGE_SPACE_ID + 4])[0] == space:
                    return header
        return None

    # --- globals -------------------------------------------------------------------------
    def global_member(self, address: int, kind: int) -> str | None:
        found = self.objects.find(address) if self.objects else None
        if not found:
            return None
        symbol, offset = found
        in_dwarf = self.rules.dwarf_members.get(demangle(symbol), [])  # by its source name
        for start, size, name in self.rules.members.get(symbol, []) + in_dwarf:
            if start <= offset < start + size:
                return name
        return address_name(demangle(symbol), offset)  # a static's name is mangled: _ZL10flush_lock

    def array_member(self, address: int, kind: int) -> str | None:
        for start, end, name in self.arrays():
            if start <= address < end:
                return name
        return None

    def arrays(self) -> list[tuple[int, int, str]]:
        """[start, end) of each array of latches a global points to, read once."""
        if self._arrays is None:
            self._arrays = []
            for symbol, pointer_at, count_at, element, name in self.rules.arrays:
                base = self.objects.address_of(symbol) if self.objects else None
                start = self.memory.u64(base + pointer_at) if base else None
                count = self.memory.u64(base + count_at) if base else None
                if start and count and count < 1 << 32:
                    self._arrays.append((start, start + count * element, name))
        return self._arrays

    # --- heap objects ----------------------------------------------------------------------
    def index_lock(self, address: int, kind: int) -> tuple[str, str] | None:
        r = self.rules
        if r.index_lock is None:
            return None
        index = address - r.index_lock
        named = self.index_of(index)
        return (f"index tree {named[0]} {named[1]}", "index") if named else None

    def index_at(self, index: int) -> tuple[str, str] | None:
        """index_of, cached by address: an index object lives as long as its table is cached."""
        key = (-1, index)
        if key not in self.cache:
            named = self.index_of(index)
            if not named:
                return None
            self.cache[key] = named
        return self.cache[key]

    def index_of(self, index: int) -> tuple[str, str] | None:
        """(table, index) of a dict_index_t, or None when the memory there is not one: its
        name and its table's name must be readable, and the dictionary, where known, must
        give that id the same names."""
        r = self.rules
        index_id = self.memory.u64(index + r.index_id)
        name = self.memory.cstring(self.memory.u64(index + r.index_name) or 0, 65)
        if r.index_table_name is not None:  # the index keeps its table's name itself
            table_name = self.memory.cstring(self.memory.u64(index + r.index_table_name) or 0)
        else:
            table = self.memory.u64(index + r.index_table)
            table_name = self.memory.cstring(self.memory.u64((table or 0) + r.table_name) or 0)
        if not name or not table_name or "/" not in table_name:
            return None
        known = self.dictionary.get(index_id)
        if known and known[1] != name:
            return None
        return table_name, name

    def table_lock(self, address: int, kind: int) -> str | None:
        r = self.rules
        if r.table_lock is None:
            return None
        name = self.memory.cstring(self.memory.u64(address - r.table_lock + r.table_name) or 0)
        return f"table lock {name}" if name and "/" in name else None

    def space_latch(self, address: int, kind: int) -> str | None:
        """`tablespace latch sbtest/sbtest1`: a fil_space_t is recognised by its first file
        (fil_node_t: space, then name), which points back to it."""
        if self.rules.space_latch is None:
            return None
        latch_at, chain_start = self.rules.space_latch
        space = address - latch_at
        node = self.memory.u64(space + chain_start)
        if not node or self.memory.u64(node) != space:
            return None
        path = self.memory.cstring(self.memory.u64(node + 8) or 0)
        if not path:
            return None
        name = path.removeprefix("./").removesuffix(".ibd")
        return f"tablespace latch {name}"

    def self_named(self, address: int, kind: int) -> str | None:
        r = self.rules
        if kind == LATCH_MUTEX and r.mutex_id is not None:
            latch_id = self.memory.u32(address + r.mutex_id)
            names = self.latch_meta()
            if latch_id is not None and 0 < latch_id < len(names) and names[latch_id]:
                return f"{names[latch_id].lower()}_mutex"
        if kind == LATCH_RW_LOCK and r.rw_lock_file is not None:
            return self.rw_lock_site(address)
        return None

    def rw_lock_site(self, address: int) -> str | None:
        """`rw_lock created at FILE:LINE`: rw_lock_t keeps its creation site."""
        r = self.rules
        path = self.memory.cstring(self.memory.u64(address + r.rw_lock_file) or 0)
        m = SOURCE_FILE.search(path.encode()) if path else None
        if not m:
            return None
        site = m.group(1).decode()
        if r.rw_lock_line_bits:
            bit, width = r.rw_lock_line_bits
            word = self.memory.u64(address + bit // 8)
            if word is not None:
                site += f":{(word >> (bit % 8)) & ((1 << width) - 1)}"
        return f"rw_lock {site}"

    def latch_meta(self) -> list[str | None]:
        """The server's latch names by latch_id_t (MySQL 5.7/8.x, MariaDB 10.2-10.5): the
        global `latch_meta`, a vector of latch_meta_t*, each with m_id, then m_name."""
        if self._latch_meta is None:
            self._latch_meta = []
            base = self.objects.address_of("latch_meta") if self.objects else None
            at = self.rules.latch_meta_at
            start, end = (self.memory.u64(base + at), self.memory.u64(base + at + 8)) if base else (None, None)
            if start and end and 0 < end - start < 8 * 4096:
                for i in range((end - start) // 8):
                    meta = self.memory.u64(start + 8 * i)
                    ok = meta and self.memory.u32(meta) == i
                    self._latch_meta.append(self.memory.cstring(self.memory.u64(meta + 8) or 0) if ok else None)
        return self._latch_meta


def naming_rules(target) -> NamingRules:
    from ..discovery.discover import catalog_file, in_range
    rules = rules_for(catalog_file().get("latch_names", []), target.family,
                      target.version_tuple(), in_range)
    rules.dwarf_members = (layouts.layout_of(target.elf, target.debug) or {}).get("globals", {})
    return rules


def namer_for(target, dictionary: dict | None, rules: NamingRules | None = None) -> LatchNamer:
    """A namer for a running target (its memory, its symbols at their runtime addresses)."""
    memory = ServerMemory(target.pid)
    bias = target.runtime_address(0) if target.pid else None
    objects = GlobalObjects([target.elf, target.debug], bias) if bias is not None else None
    return LatchNamer(memory, objects, rules or naming_rules(target), dictionary)
