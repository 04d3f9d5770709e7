"""ELF facts discovery needs: symbols, build-id, and the file offsets uprobes attach at.

Server binaries are large (MariaDB 11.4 with DWARF: ~300 MB, ~100k function symbols), so
symbol tables are read as numpy record arrays from a memory map instead of one Python
object per symbol, and names are found in the string table with bytes.find.
"""
from __future__ import annotations

import mmap
import zlib
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from innostall.errors import UserError

ELF_MAGIC = b"\x7fELF"
STT_OBJECT, STT_FUNC = 1, 2
VERSYM_HIDDEN = 0x8000  # .gnu.version: the symbol is a non-default version (name@VERSION)
SYM_DTYPE = np.dtype([("name", "<u4"), ("info", "u1"), ("other", "u1"),
                      ("shndx", "<u2"), ("value", "<u8"), ("size", "<u8")])
RELA_DTYPE = np.dtype([("offset", "<u8"), ("info", "<u8"), ("addend", "<i8")])
SHDR_DTYPE = np.dtype([("name", "<u4"), ("type", "<u4"), ("flags", "<u8"), ("addr", "<u8"),
                       ("offset", "<u8"), ("size", "<u8"), ("link", "<u4"), ("info", "<u4"),
                       ("addralign", "<u8"), ("entsize", "<u8")])
SHF_ALLOC = 2
SHT_NOBITS = 8
NT_GNU_BUILD_ID = 3
PHDR_DTYPE = np.dtype([("type", "<u4"), ("flags", "<u4"), ("offset", "<u8"), ("vaddr", "<u8"),
                       ("paddr", "<u8"), ("filesz", "<u8"), ("memsz", "<u8"), ("align", "<u8")])
PT_LOAD = 1


@dataclass(frozen=True)
class Segment:
    """A loadable segment, from its program header."""
    offset: int
    vaddr: int
    filesz: int
    memsz: int
    flags: int  # PF_X 1, PF_W 2, PF_R 4
R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT = 6, 7


@dataclass(frozen=True)
class Symbol:
    name: str
    vaddr: int
    size: int
    table: str  # ".symtab" or ".dynsym"


