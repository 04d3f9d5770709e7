"""MVCC version walks against ground truth: a REPEATABLE READ snapshot is opened, then another
connection updates one row exactly N times. When the snapshot reads that row, InnoDB must
build exactly N older versions to reach the one its view sees, so the walk depth is known
in advance. The open snapshot also keeps purge away from those N versions."""
from __future__ import annotations

import ctypes
import os

from innostall import names
from innostall.analysis.wording import findings
from innostall.format import journal as fmt
from innostall.collector.discovery.elf import ElfImage, FunctionIndex
from innostall.collector.discovery.symbolize import StackSymbolizer, read_maps


def libc_function(name: str) -> int:
    return ctypes.cast(getattr(ctypes.CDLL("libc.so.6"), name), ctypes.c_void_p).value


def test_function_index_finds_libc_functions():
    for name in ("malloc", "getpid"):
        address = libc_function(name)
        mapping, = [m for m in read_maps(os.getpid()) if m.start <= address < m.end]
        index = FunctionIndex(ElfImage(mapping.path))
        offset = address - mapping.start + mapping.offset
        assert index.name_at_offset(offset) == name, (mapping, hex(address))
        assert index.name_at(index.vaddr_of_offset(offset) + 1) == name
    assert index.name_at(0) is None


def test_stacks_are_folded_root_first(monkeypatch):
    malloc, getpid = libc_function("malloc"), libc_function("getpid")
    symbolizer = StackSymbolizer(target=None)  # our own process: no executable of interest
    monkeypatch.setattr(symbolizer, "_open_index",
                        lambda pid, mapping: FunctionIndex(ElfImage(mapping.path))
                        if "libc" in mapping.path else None)
    # return addresses point just after a call: symbolize the byte before them
    assert symbolizer.folded(os.getpid(), [malloc + 1, getpid + 1]) == "getpid;malloc"
    assert symbolizer.folded(os.getpid(), [8]).startswith("[unknown]")


def test_walks_table_from_journal_records():
    records = [{"type": "attached", "mono_ns": 1_000_000_000, "real_ns": 0, "programs": []},
               {"type": "deep_walk", "mono_ns": 3_500_000_000, "pid": 1, "tid": 42, "depth": 300,
                "latency_ns": 481_000, "stack": [1, 2], "folded": "a;b"},
               {"type": "end", "reason": "duration"}]
    walks = fmt.walks_table(records)
    assert walks.to_dict("records") == [{"t_s": 2.5, "tid": 42, "depth": 300, "latency_us": 481.0,
                                         "stack": "a;b", "table": None, "index": None,
                                         "scan_index": None}]
    assert fmt.walks_table([]).empty and list(fmt.walks_table([])) == list(fmt.WALK_COLUMNS)


def test_walk_findings_name_depth_and_losses():
    walks = {"deep_walks": 3, "deep_walk_threshold": 100, "max_depth": 4200}
    deep, lost = findings.walk_findings(walks, drops=2)
    assert deep.startswith("3 read(s) walked >= 100 row versions; the deepest walked 4200")
    assert "2 event(s) were lost" in lost
    assert findings.walk_findings({**walks, "deep_walks": 0}, drops=0) == []


def test_short_frame_drops_arguments_only():
    assert names.short_frame("row_search_mvcc(unsigned char*, page_cur_mode_t)") == "row_search_mvcc"
    assert names.short_frame("void std::f<int (*)(int)>(int)") == "void std::f<int (*)(int)>"
    assert names.short_frame("mysqld+0x8dc06a") == "mysqld+0x8dc06a"
