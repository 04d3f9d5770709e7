"""The rollback segments' pages read along the chain (collector/server/rseg_pages.py), on a
made-up process memory laid out as the chain says: the temporary segments all counted, an
undo tablespace's cut at the first id not below srv_rollback_segments as the server's own
walk cuts, and what a reading may not be made of (a vector torn by a reallocation, an id no
segment has). Against a real server's figure: test_sql_state_live.py."""
from __future__ import annotations

import struct

from innostall.collector.discovery.rseg_code import RsegChain
from innostall.collector.server.rseg_pages import RsegPages

# 9.7.4's chain (docs/versions.md): a 4-byte curr_size at 0x4c, the id at 0
CHAIN = RsegChain(tmp_rsegs=0x50, spaces=0x8, space_rsegs=0x28, rsegs=0x8, curr_size=0x4c, width=4, segment_id=0)
TRX_SYS_AT, SPACES_AT, CUT_AT = 0x1000, 0x1008, 0x1010


class Memory:
    """A sparse process memory: {address: bytes}, read as ServerMemory reads /proc/PID/mem."""

    def __init__(self):
        self.words: dict[int, int] = {}  # byte address -> byte
        self.fd = 0

    def put(self, address: int, data: bytes) -> None:
        for i, b in enumerate(data):
            self.words[address + i] = b

    def read(self, address: int, size: int) -> bytes | None:
        try:
            return bytes(self.words[address + i] for i in range(size))
        except KeyError:
            return None

    def u64(self, address: int) -> int | None:
        data = self.read(address, 8)
        return None if data is None else struct.unpack("<Q", data)[0]


def vector(memory: Memory, at: int, items: list[int], array_at: int) -> None:
    memory.put(array_at, b"".join(struct.pack("<Q", p) for p in items))
    memory.put(at, struct.pack("<QQ", array_at, array_at + 8 * len(items)))


def segment(memory: Memory, at: int, ident: int, pages: int) -> int:
    memory.put(at, struct.pack("<Q", ident) + bytes(0x4c - 8) + struct.pack("<I", pages))
    return at


def server(cut: int = 128) -> Memory:
    """Two temporary segments (ids 0 and 1, 1 and 2 pages) and two undo tablespaces of three
    segments each (ids 0, 1, 2: 10, 20, 40 pages in the first; 100, 200, 400 in the second)."""
    memory = Memory()
    trx, spaces = 0x10000, 0x20000
    memory.put(TRX_SYS_AT, struct.pack("<Q", trx))
    memory.put(SPACES_AT, struct.pack("<Q", spaces))
    memory.put(CUT_AT, struct.pack("<Q", cut))
    vector(memory, trx + CHAIN.tmp_rsegs, [segment(memory, 0x30000, 0, 1), segment(memory, 0x30100, 1, 2)], 0x31000)
    tablespaces = []
    for n, sizes in enumerate([(10, 20, 40), (100, 200, 400)]):
        space, rsegs = 0x40000 + n * 0x1000, 0x50000 + n * 0x1000
        segs = [segment(memory, 0x60000 + n * 0x1000 + i * 0x100, i, pages) for i, pages in enumerate(sizes)]
        vector(memory, rsegs + CHAIN.rsegs, segs, 0x70000 + n * 0x1000)
        memory.put(space + CHAIN.space_rsegs, struct.pack("<Q", rsegs))
        tablespaces.append(space)
    vector(memory, spaces + CHAIN.spaces, tablespaces, 0x80000)
    return memory


READER = RsegPages(CHAIN, TRX_SYS_AT, SPACES_AT, CUT_AT)


def test_every_segment_is_added_up():
    assert READER.read(server()) == 1 + 2 + 10 + 20 + 40 + 100 + 200 + 400


def test_the_undo_tablespaces_are_cut_as_the_server_cuts_them():
    """innodb_rollback_segments = 2: ids 0 and 1 of each tablespace, every temporary one."""
    assert READER.read(server(cut=2)) == 1 + 2 + 10 + 20 + 100 + 200


def test_a_vector_torn_by_a_reallocation_leaves_the_reading_out():
    memory = server()
    trx = memory.u64(TRX_SYS_AT)
    begin = memory.u64(trx + CHAIN.tmp_rsegs)
    memory.put(trx + CHAIN.tmp_rsegs + 8, struct.pack("<Q", begin - 8))  # end before begin
    assert READER.read(memory) is None
    memory.put(trx + CHAIN.tmp_rsegs + 8, struct.pack("<Q", begin + 4))  # not whole pointers
    assert READER.read(memory) is None


def test_a_segment_with_an_id_no_segment_has_leaves_the_reading_out():
    memory = server()
    segment(memory, 0x30100, 128, 2)  # TRX_SYS_N_RSEGS is 128: ids run 0-127
    assert READER.read(memory) is None


def test_an_unreadable_tablespace_leaves_the_reading_out():
    memory = server()
    del memory.words[0x40000 + CHAIN.space_rsegs]
    assert READER.read(memory) is None
