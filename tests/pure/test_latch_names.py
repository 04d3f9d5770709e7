"""Which latch is that? The naming logic, checked without a server on memory laid out by
hand; deep walks named on real servers. The hot-row naming truth (the top block named with
its table and PRIMARY, 95% of wait time named) rides on test_block_lock.py's recordings."""
from __future__ import annotations

import struct

from innostall.collector.server.latch_names import LATCH_BLOCK, LATCH_MUTEX, LATCH_SRW, LatchNamer, NamingRules, UNKNOWN
from innostall.format.journal import p99_us


class FakeMemory:
    """Bytes at addresses, as a server's memory would hold them."""

    def __init__(self, regions: dict[int, bytes]):
        self.regions = regions

    def read(self, address, size):
        for start, data in self.regions.items():
            if start <= address and address + size <= start + len(data):
                return data[address - start:address - start + size]
        return None

    def u64(self, address):
        data = self.read(address, 8)
        return None if data is None else struct.unpack("<Q", data)[0]

    def u32(self, address):
        data = self.read(address, 4)
        return None if data is None else struct.unpack("<I", data)[0]

    def cstring(self, address, limit=200):
        for start, data in self.regions.items():
            if start <= address < start + len(data):
                text = data[address - start:].split(b"\0")[0]
                return text.decode() if text else None
        return None


class FakeObjects:
    def __init__(self, symbols: dict[str, tuple[int, int]]):
        self.symbols = symbols

    def find(self, address):
        for name, (start, size) in self.symbols.items():
            if start <= address < start + size:
                return name, address - start
        return None

    def address_of(self, symbol):
        return self.symbols.get(symbol, (None,))[0]


def page_frame(space: int, page_no: int, page_type: int, index_id: int) -> bytes:
    frame = bytearray(4096)
    frame[4:8] = struct.pack(">I", page_no)
    frame[24:26] = struct.pack(">H", page_type)
    frame[34:38] = struct.pack(">I", space)
    frame[66:74] = struct.pack(">Q", index_id)
    return bytes(frame)


def test_a_block_is_named_by_its_frame_and_the_dictionary():
    frame_at, block_at = 0x7F0000000000, 0x7F1000000000
    block = bytearray(512)
    block[48:56] = struct.pack("<Q", frame_at)  # the frame pointer, wherever the layout has it
    latch = block_at + 200  # the block is read around its latch
    memory = FakeMemory({frame_at: page_frame(8, 4, 17855, 77), block_at: bytes(block)})
    namer = LatchNamer(memory, None, NamingRules(), {77: ("sbtest/sbtest1", "PRIMARY")})
    assert namer.name(LATCH_BLOCK, 8 << 32 | 4, latch) == ("block 8:4 sbtest/sbtest1 PRIMARY", "block")
    # another page in the same block (it was evicted and reused): the page alone, not a wrong table
    assert namer.name(LATCH_BLOCK, 8 << 32 | 5, latch) == ("block 8:5", "block")
    undo = FakeMemory({frame_at: page_frame(0, 9, 2, 0), block_at: bytes(block)})
    assert LatchNamer(undo, None, NamingRules()).name(LATCH_BLOCK, 9, latch)[0] == "block 0:9 undo log page"


def test_globals_arrays_and_index_latches_are_named():
    lock_sys, cells, index, table = 0x1000, 0x9000, 0x20000, 0x30000
    lock_sys_bytes = bytearray(256)
    lock_sys_bytes[80:96] = struct.pack("<QQ", 4, cells)  # rec_hash: n_cells, array
    index_bytes = bytearray(0x200)
    index_bytes[0:8] = struct.pack("<Q", 55)
    index_bytes[16:32] = struct.pack("<QQ", index + 0x180, table)
    index_bytes[0x180:0x184] = b"k_1\0"
    table_bytes = bytearray(0x100)
    table_bytes[16:24] = struct.pack("<Q", table + 0x80)
    table_bytes[0x80:0x8f] = b"sbtest/sbtest1\0"
    memory = FakeMemory({lock_sys: bytes(lock_sys_bytes), index: bytes(index_bytes), table: bytes(table_bytes)})
    rules = NamingRules(members={"lock_sys": [[64, 16, "lock_sys.latch"]]},
                        arrays=[["lock_sys", 88, 80, 8, "lock_sys.rec_hash latch"]], index_lock=0x108)
    namer = LatchNamer(memory, FakeObjects({"lock_sys": (lock_sys, 256), "log_sys": (0x2000, 256)}), rules,
                       {55: ("sbtest/sbtest1", "k_1")})
    assert namer.name(LATCH_SRW, lock_sys + 72, lock_sys + 72) == ("lock_sys.latch", "srw_lock")
    assert namer.name_address(0x2000 + 240) == ("log_sys+240", "srw_lock")  # no member known: symbol+offset
    assert namer.name_address(cells + 24)[0] == "lock_sys.rec_hash latch"
    assert namer.name_address(cells + 32)[0] == UNKNOWN  # past the array's 4 cells
    assert namer.name_address(index + 0x108) == ("index tree sbtest/sbtest1 k_1", "index")
    # the dictionary gives id 55 another name: not an index after all
    wrong = LatchNamer(memory, None, rules, {55: ("sbtest/sbtest1", "PRIMARY")})
    assert wrong.name_address(index + 0x108)[0] == UNKNOWN


def test_a_tablespace_latch_is_named_by_its_file():
    space, node = 0x4000, 0x6000
    space_bytes = bytearray(0x100)
    space_bytes[104:112] = struct.pack("<Q", node)  # chain.start
    node_bytes = bytearray(0x80)
    node_bytes[0:16] = struct.pack("<QQ", space, node + 0x40)
    node_bytes[0x40:0x56] = b"./sbtest/sbtest2.ibd\0"
    memory = FakeMemory({space: bytes(space_bytes), node: bytes(node_bytes)})
    namer = LatchNamer(memory, None, NamingRules(space_latch=[168, 104]))
    assert namer.name_address(space + 168) == ("tablespace latch sbtest/sbtest2", "srw_lock")
    # a file that does not point back: not a tablespace
    assert namer.name_address(space + 160)[0] == UNKNOWN


def test_a_mutex_is_named_by_its_latch_id():
    meta_vector, metas, mutex = 0x1000, 0x2000, 0x5000
    vector = struct.pack("<QQQ", 0, metas, metas + 3 * 8)
    table = bytearray(0x400)
    table[0:24] = struct.pack("<QQQ", 0, metas + 0x100, metas + 0x200)
    for i, name in ((1, b"LOCK_SYS\0"), (2, b"TRX_SYS\0")):
        at = 0x100 * i
        table[at:at + 16] = struct.pack("<IIQ", i, 0, metas + at + 0x40)
        table[at + 0x40:at + 0x40 + len(name)] = name
    mutex_bytes = bytearray(64)
    mutex_bytes[40:44] = struct.pack("<I", 2)
    memory = FakeMemory({meta_vector: vector, metas: bytes(table), mutex: bytes(mutex_bytes)})
    namer = LatchNamer(memory, FakeObjects({"latch_meta": (meta_vector, 24)}), NamingRules(mutex_id=40))
    assert namer.name(LATCH_MUTEX, mutex, mutex) == ("trx_sys_mutex", "mutex")


def test_p99_is_the_upper_edge_of_its_bucket():
    assert p99_us([]) == 0.0
    assert p99_us([0, 99, 1]) == 4.0  # 99 of 100 waits are in [2, 4) us
    assert p99_us([0, 50, 0, 50]) == 16.0
