"""The server's own state, read from its memory at each snapshot: no probe, no trap, nothing
the server pays for. What a periodic read answers is read so (issue: read memory instead
of trapping), each figure from the server's globals at the offsets its own DWARF gives
(collector/discovery/layouts.py, STATE_PATHS):

  lsn                 the redo log's sequence number (log_sys.lsn): its growth is the redo
                      written, in bytes (block headers included where the format has them)
  checkpoint_lsn      the last checkpoint's LSN; lsn - checkpoint_lsn is the checkpoint age
  log_capacity        what the log may hold before it must be checkpointed
  max_checkpoint_age  the age at which the server stops everything to checkpoint (sync)
  async_flush_age     the age from which the page cleaners flush furiously
  sync_flush_age      (MariaDB 10.2-10.4) the age from which user threads flush themselves
  dirty_pages         pages on the buffer pool's flush list (every instance's, added up)
  free_pages          pages on its free list
  lru_pages           pages on its LRU list (the pages that hold data)
  history             the history list length (trx_sys.rseg_history_len, or on MariaDB
                      10.6+, which keeps no total, each rollback segment's history_size)
  undo_pages          pages the rollback segments hold (each trx_rseg_t's curr_size, added
                      up): the undo logs' size, history included (INNODB_METRICS's
                      trx_rseg_current_size)
  undo_cached_pages   undo log pages in the buffer pool (FIL_PAGE_UNDO_LOG frames), counted
                      by walking the pool's blocks in a thread of its own, paced to 2% of a
                      core (pool_walk.py): at a snapshot only when a walk ended since the one before
  page_size           innodb_page_size (srv_page_size), to tell pages in bytes
  undo_file_bytes     (MySQL without DWARF) the undo tablespaces' size, from the files the
                      server holds open, not its memory (undo_files.py)
  checkpoint_age_peak the highest checkpoint age read since the snapshot before (ServerState)

The reads are of words the server updates without us: a value may be a moment old, never
torn (each is one aligned word, as the server's own monitor threads read them). A build
without DWARF (every MySQL build a DBA runs) has only what its machine code gives: on MySQL
8.0+ the LSN and the last checkpoint through log_sys (log_code.py), the buffer pool's lists
(pool_code.py), the history (code_places) and the rollback segments' pages (rseg_pages.py);
the rest is read by SQL where innostall may log in (sql_state.py), and the recording says
which. Never written: /proc/PID/mem is opened read-only (ServerMemory)."""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from ..discovery import discover, layouts, log_code, pool_code
from .latch_names import ServerMemory
from . import rseg_pages
from .pool_walk import PoolLayout, PoolWalker, pool_layout
from .undo_files import UndoFiles

POOL_GAUGE = "undo_cached_pages"  # the one gauge read by walking the pool, not at a Place

MAX_INSTANCES = 64  # buffer pool instances: MySQL and MariaDB 10.2-10.4 allow 64
MAX_ARRAY_BYTES = 1 << 20  # a rollback-segment array is 16 KB; more is not one
MAX_POOL_PAGES = 1 << 40  # no list of a buffer pool is longer (a petabyte of 1-KB pages)
# The checkpoint age's reads between snapshots, two 8-byte reads each: a top is missed by
# at most this long's redo (0.18 MiB of the 10.7 MiB below). Every 50 ms cost 0.5% of a
# core in Python's wakeups (make bench's steady load, 2026-11-30).
PEAK_EVERY_S = 0.1


@dataclass(frozen=True)
class Place:
    """Where one gauge lives: a member at offset in the object at address (through the
    pointer stored there when via_pointer), added up over count objects stride apart (the
    count read from count_at, a global, when it is given). With member_offset, the objects
    are pointers (an array of count pointers at offset) and the member is at member_offset
    in each object they point to; null ones are skipped."""
    address: int
    via_pointer: bool
    offset: int
    size: int
    count: int = 1
    stride: int = 0
    count_at: int | None = None
    member_offset: int | None = None

    def read(self, memory: ServerMemory) -> int | None:
        base = memory.u64(self.address) if self.via_pointer else self.address
        count = memory.u64(self.count_at) if self.count_at else self.count
        if not base or count is None or not 1 <= count <= (MAX_INSTANCES if self.count_at else self.count):
            return None
        width = 8 if self.member_offset is not None else self.size
        span = (count - 1) * self.stride + self.offset + width
        data = memory.read(base, span) if span <= MAX_ARRAY_BYTES else None
        if data is None:
            return None
        words = [int.from_bytes(data[i * self.stride + self.offset:i * self.stride + self.offset + width], "little")
                 for i in range(count)]
        if self.member_offset is None:
            return sum(words)
        members = [memory.read(p + self.member_offset, self.size) for p in words if p]
        return None if None in members else sum(int.from_bytes(m, "little") for m in members)


