"""Functions found by their plain name where the catalog's symbols miss
(collector/discovery/dwarf_functions.py, plain_name.py): inlined copies read from the DWARF
of a program compiled here, the programs allowed at such places checked against their
source, and MariaDB 10.4.6's two misses told apart."""
from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import REPO
from innostall.collector.discovery import discover, dwarf_functions, plain_name, target
from innostall.collector.discovery.elf import ElfImage

SOURCE = r"""
volatile int sink;
/* called twice, inlined at both calls */
static inline __attribute__((always_inline)) void counted(int n) { sink += n * 3; }
__attribute__((noinline)) void first(int n) { sink = 1; counted(n); sink = 2; }
__attribute__((noinline)) void second(int n) { sink = 3; counted(n + 1); counted(n + 2); }
int main(int argc, char **argv) { first(argc); second(argc); return sink; }
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("inlined")
    (where / "p.c").write_text(SOURCE)
    try:
        subprocess.run(["gcc", "-O2", "-g", "-gdwarf-4", "-o", str(where / "p"), str(where / "p.c")],
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"no C compiler: {e}")
    return where / "p"


def symbol_range(path: Path, name: str) -> tuple[int, int]:
    image = ElfImage(str(path))
    sym = image.find([name], ".symtab")[name]
    return sym.vaddr, sym.vaddr + sym.size


def test_each_inlined_copy_is_found_with_its_caller_and_an_address_inside_it(program):
    found = dwarf_functions.search(str(program), "counted")
    assert found.error is None
    assert [s.caller for s in found.sites] == ["first", "second", "second"]
    for site in found.sites:
        low, high = symbol_range(program, site.caller)
        assert low <= site.entry < high, (hex(site.entry), site.caller)
    assert {s.call_line for s in found.sites} == {5, 6}
    assert dwarf_functions.search(str(program), "nowhere").sites == []


def test_only_the_units_holding_the_name_are_parsed():
    # two units of 8 bytes' body: the name's .debug_str offset (7) is in the second only
    info = struct.pack("<I", 8) + b"\0" * 8 + struct.pack("<I", 8) + b"\1\0" + struct.pack("<I", 7) + b"\0\0"
    strings = b"\0xyz\0ab" + b"name\0"
    assert dwarf_functions.unit_starts(info) == [0, 12]
    assert dwarf_functions.string_offsets(strings, "name") == [7]
    assert dwarf_functions.string_offsets(strings, "ame") == [8]  # a tail a linker merged
    assert dwarf_functions.candidate_units(info, strings, "name") == [12]


def test_a_return_program_or_one_reading_registers_is_never_placed_by_plain_name():
    free = {"purge_page_get"}
    assert plain_name.refusal({"entry": "purge_page_get"}, free) is None
    assert "return" in plain_name.refusal({"entry": "purge_page_get", "return": "x_exit"}, free)
    assert "secondary_lookup_enter reads" in plain_name.refusal({"entry": "secondary_lookup_enter"}, free)
    assert plain_name.plain_name({"symbols": ["_Z16buf_page_get_genRK9page_id_tRK11page_size_tmP11buf_block_tmPKcjP5mtr_tP7dberr_t"]}) \
        == "buf_page_get_gen"


def program_bodies() -> dict[str, tuple[str, str]]:
    """Each uprobe program of probes/*.bpf.c: (its BPF_KPROBE parameters, its body)."""
    found = {}
    for path in sorted((REPO / "probes").glob("*.bpf.c")):
        text = path.read_text()
        for m in re.finditer(r'SEC\("uprobe"\)\s*int BPF_KPROBE\((\w+)([^)]*)\)\s*\{', text):
            found[m.group(1)] = (m.group(2), text[m.end():text.index("\n}\n", m.end())])
    return found


def test_the_programs_said_to_read_no_register_read_none():
    bodies = program_bodies()
    for name in plain_name.none_read(discover.catalog_file()):
        params, body = bodies[name]
        assert not params.strip(", "), f"{name} takes arguments: {params}"
        assert "PT_REGS" not in body and "ctx->" not in body, name
        # the context goes only to count_hit, which reads the attach cookie
        assert re.findall(r"\w+\(ctx\b", body) == ["count_hit(ctx"], name


@pytest.mark.heavy
def test_mariadb_10_4_6_lookup_inlined_and_page_get_under_another_signature():
    path = REPO / "build" / "fixtures" / "mariadb-10.4.6" / "dist" / "bin" / "mysqld"
    if not path.exists():
        pytest.skip("the MariaDB 10.4.6 fixture is not fetched")
    found = dwarf_functions.search(str(path), "row_sel_get_clust_rec_for_mysql")
    # one copy, in row_search_mvcc at row0sel.cc:5243, entry_pc 0xbc7403 (its sec_index in rbx)
    assert [(s.entry, s.caller, s.call_line) for s in found.sites] == [(0xbc7403, "row_search_mvcc", 5243)]
    tgt = target.from_binary(str(path))
    lookup, fetch = discover.resolve(tgt, ["secondary_lookup", "purge_undo_fetch"])
    assert not lookup.ok and "inlined into row_search_mvcc at 1 site" in lookup.reason
    assert "secondary_lookup_enter reads the call's registers" in lookup.reason
    assert fetch.ok and fetch.found_by == "by its name under another signature"
    assert [s.name for s in fetch.symbols] == ["_Z16buf_page_get_gen9page_id_tmmP11buf_block_tmPKcjP5mtr_tP7dberr_t"]


class Build:
    """A target as plain_name.find sees one: no symbol of the name, the DWARF in the file."""

    def __init__(self, path: Path):
        self.elf, self.debug = ElfImage(str(path)), None

    def find_function_copies(self, name):
        return []


def test_an_entry_program_reading_no_register_is_placed_at_each_inlined_copy(program, monkeypatch):
    monkeypatch.setattr(dwarf_functions.cache, "cache_dir", lambda: None)
    variants = [({"families": ["mariadb"], "versions": "1 - 99", "function": "counted"}, True)]
    variant, symbols, how = plain_name.find(variants, Build(program), {"purge_page_get"},
                                            {"entry": "purge_page_get"})
    assert how == "found by DWARF: counted inlined into first, second at 3 sites"
    assert [s.name for s in symbols] == ["first", "second", "second"] and symbols[0].table == "DWARF"
    said = plain_name.find(variants, Build(program), {"purge_page_get"},
                           {"entry": "purge_page_get", "return": "purge_page_exit"})
    assert said.startswith("counted is inlined into first, second at 3 sites (0x")
    assert "its return program needs a call to return from" in said
