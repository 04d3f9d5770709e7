"""How many undo log pages are in the buffer pool: counted by walking the pool's blocks
from outside, as INFORMATION_SCHEMA.INNODB_BUFFER_PAGE does from inside (without its
latches, so without stopping the server).

Once purge has to read its undo logs from disk it turns I/O-bound (Zaitsev, on purge
debt): the undo logs' size says how much there is to read, this count how much of it is
already cached. No probe: the pool's descriptors are read from the server's memory.

  1. the pool's chunks: buf_pool.chunks (MariaDB 10.5+), else each of the
     srv_buf_pool_instances instances' at buf_pool_ptr (MySQL, MariaDB 10.2-10.4)
  2. each chunk's block descriptors, read whole (a chunk's buf_block_t array, in slabs),
     and from each its state and its frame's address
  3. for the blocks that hold a file page, the frame's FIL_PAGE_TYPE (two bytes), all of
     them gathered in one process_vm_readv per 1024 pages; FIL_PAGE_UNDO_LOG counts

A 128 MB pool (8,192 pages) is a few MB of descriptors and 8 system calls. A pool a
thousand times that takes seconds, so the walker paces itself: after a walk of T seconds
the next begins no sooner than T / WALK_SHARE after that one began (and at most once a
second). What a walk reads is not one instant: a page may come or go while it runs, as
with the server's own table; on a quiet server both count the same pages."""
from __future__ import annotations

import ctypes
import threading
import time
from dataclasses import dataclass

import numpy as np

from ..discovery.layouts import POOL_CONSTANTS, POOL_PATHS, POOL_TYPES
from .latch_names import FIL_PAGE_TYPE, ServerMemory

FIL_PAGE_UNDO_LOG = 2  # fil0fil.h, every release
WALK_SHARE = 0.01  # of one core: the share of its time the walker may spend walking
# The soonest a walk begins after the one before began: once a (default) interval. Twice
# an interval cost 1.3% of a core on a 128 MB pool of 64 chunks (make bench's steady
# load, 2026-11-30), a quarter of the recorder's 5% target, for a count that moves slowly.
EVERY_S = 1.0
SLAB_BYTES = 4 << 20  # block descriptors read at once
IOV_MAX = 1024
MAX_INSTANCES, MAX_CHUNKS, MAX_CHUNK_BLOCKS = 64, 1 << 16, 1 << 26  # beyond these a count is garbage


@dataclass(frozen=True)
class PoolLayout:
    """Where the pool's blocks are, from the build's DWARF (pool_layout). The pool objects
    are at pool (through the pointer there when via_pointer; count_at holds how many,
    pool_stride apart); each has chunks (a pointer) and n_chunks. A chunk (chunk_size bytes)
    has blocks (a pointer) and size (how many); a block (block_size bytes) its frame
    pointer and its state (state_size bytes). A block holds a file page when its state is
    file_page (old builds' enum), or lies in [unfixed, read_fix) or from write_fix on (MariaDB
    10.6+, whose low bits count fixes; read-fixed pages are still being read)."""
    pool: int
    via_pointer: bool
    count_at: int | None
    pool_stride: int
    chunks: int
    n_chunks: int
    chunk_size: int
    chunk_blocks: int
    chunk_count: int
    block_size: int
    frame: int
    state: int
    state_size: int
    file_page: int | None = None
    unfixed: int | None = None
    read_fix: int | None = None
    write_fix: int | None = None


def pool_layout(found: dict, address_of) -> PoolLayout | None:
    """The layout from the DWARF reader's answer (address_of: a global's run-time address,
    or None); None when the build's DWARF lacks any of it (MariaDB 11.8 made the pool one
    area without chunks: not read there yet)."""
    paths, types, consts = found.get("paths", {}), found.get("types", {}), found.get("constants", {})
    hit = {key: next((paths[p] for p in names if p in paths), None) for key, names in POOL_PATHS.items()}
    chunk_type = next((types[t] for t in POOL_TYPES[:2] if t in types), None)
    block_size = types.get("buf_block_t", {}).get("size")
    if None in hit.values() or not chunk_type or not block_size:
        return None
    value = {name.split("::")[1]: consts[name]["value"] for name in POOL_CONSTANTS if name in consts}
    if "BUF_BLOCK_FILE_PAGE" not in value and not {"UNFIXED", "READ_FIX", "WRITE_FIX"} <= set(value):
        return None
    instanced = bool(hit["chunks"].get("via_pointer"))  # buf_pool_ptr: a pointer to the instances
    root = "buf_pool_ptr" if instanced else "buf_pool"
    pool = address_of(root)
    count_at = address_of("srv_buf_pool_instances") if instanced else None
    stride = found.get("globals", {}).get(root, {}).get("object_size", 0) if instanced else 0
    if pool is None or (instanced and (count_at is None or not stride)):
        return None
    return PoolLayout(pool, instanced, count_at, stride, hit["chunks"]["offset"], hit["n_chunks"]["offset"],
                      chunk_type["size"], hit["chunk_blocks"]["offset"], hit["chunk_count"]["offset"],
                      block_size, hit["frame"]["offset"], hit["state"]["offset"], hit["state"]["size"],
                      value.get("BUF_BLOCK_FILE_PAGE"), value.get("UNFIXED"), value.get("READ_FIX"),
                      value.get("WRITE_FIX"))