@dataclass(frozen=True)
class LsnPlace:
    """MySQL 8.0+'s LSN, which log_t keeps as sn, the log blocks' data bytes (log_code.py):
    read through log_sys and framed. A reading taken while the log buffer is x-latched
    (sn's top bit set) comes from sn_locked where the build's code gave it, else is left out."""
    log_sys: int
    sn: int
    sn_locked: int | None

    def read(self, memory: ServerMemory) -> int | None:
        log = memory.u64(self.log_sys)
        sn = memory.u64(log + self.sn) if log else None
        if sn is not None and sn & log_code.SN_LOCKED:
            sn = memory.u64(log + self.sn_locked) if self.sn_locked is not None else None
        return log_code.sn_to_lsn(sn) if sn else None


class ServerState:
    """The gauges one build lets us read (places: {gauge: Place}), and their reading.

    The checkpoint age is a saw-tooth: the server lets it grow to its async flush point,
    then flushes and checkpoints within a fraction of a second (MariaDB 11.4 under a write
    load: tops of 10.6-10.75 MiB against a 10.74 MiB point, 1.8 MiB of redo a second). Read
    once a snapshot, its top is missed by up to an interval's redo. So between snapshots a
    thread reads the two LSNs every PEAK_EVERY_S and keeps the highest age it saw:
    checkpoint_age_peak, with the snapshot's own reading."""

    def __init__(self, memory: ServerMemory, places: dict[str, Place | PoolLayout], pid: int = 0):
        self.memory = memory
        layout = places.get(POOL_GAUGE)
        self.places = {name: place for name, place in places.items() if name != POOL_GAUGE}
        self.walker = PoolWalker(memory, pid, layout) if layout and pid else None
        self.peak: int | None = None
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.watcher = None
        if "lsn" in places and "checkpoint_lsn" in places:
            self.watcher = threading.Thread(target=self.watch_age, name="checkpoint-age", daemon=True)
            self.watcher.start()

    def age(self) -> int | None:
        lsn, checkpoint = self.places["lsn"].read(self.memory), self.places["checkpoint_lsn"].read(self.memory)
        return lsn - checkpoint if lsn is not None and checkpoint is not None and lsn >= checkpoint else None

    def note_age(self, age: int | None) -> None:
        if age is not None:
            with self.lock:
                self.peak = age if self.peak is None else max(self.peak, age)

    def watch_age(self) -> None:
        while not self.stopping.wait(PEAK_EVERY_S):
            self.note_age(self.age())

    def read(self) -> dict[str, int]:
        """{gauge: value} of those read now, one that cannot be read left out, and the
        checkpoint age's peak since the last read."""
        values = {name: place.read(self.memory) for name, place in self.places.items()}
        found = {name: value for name, value in values.items() if value is not None}
        if self.watcher:
            if {"lsn", "checkpoint_lsn"} <= set(found) and found["lsn"] >= found["checkpoint_lsn"]:
                self.note_age(found["lsn"] - found["checkpoint_lsn"])
            with self.lock:
                if self.peak is not None:
                    found["checkpoint_age_peak"] = self.peak
                self.peak = None
        if self.walker and (cached := self.walker.latest()) is not None:
            found[POOL_GAUGE] = cached
        return found

    def close(self) -> None:
        self.stopping.set()
        if self.watcher:
            self.watcher.join()
        if self.walker:
            self.walker.close()
        self.memory.close()


def places_of(found: dict, bias: int) -> dict[str, Place | PoolLayout]:
    """Each gauge's Place from the DWARF reader's answer (the pool's layout for the gauge
    the pool's walk counts); bias: where the executable is loaded in the running process
    (Target.runtime_address(0); 0 if it is not PIE)."""
    paths, globals_ = found.get("paths", {}), found.get("globals", {})

    def address_of(name: str) -> int | None:
        known = globals_.get(name)
        return known["address"] + bias if known and known.get("address") else None

    places = {}
    for gauge, candidates in layouts.STATE_PATHS.items():
        path = next((p for p in candidates if p in paths), None)
        if path is None:
            continue
        root, hit = path.split(".")[0], paths[path]
        at = address_of(root)
        if at is None:
            continue
        if root == "buf_pool_ptr":  # an array of instances, as many as srv_buf_pool_instances
            stride = globals_[root].get("object_size", 0)
            count_at = address_of("srv_buf_pool_instances")
            if not stride or count_at is None:
                continue
            places[gauge] = Place(at, True, hit["offset"], hit["size"], stride=stride, count_at=count_at)
        else:
            places[gauge] = Place(at, bool(hit.get("via_pointer")), hit["offset"], hit["size"])
    for gauge, name in layouts.STATE_SCALARS.items():
        at, size = address_of(name), globals_.get(name, {}).get("size")
        if at is not None and size in (4, 8):
            places[gauge] = Place(at, False, 0, size)
    trx_sys = address_of("trx_sys")
    if "history" not in places and (rsegs := by_segment(found, trx_sys, "trx_rseg_t.history_size")):
        places["history"] = rsegs  # MariaDB 10.6+ keeps no total
    if rsegs := by_segment(found, trx_sys, "trx_rseg_t.curr_size"):
        places["undo_pages"] = rsegs
    if pool := pool_layout(found, address_of):
        places[POOL_GAUGE] = pool
    return places


