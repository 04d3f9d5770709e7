"""Struct layouts read from the server binary's own DWARF (collector/discovery/layouts.py):
the same members, to the byte and the bit, as the catalog's ranges give for every fixture
that has DWARF; the catalog no longer needed where DWARF is at hand; latches inside server
globals named by their members; and builds without DWARF left to the catalog."""
from __future__ import annotations

import pytest

from conftest import REPO, fetched
from innostall.collector.discovery import discover, layouts, target
from innostall.collector.server import latch_names

WITH_DWARF = {"mariadb-11.4.5": "dist/bin/mariadbd", "mariadb-10.11.5": "dist/bin/mariadbd",
              "mariadb-10.4.6": "dist/bin/mysqld", "mariadb-10.2.11": "dist/bin/mysqld"}


def fixture_target(name: str, path: str | None = None) -> target.Target:
    fetched(name)
    return target.from_binary(str(REPO / "build" / "fixtures" / name / (path or WITH_DWARF[name])))


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
