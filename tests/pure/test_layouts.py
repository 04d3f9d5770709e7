"""Struct layouts read from the server binary's own DWARF (collector/discovery/layouts.py):
the same members, to the byte and the bit, as the catalog's ranges give for every fixture
that has DWARF; the catalog no longer needed where DWARF is at hand; latches inside server
globals named by their members; and builds without DWARF left to the catalog."""
from __future__ import annotations

import pytest

from conftest import REPO, fetched
from fixture_binaries import CODE_CHECKED, WITH_DWARF, assert_code_confirms_catalog, fixture_target, unrooted
from innostall.collector.discovery import discover, layouts, machine_code, target
from innostall.collector.server import latch_names


@pytest.mark.parametrize("name", WITH_DWARF)
def test_dwarf_gives_what_the_catalog_gives(name):
    """The cross-check: every member a catalog range lists for the build (ptype /o, source,
    truth tests) is the DWARF's, and the latch model too."""
    tgt = fixture_target(name)
    dwarf = layouts.from_dwarf(tgt.elf, tgt.debug)
    listed = discover.catalog_layout(tgt)
    assert dwarf["latch_model"] == listed["latch_model"]
    assert {m: dwarf["members"].get(m) for m in listed["members"]} == listed["members"]
    assert discover.layout(tgt)["differs"] == {}


def test_a_build_the_catalog_does_not_list_is_decoded_from_its_dwarf(monkeypatch):
    """With the catalog's [[layout]] ranges gone, as for a build no range claims, the block
    latch probes still resolve: the layout comes from the binary."""
    tgt = fixture_target("mariadb-11.4.5")
    full = discover.catalog_file()
    monkeypatch.setattr(discover, "catalog_file", lambda: {k: v for k, v in full.items() if k != "layout"})
    assert discover.catalog_layout(tgt) is None
    found = discover.layout(tgt)
    assert (found["source"], found["latch_model"], found["members"]["buf_block_t.lock"]) == ("DWARF", "sux", 24)
    probes = {p.name: p for p in discover.resolve(tgt, ["block_lock_s", "block_lock_x", "read_view"])}
    assert all(p.ok for p in probes.values()), {n: p.reason for n, p in probes.items()}


def test_a_separate_debug_file_gives_the_layout_of_a_stripped_binary():
    """The split fixture (scripts/split-debuginfo.sh): the binary has no DWARF, its debug file has."""
    fetched("mariadb-11.4.5")
    split = REPO / "build" / "fixtures" / "split-mariadb-11.4.5"
    if not (split / "debug" / "mariadbd.debug").exists():
        pytest.skip("the split fixture is made by test_debuginfo")
    tgt = target.from_binary(str(split / "bare" / "mariadbd"), str(split / "debug" / "mariadbd.debug"))
    assert layouts.dwarf_file(tgt.elf, tgt.debug) == tgt.debug.path
    assert layouts.from_dwarf(tgt.elf, tgt.debug)["members"]["buf_page_t.frame"] == 48


@pytest.mark.heavy  # decodes a fixture server's binary (tens of MB) with Capstone: ~1 s of CPU
def test_a_binary_without_dwarf_keeps_the_catalog():
    tgt = fixture_target("mysql-8.0.15", "dist/bin/mysqld")
    assert layouts.from_dwarf(tgt.elf, tgt.debug) is None
    assert discover.layout(tgt)["source"] == "catalog"


@pytest.mark.parametrize("name, symbol, offset, named", [
    ("mariadb-11.4.5", "lock_sys", 128, "lock_sys.wait_mutex"),  # both checked with gdb ptype /o
    ("mariadb-11.4.5", "purge_sys", 344, "purge_sys.pq_mutex"),
    ("mariadb-11.4.5", "lock_sys", 64, "lock_sys.latch"),  # as the catalog names it
])
def test_a_latch_inside_a_server_global_is_named_by_its_member(name, symbol, offset, named):
    tgt = fixture_target(name)
    rules = latch_names.naming_rules(tgt)
    inside = [n for start, size, n in rules.members.get(symbol, []) + rules.dwarf_members.get(symbol, [])
              if start <= offset < start + size]
    assert inside[0] == named


@pytest.mark.heavy  # decodes each build's code (tens of MB) with Capstone: 0.96 s of CPU for MySQL 8.0.15's
@pytest.mark.parametrize("name", unrooted(CODE_CHECKED))
def test_the_build_code_confirms_the_catalog_where_there_is_no_dwarf(name):
    assert_code_confirms_catalog(name)  # 9.7.4's, whose fetch needs root: tests/live/


@pytest.mark.parametrize("name", ["mariadb-10.2.11", "mariadb-10.4.6"])
def test_the_code_reads_what_the_dwarf_says(name):
    """The method against the truth: on builds with DWARF, the offset read back from the code
    (through a pointer on 10.2, an object on 10.4, spilled to the stack there) is the DWARF's."""
    tgt = fixture_target(name)
    members = layouts.from_dwarf(tgt.elf, tgt.debug)["members"]
    [check] = machine_code.check(tgt, members, discover.catalog_file()["code"])
    assert check.found == (members["trx_sys_t.rseg_history_len"],) and check.agrees


@pytest.mark.heavy  # decodes a fixture server's binary (tens of MB) with Capstone: ~1 s of CPU
def test_a_catalog_offset_the_code_contradicts_is_refused(monkeypatch):
    """8.0.15 given 8.0.22's offset (0x1e8): the code says 0x1f0, so the member is refused and
    the probes that read it are missing, saying why; nothing reads a wrong offset."""
    tgt = fixture_target("mysql-8.0.15", CODE_CHECKED["mysql-8.0.15"])
    full = discover.catalog_file()
    moved = [{**e, "members": {**e["members"], "trx_sys_t.rseg_history_len": 0x1e8}}
             if "trx_sys_t.rseg_history_len" in e["members"] else e for e in full["layout"]]
    monkeypatch.setattr(discover, "catalog_file", lambda: {**full, "layout": moved})
    found = discover.layout(tgt)
    assert "trx_sys_t.rseg_history_len" not in found["members"]
    assert found["refused"]["trx_sys_t.rseg_history_len"].startswith("0x1e8 in the catalog, 0x1f0 in the code")
    history, = discover.resolve(tgt, ["history_length"])
    assert not history.ok and "refused, the build's code disagreeing" in history.reason