def by_segment(found: dict, trx_sys: int | None, member_path: str) -> Place | None:
    """A member of every rollback segment added up: trx_sys.rseg_array holds the segments
    themselves (MariaDB 10.6+, trx_rseg_t[128]) or pointers to them (trx_rseg_t *[128])."""
    paths, types = found.get("paths", {}), found.get("types", {})
    array, member = paths.get("trx_sys.rseg_array"), paths.get(member_path)
    shape = re.fullmatch(r"trx_rseg_t( \*)?\[(\d+)\]", (array or {}).get("type", ""))
    if trx_sys is None or not (array and member and shape):
        return None
    count, via = int(shape[2]), bool(array.get("via_pointer"))
    if shape[1]:  # pointers
        if count * 8 != array["size"]:
            return None
        return Place(trx_sys, via, array["offset"], member["size"], count=count, stride=8,
                     member_offset=member["offset"])
    element = types.get("trx_rseg_t", {}).get("size")
    if not element or count * element != array["size"]:
        return None
    return Place(trx_sys, via, array["offset"] + member["offset"], member["size"], count=count, stride=element)


def code_places(target, bias: int) -> tuple[dict[str, Place | LsnPlace], dict]:
    """MySQL 8.0+ without DWARF: the LSN and the last checkpoint (log_code.py), the buffer
    pool's list lengths (pool_code.py) and the rollback segments' pages (rseg_pages.py) at
    the offsets the build's machine code gives, each kept only if a first reading is one the
    server can hold, the page size (srv_page_size), and the undo tablespaces' size from the
    files it holds open (undo_files.py); and what meta.json says of them."""
    if target.family not in ("mysql", "percona") or target.version_tuple() < (8, 0):
        return {}, {"note": "the build has no DWARF (its debug file would give it)"}
    memory = ServerMemory(target.pid)
    try:
        log, log_said = log_places(target, bias, memory)
        pool, pool_said = pool_places(target, bias, memory)
        segments, segments_said = rseg_pages.undo_pages_places(target, bias, memory)
        sized = page_size_place(target, bias, memory)
    finally:
        memory.close()
    log_members = log_said["members"] | ({"none read": log_said["why"]} if "why" in log_said else {})
    said = {"from_code": {"log_t": log_members, "buf_pool_t": pool_said, "trx_rseg_t": segments_said}}
    history, said["from_code"]["trx_sys_t"] = history_place(target, bias)
    undo = UndoFiles(target.pid)
    files = {"undo_file_bytes": undo} if undo.read() else {}
    if not log and not pool and not history and not files and not segments:
        return {}, {"note": f"the build has no DWARF, and {log_said['why']}", **said}
    return {**log, **pool, **history, **files, **segments, **sized}, said


PAGE_SIZES = (4096, 8192, 16384, 32768, 65536)  # innodb_page_size's choices


def page_size_place(target, bias: int, memory: ServerMemory) -> dict[str, Place]:
    """The page size (ulong srv_page_size, exported), to tell pages in bytes: kept if its
    first reading is one of innodb_page_size's choices."""
    name = layouts.STATE_SCALARS["page_size"]
    found = target.find_objects([name]).get(name)
    place = Place(found.vaddr + bias, False, 0, 8) if found and found.size == 8 else None
    return {"page_size": place} if place and place.read(memory) in PAGE_SIZES else {}


def history_place(target, bias: int) -> tuple[dict[str, Place], str]:
    """The history list length through trx_sys, where the build's code confirmed the
    catalog's offset of rseg_history_len (machine_code.py: the atomic add
    trx_purge_add_update_undo_to_history makes to it), never on the catalog's word alone."""
    found = discover.layout(target)
    offset = found.get("members", {}).get("trx_sys_t.rseg_history_len")
    trx_sys = target.find_objects(["trx_sys"]).get("trx_sys")
    if "trx_sys_t.rseg_history_len" not in found.get("confirmed", []) or offset is None or trx_sys is None:
        return {}, "rseg_history_len: not confirmed by the build's code"
    via_pointer = bool(found["members"].get("trx_sys_t*"))
    return {"history": Place(trx_sys.vaddr + bias, via_pointer, offset, 8)}, \
        f"rseg_history_len {offset:#x}, the catalog's, confirmed by the build's code"


