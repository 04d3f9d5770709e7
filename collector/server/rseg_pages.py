"""The rollback segments' pages (the gauge undo_pages) in a stripped MySQL 8.0+'s memory,
along the chain its own code walks to give INNODB_METRICS's trx_rseg_current_size
(collector/discovery/rseg_code.py): the temporary tablespace's segments in trx_sys, then
each undo tablespace's in undo::spaces up to the first whose id is not below
srv_rollback_segments, each one's curr_size added up. With the page size (srv_page_size,
state.py), `report` tells the undo logs' size in bytes with `--no-sql` too.

The server walks the vectors under their latches; a reading here takes none (it never
writes to the process), so a vector reallocated under it (an undo tablespace created,
dropped or truncated) may be read half old: each vector's length and each segment's id are
bounded, and a reading that leaves them is left out, never a figure made of it."""
from __future__ import annotations

from dataclasses import dataclass

from ..discovery import rseg_code
from .latch_names import ServerMemory

MAX_VECTOR = 1024  # no vector here is longer: 127 undo tablespaces, 128 segments each
N_RSEGS = 128  # TRX_SYS_N_RSEGS: a segment's id is below it
MAX_SEGMENT_PAGES = 1 << 32  # curr_size is a page number's width at most


def pointers(memory: ServerMemory, at: int) -> list[int] | None:
    """The elements of the std::vector<T *> whose begin is at `at` (its end the word after)."""
    ends = memory.read(at, 16) if at else None
    if ends is None:
        return None
    begin, end = int.from_bytes(ends[:8], "little"), int.from_bytes(ends[8:], "little")
    count, rest = divmod(end - begin, 8)
    if rest or not 0 <= count <= MAX_VECTOR:
        return None
    data = memory.read(begin, count * 8) if count else b""
    return None if data is None else [int.from_bytes(data[i:i + 8], "little") for i in range(0, len(data), 8)]


@dataclass(frozen=True)
class RsegPages:
    """A Place's read() for undo_pages: trx_sys, undo::spaces and srv_rollback_segments at
    their addresses in the process, the offsets the chain gave."""
    chain: rseg_code.RsegChain
    trx_sys: int
    spaces: int
    cut: int

    def segments(self, memory: ServerMemory) -> list[tuple[int, int]] | None:
        """(id, curr_size) of every segment the server's figure counts, or None."""
        chain, width = self.chain, self.chain.width
        trx, spaces, cut = (memory.u64(at) for at in (self.trx_sys, self.spaces, self.cut))
        temporary = pointers(memory, trx + chain.tmp_rsegs) if trx else None
        tablespaces = pointers(memory, spaces + chain.spaces) if spaces else None
        if temporary is None or tablespaces is None or cut is None:
            return None
        found = []
        for counted, segs in [(False, temporary)] + [(True, self.space_segments(memory, s)) for s in tablespaces]:
            if segs is None:
                return None
            for seg in segs:
                one = self.segment(memory, seg) if seg else None
                if one is None:
                    return None
                if counted and chain.segment_id is not None and one[0] >= cut:
                    break  # the server's own cut: segments past innodb_rollback_segments are not counted
                found.append(one)
        return found

    def space_segments(self, memory: ServerMemory, space: int) -> list[int] | None:
        rsegs = memory.u64(space + self.chain.space_rsegs) if space else None
        return pointers(memory, rsegs + self.chain.rsegs) if rsegs else None

    def segment(self, memory: ServerMemory, seg: int) -> tuple[int, int] | None:
        chain = self.chain
        id_at = chain.segment_id if chain.segment_id is not None else 0
        data = memory.read(seg, max(chain.curr_size + chain.width, id_at + 8))
        if data is None:
            return None
        ident = int.from_bytes(data[id_at:id_at + 8], "little")
        size = int.from_bytes(data[chain.curr_size:chain.curr_size + chain.width], "little")
        return (ident, size) if ident < N_RSEGS and size < MAX_SEGMENT_PAGES else None

    def read(self, memory: ServerMemory) -> int | None:
        found = self.segments(memory)
        return sum(size for _, size in found) if found is not None else None


def undo_pages_places(target, bias: int, memory: ServerMemory) -> tuple[dict, str]:
    """undo_pages where the build's code gave the chain and a first reading is one a server
    holds: segments there, each of a page at least (its header); and what the code said."""
    chain = rseg_code.rseg_chain(target)
    if chain.curr_size is None:
        return {}, chain.said
    found = target.find_objects([rseg_code.TRX_SYS, rseg_code.SPACES, rseg_code.CUT])
    pages = RsegPages(chain, *(found[n].vaddr + bias for n in (rseg_code.TRX_SYS, rseg_code.SPACES, rseg_code.CUT)))
    first = pages.segments(memory) if memory.fd is not None else None
    if not first or any(size < 1 for _, size in first):
        return {}, f"{chain.said}, but its first reading is no server's ({len(first or [])} segments): refused"
    return {"undo_pages": pages}, f"{chain.said}; {len(first)} segments at the first reading"