class _Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.process_vm_readv.restype = ctypes.c_ssize_t
_libc.process_vm_readv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p,
                                   ctypes.c_ulong, ctypes.c_ulong]


def gather_u16(pid: int, addresses: np.ndarray) -> np.ndarray | None:
    """The big-endian 16-bit words at each address of the process, or None if one cannot be
    read (process_vm_readv: many scattered reads in one call, never a write)."""
    out = np.empty(len(addresses), dtype=">u2")
    for start in range(0, len(addresses), IOV_MAX):
        part = addresses[start:start + IOV_MAX]
        remote = np.empty((len(part), 2), dtype=np.uint64)
        remote[:, 0], remote[:, 1] = part, 2
        local = _Iovec(out.ctypes.data + 2 * start, 2 * len(part))
        done = _libc.process_vm_readv(pid, ctypes.byref(local), 1, remote.ctypes.data, len(part), 0)
        if done != 2 * len(part):
            return None
    return out


def column(rows: np.ndarray, offset: int, size: int) -> np.ndarray:
    """One little-endian member of every row of a (blocks x block_size) byte array."""
    dtype = {1: "<u1", 2: "<u2", 4: "<u4", 8: "<u8"}[size]
    return np.ascontiguousarray(rows[:, offset:offset + size]).view(dtype).ravel()


def undo_pages_cached(memory: ServerMemory, pid: int, layout: PoolLayout) -> int | None:
    """The file pages in the pool whose type is FIL_PAGE_UNDO_LOG; None when the pool cannot
    be read whole (being resized, or not where the layout says)."""
    frames = [part for chunk in chunks(memory, layout) for part in file_page_frames(memory, layout, *chunk)] \
        if layout else []
    if not frames or any(part is None for part in frames):
        return None
    types = gather_u16(pid, np.concatenate(frames) + FIL_PAGE_TYPE)
    return None if types is None else int(np.count_nonzero(types == FIL_PAGE_UNDO_LOG))


def chunks(memory: ServerMemory, layout: PoolLayout) -> list[tuple[int, int]]:
    """(address of the block array, blocks) of every chunk of every instance; a chunk or an
    instance that cannot be read makes the list end with (0, -1)."""
    base = memory.u64(layout.pool) if layout.via_pointer else layout.pool
    count = memory.u64(layout.count_at) if layout.count_at else 1
    if not base or count is None or not 1 <= count <= MAX_INSTANCES:
        return [(0, -1)]
    out = []
    for i in range(count):
        pool = base + i * layout.pool_stride
        array, n = memory.u64(pool + layout.chunks), memory.u64(pool + layout.n_chunks)
        if not array or n is None or not 1 <= n <= MAX_CHUNKS:
            return [*out, (0, -1)]
        raw = memory.read(array, n * layout.chunk_size)
        if raw is None:
            return [*out, (0, -1)]
        for c in range(n):
            at = c * layout.chunk_size
            blocks = int.from_bytes(raw[at + layout.chunk_blocks:at + layout.chunk_blocks + 8], "little")
            size = int.from_bytes(raw[at + layout.chunk_count:at + layout.chunk_count + 8], "little")
            out.append((blocks, size) if blocks and size <= MAX_CHUNK_BLOCKS else (0, -1))
    return out


def file_page_frames(memory: ServerMemory, layout: PoolLayout, blocks: int, count: int):
    """Yield, slab by slab, the frame addresses of the chunk's blocks that hold a file page;
    None for a slab that cannot be read."""
    if count < 0:
        yield None
        return
    per_slab = max(1, SLAB_BYTES // layout.block_size)
    for first in range(0, count, per_slab):
        n = min(per_slab, count - first)
        raw = memory.read(blocks + first * layout.block_size, n * layout.block_size)
        if raw is None:
            yield None
            return
        rows = np.frombuffer(raw, dtype=np.uint8).reshape(n, layout.block_size)
        state, frame = column(rows, layout.state, layout.state_size), column(rows, layout.frame, 8)
        yield frame[holds_file_page(state, layout) & (frame != 0)]


def holds_file_page(state: np.ndarray, layout: PoolLayout) -> np.ndarray:
    if layout.file_page is not None:
        return state == layout.file_page
    return (state >= layout.unfixed) & ((state < layout.read_fix) | (state >= layout.write_fix))


class PoolWalker:
    """Walks the pool in a thread of its own, paced by WALK_SHARE; latest() hands each
    count once. walks and walk_s say what it cost."""

    def __init__(self, memory: ServerMemory, pid: int, layout: PoolLayout):
        self.memory = memory  # the state's own reader (pread is safe from two threads)
        self.pid, self.layout = pid, layout
        self.count: int | None = None
        self.walks, self.walk_s, self.longest_s = 0, 0.0, 0.0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, name="pool-walk", daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stopping.is_set():
            began = time.monotonic()
            count = undo_pages_cached(self.memory, self.pid, self.layout)
            took = time.monotonic() - began
            with self.lock:
                self.count = count if count is not None else self.count
                self.walks, self.walk_s, self.longest_s = self.walks + 1, self.walk_s + took, max(self.longest_s, took)
            self.stopping.wait(max(EVERY_S, took / WALK_SHARE) - took)

    def latest(self) -> int | None:
        """The count of the latest walk not handed out yet, else None."""
        with self.lock:
            count, self.count = self.count, None
        return count

    def close(self) -> None:
        self.stopping.set()
        self.thread.join()