def log_places(target, bias: int, memory: ServerMemory) -> tuple[dict[str, Place | LsnPlace], dict]:
    """The LSN and the last checkpoint through log_sys: ({gauge: place}, {"members": what the
    code said of each, "why": why none, where none})."""
    members = log_code.log_members(target, discover.catalog_file().get("state_code", []))
    derived = {m: d.offset for m, d in members.items() if d.offset is not None}
    said = {"members": {m.split(".")[-1]: (f"{d.offset:#x} " if d.offset is not None else "") + d.said
                        for m, d in members.items()}}
    log_sys = target.find_objects([log_code.LOG_GLOBAL]).get(log_code.LOG_GLOBAL)
    if not log_sys or not {"log_t.sn", "log_t.last_checkpoint_lsn"} <= set(derived):
        why = "log_sys is not in the binary's symbols" if not log_sys else "the build's code gave no LSN or checkpoint"
        return {}, {**said, "why": why}
    at = log_sys.vaddr + bias
    places = {"lsn": LsnPlace(at, derived["log_t.sn"], derived.get("log_t.sn_locked")),
              "checkpoint_lsn": Place(at, True, derived["log_t.last_checkpoint_lsn"], 8)}
    lsn, checkpoint = (places[g].read(memory) if memory.fd is not None else None for g in ("lsn", "checkpoint_lsn"))
    if not (lsn and checkpoint and checkpoint <= lsn):
        return {}, {**said, "why": f"the build's code gave the log's offsets, but their first reading is no "
                                   f"log's (LSN {lsn}, checkpoint {checkpoint}): refused"}
    return places, said


POOL_GAUGES = {"dirty_pages": "flush_list", "free_pages": "free", "lru_pages": "LRU"}


def pool_places(target, bias: int, memory: ServerMemory) -> tuple[dict[str, Place], str]:
    """The dirty, free and data pages, each list's count added up over the instances of
    buf_pool_ptr: ({gauge: place}, what the code said). Kept only if the first reading is a
    pool's: data pages there, and no list longer than the pages the pool could hold."""
    lists = pool_code.pool_lists(target)
    found = target.find_objects([pool_code.POOL_GLOBAL, pool_code.INSTANCES_GLOBAL])
    pool, instances = (found.get(name) for name in (pool_code.POOL_GLOBAL, pool_code.INSTANCES_GLOBAL))
    if not lists.offsets:
        return {}, lists.said
    if pool is None or instances is None:
        return {}, f"{pool_code.INSTANCES_GLOBAL} is not in the binary's symbols"
    places = {gauge: Place(pool.vaddr + bias, True, lists.offsets[name], 8, stride=lists.stride,
                           count_at=instances.vaddr + bias) for gauge, name in POOL_GAUGES.items()}
    first = {gauge: place.read(memory) if memory.fd is not None else None for gauge, place in places.items()}
    if not first["lru_pages"] or any(v is None or v > MAX_POOL_PAGES for v in first.values()):
        return {}, f"{lists.said}, but their first reading is no pool's ({first}): refused"
    return places, lists.said


def state_plan(target) -> tuple[dict[str, Place | PoolLayout], dict]:
    """Where each gauge of a running target lives, and what meta.json says of it: {"read":
    [gauge ...]}, with "note" saying why when nothing can be read."""
    if not target.pid:
        return {}, {"read": [], "note": "no process to read"}
    found = layouts.answer(target.elf, target.debug) if target.elf else None
    bias = target.runtime_address(0)
    if found is None and bias is not None:
        places, said = code_places(target, bias)
        return places, {"read": list(places), **said, **peak_rate(places)}
    if found is None:
        return {}, {"read": [], "note": "the build has no DWARF (its debug file would give it)"}
    if bias is None:
        return {}, {"read": [], "note": "where the server's executable is mapped cannot be told"}
    places = places_of(found, bias)
    return places, ({"read": list(places), **peak_rate(places)} if places
                    else {"read": [], "note": "the build's DWARF names none of it"})


def peak_rate(places: dict) -> dict:
    """What meta.json says of the checkpoint age's reads between snapshots, where both LSNs
    are read (ServerState.watch_age): the report says how often its peak was looked for."""
    return {"age_reads_per_s": round(1 / PEAK_EVERY_S)} if {"lsn", "checkpoint_lsn"} <= set(places) else {}


def open_state(pid: int, places: dict[str, Place | PoolLayout]) -> ServerState | None:
    """The reader of those places in the process (state_plan's), or None if its memory
    cannot be opened."""
    memory = ServerMemory(pid)
    return ServerState(memory, places, pid) if memory.fd is not None else None