class ElfImage:
    """A read-only view of one ELF executable."""

    def __init__(self, path: str):
        self.path = path
        try:
            with open(path, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        except FileNotFoundError:
            raise UserError(f"{path}: no such file")
        except (PermissionError, IsADirectoryError) as e:
            raise UserError(f"{path}: cannot read ({e.strerror})")
        except ValueError:
            raise UserError(f"{path}: empty file, not an ELF executable")
        if self._map[:4] != ELF_MAGIC:
            raise UserError(f"{path}: not an ELF file")
        try:
            self._elf = ELFFile(self._map)
        except ELFError as e:
            raise UserError(f"{path}: unreadable ELF file ({e})")
        if self._elf.elfclass != 64 or self._elf["e_machine"] != "EM_X86_64":
            raise UserError(f"{path}: not an x86-64 executable; innostall supports x86-64 only")
        self._symbol_tables: dict[str, tuple[np.ndarray, bytes] | None] = {}

    @property
    def is_pie(self) -> bool:
        return self._elf["e_type"] == "ET_DYN"

    @cached_property
    def first_load_vaddr(self) -> int:
        """Link-time address of the first loadable segment, page-aligned: a PIE's load
        base is where the kernel mapped this."""
        first = min(seg.vaddr for seg in self.load_segments)
        return first & ~0xFFF

    @cached_property
    def load_segments(self) -> list[Segment]:
        """The PT_LOAD segments, from the program headers read as an array: pyelftools'
        iter_segments builds every segment, and builds the dynamic one by walking the
        section headers for its string table, on each call."""
        header = self._elf.header
        count, at = header["e_phnum"], header["e_phoff"]
        if not count or header["e_phentsize"] != PHDR_DTYPE.itemsize:
            return []
        headers = np.frombuffer(self._map, dtype=PHDR_DTYPE, count=count, offset=at)
        return [Segment(int(h["offset"]), int(h["vaddr"]), int(h["filesz"]), int(h["memsz"]), int(h["flags"]))
                for h in headers[headers["type"] == PT_LOAD]]

    @cached_property
    def _section_headers(self) -> np.ndarray:
        """The section headers read as an array: pyelftools' get_section_by_name and
        iter_sections build every section first, and a .gnu.hash one by parsing its whole
        table (0.2 s on a MySQL server, at each start)."""
        header = self._elf.header
        count, at = header["e_shnum"], header["e_shoff"]
        if not count or header["e_shentsize"] != SHDR_DTYPE.itemsize \
                or at + count * SHDR_DTYPE.itemsize > len(self._map) or header["e_shstrndx"] >= count:
            return np.empty(0, SHDR_DTYPE)
        return np.frombuffer(self._map, dtype=SHDR_DTYPE, count=count, offset=at)

    @cached_property
    def _section_names(self) -> list[str]:
        """Each section header's name, in their order."""
        headers = self._section_headers
        if not len(headers):
            return []
        names_at = int(headers[self._elf.header["e_shstrndx"]]["offset"])
        starts = [names_at + int(h["name"]) for h in headers]
        return [self._map[at:self._map.find(b"\0", at)].decode(errors="replace") for at in starts]

    @cached_property
    def _sections(self) -> dict[str, int]:
        """Section name -> its index among the headers (the last of a name, as pyelftools)."""
        return {name: i for i, name in enumerate(self._section_names)}

    def _header(self, name: str):
        """The section's header, or None where there is no such section or it has no bytes
        in the file (a stripped file keeps NOBITS headers)."""
        index = self._sections.get(name)
        return None if index is None else self._header_at(index)

    def _header_at(self, index: int):
        if not 0 <= index < len(self._section_headers) \
                or int(self._section_headers[index]["type"]) == SHT_NOBITS:
            return None
        return self._section_headers[index]

    def _bytes_of(self, header) -> bytes:
        if header is None:
            return b""
        start = int(header["offset"])
        return self._map[start:start + int(header["size"])]

    @cached_property
    def build_id(self) -> str | None:
        """The GNU build id (hex), from the .note.gnu.build-id note read in place."""
        note = self.section_bytes(".note.gnu.build-id")
        at = 0
        while at + 12 <= len(note):
            name_size, desc_size, kind = (int.from_bytes(note[at + i:at + i + 4], "little") for i in (0, 4, 8))
            name_end = at + 12 + ((name_size + 3) & ~3)
            if kind == NT_GNU_BUILD_ID and note[at + 12:at + 12 + name_size] == b"GNU\0":
                return note[name_end:name_end + desc_size].hex() or None
            at = name_end + ((desc_size + 3) & ~3)
        return None

    @cached_property
    def has_symtab(self) -> bool:
        return self.has_section(".symtab")

    def has_section(self, name: str) -> bool:
        """A section of that name with contents (a stripped file keeps NOBITS headers)."""
        header = self._header(name)
        return header is not None and int(header["size"]) > 0

    @cached_property
    def debuglink(self) -> tuple[str, int] | None:
        """(file name, CRC32) from .gnu_debuglink: where distros put the stripped symbols."""
        data = self.section_bytes(".gnu_debuglink")
        if not data or b"\0" not in data:
            return None
        name = data[:data.index(b"\0")].decode(errors="replace")
        crc_at = (data.index(b"\0") + 4) & ~3
        return name, int.from_bytes(data[crc_at:crc_at + 4], "little")

    def crc32(self) -> int:
        return zlib.crc32(self._map)

    def section_bytes(self, name: str) -> bytes:
        return self._bytes_of(self._header(name))

    def symbol_table(self, table: str) -> tuple[np.ndarray, bytes] | None:
        """(the symbols, their string table) of .symtab or .dynsym, or None where the file
        has none; copied out of the file once (a start looks names up ~80 times, and a
        server's string table is megabytes)."""
        if table not in self._symbol_tables:
            header = self._header(table)
            strings = None if header is None else self._header_at(int(header["link"]))
            self._symbol_tables[table] = None if strings is None else (
                np.frombuffer(self._bytes_of(header), dtype=SYM_DTYPE), self._bytes_of(strings))
        return self._symbol_tables[table]

    def find(self, names: list[str], table: str, sym_type: int = STT_FUNC) -> dict[str, Symbol]:
        """Defined symbols of one type among `names`, in one symbol table."""
        if (symbols := self.symbol_table(table)) is None:
            return {}
        syms, strtab = symbols
        offsets = _string_offsets(strtab, names)
        if not offsets:
            return {}
        wanted = np.isin(syms["name"], list(offsets)) & ((syms["info"] & 0xF) == sym_type) \
            & (syms["shndx"] != 0) & (syms["value"] != 0)
        if table == ".dynsym" and self._header(".gnu.version") is not None:
            # a name a library keeps in several versions (glibc's pthread_cond_wait@GLIBC_2.2.5
            # and @@GLIBC_2.3.2) is the default one, the one programs link to: hidden ones are not
            versions = np.frombuffer(self.section_bytes(".gnu.version"), dtype="<u2")
            wanted &= (versions[:len(syms)] & VERSYM_HIDDEN) == 0 if len(versions) == len(syms) else True
        hits = syms[wanted]
        return {offsets[int(s["name"])]: Symbol(offsets[int(s["name"])], int(s["value"]),
                                                int(s["size"]), table) for s in hits}

    def names_mentioning(self, identifier: str, table: str) -> list[str]:
        """Mangled names in one table's strings that contain identifier as a name
        component (its length, then itself: "9trx_purge"): the candidates for a function
        looked up by its demangled name, found without demangling the whole table."""
        symbols = self.symbol_table(table)
        return [] if symbols is None else _mangled_names_mentioning(symbols[1], identifier)

    @cached_property
    def import_slots(self) -> dict[int, str]:
        """GOT slot address -> the imported function or object the dynamic linker writes
        there (R_X86_64_JUMP_SLOT and R_X86_64_GLOB_DAT relocations, read as arrays: a
        server's .rela.dyn holds hundreds of thousands of relative ones): what a PLT stub
        or a `call *slot(%rip)` reaches."""
        names = self.section_bytes(".dynstr")
        syms = np.frombuffer(self.section_bytes(".dynsym"), dtype=SYM_DTYPE)
        slots = {}
        for table in (".rela.plt", ".rela.dyn"):
            rela = np.frombuffer(self.section_bytes(table), dtype=RELA_DTYPE)
            kinds = rela["info"] & 0xFFFFFFFF
            for entry in rela[(kinds == R_X86_64_GLOB_DAT) | (kinds == R_X86_64_JUMP_SLOT)]:
                index = int(entry["info"]) >> 32
                if 0 < index < len(syms):
                    start = int(syms[index]["name"])
                    slots[int(entry["offset"])] = names[start:names.index(b"\0", start)].decode(errors="replace")
        return slots

    @cached_property
    def _allocated_sections(self) -> list[tuple[int, int, str]]:
        """(start, end, name) of each section loaded into memory, in the headers' order."""
        return [(int(h["addr"]), int(h["addr"]) + int(h["size"]), name)
                for h, name in zip(self._section_headers, self._section_names) if int(h["flags"]) & SHF_ALLOC]

    def section_of(self, vaddr: int) -> str | None:
        """The name of the allocated section holding vaddr (.text, .plt, .plt.sec ...)."""
        return next((name for start, end, name in self._allocated_sections if start <= vaddr < end), None)

    def read(self, vaddr: int, size: int) -> bytes:
        """size bytes of the file's image at a virtual address (code, read-only data)."""
        start = self.file_offset(vaddr)
        return bytes(self._map[start:start + size])

    def file_offset(self, vaddr: int) -> int:
        """The file offset of a virtual address: what a uprobe is attached at."""
        for seg in self.load_segments:
            if seg.vaddr <= vaddr < seg.vaddr + seg.filesz:
                return vaddr - seg.vaddr + seg.offset
        raise UserError(f"{self.path}: address {vaddr:#x} is in no loadable segment")


def _string_offsets(strtab: bytes, names: list[str]) -> dict[int, str]:
    """Offsets in a string table at which each name starts (tail-merged strings included).
    Each name is looked for on its own with bytes.find: a server's table holds megabytes,
    and one regular expression of the names took 5 ms a scan where find takes 1 ms, over the
    ~40 lookups of a start. A name that ends another wanted one is found too."""
    return {at: name for name in names for at in _occurrences(strtab, name.encode() + b"\0")}


def _mangled_names_mentioning(strtab: bytes, identifier: str) -> list[str]:
    """The mangled names of a string table holding identifier as a name component (see
    ElfImage.names_mentioning), found with bytes.find as _string_offsets' names are."""
    needle = str(len(identifier)).encode() + identifier.encode()
    names = set()
    for at in _occurrences(strtab, needle):
        if at and strtab[at - 1:at].isdigit():  # "19trx_purge..." holds no "9trx_purge"
            continue
        start = strtab.rfind(b"\0", 0, at) + 1
        name = strtab[start:strtab.index(b"\0", at + len(needle))]
        if name.startswith(b"_Z"):
            names.add(name.decode(errors="replace"))
    return sorted(names)


def _occurrences(data: bytes, needle: bytes):
    """Every offset at which needle starts in data, overlapping ones included."""
    at = data.find(needle)
    while at >= 0:
        yield at
        at = data.find(needle, at + 1)


class FunctionIndex:
    """Address -> function name for one program: the defined function symbols of every
    given image's .symtab and .dynsym (an executable and, say, its separate debug file,
    which share addresses), sorted by start address and searched by bisection. Names are
    decoded only for the addresses asked about."""

    def __init__(self, *images: ElfImage):
        self._strtabs: list[bytes] = []
        parts = [self._functions(image, table) for image in images
                 for table in (".symtab", ".dynsym")]
        table = np.concatenate([p for p in parts if len(p)] or [np.empty(0, _INDEX_DTYPE)])
        table.sort(order="start", kind="stable")
        self._table = table
        self._starts = table["start"]
        self.segments = _load_segments(images[0])  # (file offset, vaddr, size) per PT_LOAD

    def _functions(self, image: ElfImage, table_name: str) -> np.ndarray:
        if (symbols := image.symbol_table(table_name)) is None:
            return np.empty(0, _INDEX_DTYPE)
        syms, strtab = symbols
        syms = syms[((syms["info"] & 0xF) == STT_FUNC) & (syms["shndx"] != 0) & (syms["value"] != 0)]
        out = np.empty(len(syms), _INDEX_DTYPE)
        out["start"] = syms["value"]
        out["end"] = syms["value"] + np.maximum(syms["size"], 1)
        out["name"] = syms["name"]
        out["strtab"] = len(self._strtabs)
        self._strtabs.append(strtab)
        return out

    def __len__(self) -> int:
        return len(self._table)

    def name_at(self, vaddr: int) -> str | None:
        """The (mangled) name of the function holding vaddr, or None."""
        i = int(np.searchsorted(self._starts, vaddr, side="right")) - 1
        if i < 0 or vaddr >= int(self._table["end"][i]):
            return None
        strtab = self._strtabs[int(self._table["strtab"][i])]
        start = int(self._table["name"][i])
        return strtab[start:strtab.index(b"\0", start)].decode(errors="replace")

    def vaddr_of_offset(self, file_offset: int) -> int | None:
        """The virtual address a file offset is loaded at (what /proc/PID/maps gives)."""
        for offset, vaddr, size in self.segments:
            if offset <= file_offset < offset + size:
                return file_offset - offset + vaddr
        return None

    def name_at_offset(self, file_offset: int) -> str | None:
        vaddr = self.vaddr_of_offset(file_offset)
        return None if vaddr is None else self.name_at(vaddr)


_INDEX_DTYPE = np.dtype([("start", "<u8"), ("end", "<u8"), ("name", "<u4"), ("strtab", "u1")])


def _load_segments(image: ElfImage) -> list[tuple[int, int, int]]:
    return [(seg.offset, seg.vaddr, seg.filesz) for seg in image.load_segments]
