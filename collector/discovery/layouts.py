"""Struct layouts from the server's own DWARF: every member the BPF programs read
(probes/innostall.h, INNOSTALL_LAYOUT) looked up by type and member name, whatever the
build, so a build no catalog range lists is decoded as well as one it does.

The reader is dwarf-layouts (collector/discovery/dwarf-layouts/, Rust on gimli): one pass
over .debug_info that skips what it was not asked for, about a second on a 300 MB
mariadbd, where pyelftools takes minutes. Its answer is cached per build id, beside the
other per-build facts (cache.py). A build without DWARF (a stripped distro binary without
its debug file) keeps the catalog's [[layout]] ranges; where both speak, the DWARF wins
and a disagreement is said (`innostall probes`)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess

from innostall import resources

from . import cache
from .elf import ElfImage

FORMAT = 10  # of the cached answer; raised when the request or its reading changes
# The loader's member -> the member paths that may hold it, across releases (10.6+ moved
# the block latch into buf_page_t). Offsets in bytes, but the flag's in bits.
PATHS = {
    "buf_block_t.lock": ("buf_block_t.page.lock", "buf_block_t.lock"),
    "buf_page_t.frame": ("buf_page_t.frame",),
    "buf_page_t.zip.fix": ("buf_page_t.zip.fix",),
    "rw_lock_t.is_block_lock": ("rw_lock_t.is_block_lock",),
    "sync_cell_t.latch": ("sync_cell_t.latch",),
    "sync_cell_t.request_type": ("sync_cell_t.request_type",),
    "trx_sys_t.rseg_history_len": ("trx_sys_t.rseg_history_len",),
    # a byte that is 0 while the view is closed: MariaDB 10.5.23+'s bool, or the low byte of
    # the state 10.3.4-10.5.22 keep (READ_VIEW_STATE_CLOSED 0, SNAPSHOT 1, OPEN 2)
    "ReadView.m_open": ("ReadView.m_open", "ReadView.m_state"),
    "buf_pool_t.done_free": ("buf_pool_t.done_free",),  # MariaDB 10.6+: the free-page waiters' condition
}
CONSTANTS = ("buf_page_t::READ_FIX", "buf_page_t::WRITE_FIX")
BITS = {"rw_lock_t.is_block_lock"}
# Members the sux model needs, and the rw_lock model's: a model is claimed only whole.
MODELS = {
    "sux": ("buf_block_t.lock", "buf_page_t.frame", "buf_page_t.zip.fix", "buf_page_t::READ_FIX",
            "buf_page_t::WRITE_FIX"),
    "rw_lock": ("buf_block_t.lock", "rw_lock_t.is_block_lock", "sync_cell_t.latch",
                "sync_cell_t.request_type"),
}
RW_LOCK_TYPES = ("rw_lock_t", "BPageLock")  # a block latch of these types is an rw_lock_t
# Server globals whose members are latches: flattened, so that a latch inside one is named
# by its member path (lock_sys.wait_mutex), not an offset. By their source names: a static's
# symbol is mangled (_ZL10flush_lock), its DWARF name is not. A name a build lacks costs nothing.
LATCH_GLOBALS = ("lock_sys", "log_sys", "purge_sys", "dict_sys", "trx_sys", "buf_pool", "fil_system",
                 "recv_sys", "buf_dblwr", "srv_sys", "page_cleaner", "btr_search_sys", "ibuf",
                 "dict_operation_lock", "fts_optimize_wq",
                 # MariaDB 10.6+: the redo log's group commit locks, purge's thread-pool tasks
                 "flush_lock", "write_lock", "purge_worker_task", "purge_coordinator_task")
# The server's state read from its memory each interval (collector/server/state.py): each
# gauge by the member paths that may hold it, from a global, across releases. buf_pool_ptr
# (MariaDB 10.2-10.4, MySQL) points to srv_buf_pool_instances instances, added up.
STATE_PATHS = {
    "lsn": ("log_sys.lsn",),
    "checkpoint_lsn": ("log_sys.last_checkpoint_lsn",),
    "log_capacity": ("log_sys.log_capacity", "log_sys.log_group_capacity"),
    "max_checkpoint_age": ("log_sys.max_checkpoint_age",),
    "async_flush_age": ("log_sys.max_modified_age_async",),
    "sync_flush_age": ("log_sys.max_modified_age_sync",),
    "dirty_pages": ("buf_pool.flush_list.count", "buf_pool_ptr.flush_list.count"),
    "free_pages": ("buf_pool.free.count", "buf_pool_ptr.free.count"),
    "lru_pages": ("buf_pool.LRU.count", "buf_pool_ptr.LRU.count"),
    "history": ("trx_sys.rseg_history_len",),
}
# Each rollback segment's history (MariaDB 10.6+ keeps no total) and size, in trx_sys.rseg_array
STATE_ARRAYS = ("trx_sys.rseg_array", "trx_rseg_t.history_size", "trx_rseg_t.curr_size", "trx_rseg_t")
STATE_GLOBALS = ("log_sys", "buf_pool", "buf_pool_ptr", "srv_buf_pool_instances")
STATE_SCALARS = {"page_size": "srv_page_size"}  # gauges that are whole globals
# The buffer pool's blocks, walked to count the undo pages cached (collector/server/pool_walk.py),
# by the names each family gives them
POOL_PATHS = {
    "chunks": ("buf_pool.chunks", "buf_pool_ptr.chunks"),
    "n_chunks": ("buf_pool.n_chunks", "buf_pool_ptr.n_chunks"),
    "chunk_blocks": ("buf_pool_t::chunk_t.blocks", "buf_chunk_t.blocks"),
    "chunk_count": ("buf_pool_t::chunk_t.size", "buf_chunk_t.size"),
    "frame": ("buf_block_t.page.frame", "buf_block_t.frame"),
    "state": ("buf_block_t.page.zip.fix", "buf_block_t.page.state", "buf_block_t.page.state_"),
}
POOL_CONSTANTS = ("buf_page_t::UNFIXED", "buf_page_t::READ_FIX", "buf_page_t::WRITE_FIX",
                  "buf_page_state::BUF_BLOCK_FILE_PAGE")
POOL_TYPES = ("buf_pool_t::chunk_t", "buf_chunk_t", "buf_block_t")
POOL_QUERIES = (*(p for paths in POOL_PATHS.values() for p in paths), *POOL_CONSTANTS, *POOL_TYPES)
# The transactions' list the open read views are read from (collector/server/view_walk.py):
# (the first element's pointer, from trx_sys; the next one's, in trx_t), first one present wins
VIEW_LISTS = (
    ("trx_sys.trx_list.trx_list.sentinel_.next", "trx_t.next"),  # MariaDB 10.6+: an ilist
    ("trx_sys.trx_list.start", "trx_t.trx_list.next"),  # MariaDB 10.3-10.5: a UT_LIST
    ("trx_sys.mysql_trx_list.start", "trx_t.mysql_trx_list.next"),  # MySQL 5.7-8.0.?, MariaDB 10.2
    ("trx_sys.mysql_trx_list.first_element", "trx_t.mysql_trx_list.next"),  # later MySQL
)
VIEW_PATHS = {
    "read_view": ("trx_t.read_view",),  # embedded (MariaDB 10.3+) or a pointer (MySQL)
    "open": ("ReadView.m_open", "ReadView.m_state", "ReadView.m_closed"),
    "limit_no": ("ReadView.m_low_limit_no",),
    "trx_id": ("trx_t.id",),
    "thd": ("trx_t.mysql_thd",),
    "started": ("trx_t.start_time",),  # time_t: seconds of CLOCK_REALTIME
    "connection_id": ("THD.thread_id", "THD.m_thread_id"),
    "os_tid": ("THD.os_thread_id",),  # MariaDB 10.1.8+: PROCESSLIST.TID
}
VIEW_NEEDED = ("read_view", "open", "limit_no", "trx_id")
VIEW_QUERIES = (*(p for pair in VIEW_LISTS for p in pair), *(p for paths in VIEW_PATHS.values() for p in paths))
# The words the governor reads several times a second to open groups at once
# (collector/server/signals.py): waits in progress, wait counters, by the names each family gives them
SIGNAL_QUERIES = ("lock_sys.wait_count", "lock_sys_t::WAIT_COUNT_STEP", "buf_pool.stat.LRU_waits", "log_sys.waits",
                  "lock_sys")
TIMEOUT_S = 120  # a debug file several GB large, on a slow disk


def dwarf_file(elf: ElfImage, debug: ElfImage | None) -> str | None:
    """The file holding the build's DWARF: its separate debug file, else the binary."""
    for image in (debug, elf):
        if image is not None and image.has_section(".debug_info"):
            return image.path
    return None


def read(path: str) -> dict | None:
    """dwarf-layouts' answer for the file at path (see its README for the JSON); None when
    the reader is missing or fails (the catalog then speaks alone)."""
    tool = resources.dwarf_tool()
    if not tool.is_file():
        return None
    request = [*(p for paths in PATHS.values() for p in paths), *CONSTANTS, "trx_sys",
               *(p for paths in STATE_PATHS.values() for p in paths), *STATE_ARRAYS, *STATE_GLOBALS,
               *STATE_SCALARS.values(), *POOL_QUERIES, *VIEW_QUERIES, *SIGNAL_QUERIES]
    flatten = [arg for name in LATCH_GLOBALS for arg in ("--flatten", name)]
    try:
        done = subprocess.run([str(tool), "--compact", "-j", "2", path, *request, *flatten],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    try:
        return json.loads(done.stdout)
    except ValueError:
        return None


def build_key(path: str, elf: ElfImage) -> str:
    """The build id; without one (older builds), the DWARF file's identity on disk."""
    if elf.build_id:
        return elf.build_id
    st = os.stat(path)
    return hashlib.sha1(f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()


def answer(elf: ElfImage, debug: ElfImage | None) -> dict | None:
    """The reader's answer for this build, from the cache when it was read before."""
    path = dwarf_file(elf, debug)
    if path is None:
        return None
    directory = cache.cache_dir()
    cached = os.path.join(directory, f"layouts-v{FORMAT}-{build_key(path, elf)}.json") if directory else None
    if cached and os.path.isfile(cached):
        try:
            with open(cached) as f:
                return json.load(f)
        except (OSError, ValueError):
            pass
    found = read(path)
    if found is not None and cached:
        tmp = f"{cached}.{os.getpid()}.tmp"
        try:
            with open(tmp, "w") as f:
                json.dump(found, f)
            os.replace(tmp, cached)
        except OSError:
            pass
    return found


def members(found: dict) -> dict[str, int]:
    """The loader's members this build's DWARF gives: {C member: value}."""
    paths, known = found.get("paths", {}), {}
    for member, candidates in PATHS.items():
        hit = next((paths[p] for p in candidates if p in paths), None)
        if hit is not None:
            known[member] = hit["bit_offset"] if member in BITS else hit["offset"]
            if member == "trx_sys_t.rseg_history_len":
                known["sizeof(trx_sys_t.rseg_history_len)"] = hit["size"]
    for constant in CONSTANTS:
        if constant in found.get("constants", {}):
            known[constant] = found["constants"][constant]["value"]
    trx_sys = found.get("globals", {}).get("trx_sys")
    if trx_sys and "trx_sys_t.rseg_history_len" in known:
        known["trx_sys_t*"] = int(bool(trx_sys["pointer"]))
    return known


def latch_model(found: dict, known: dict[str, int]) -> str | None:
    """sux or rw_lock when every member that model needs is known, told apart by the block
    latch's type; None otherwise."""
    paths = found.get("paths", {})
    block = next((paths[p] for p in PATHS["buf_block_t.lock"] if p in paths), None)
    if block is None:
        return None
    model = "rw_lock" if block["type"] in RW_LOCK_TYPES else "sux"
    return model if all(m in known for m in MODELS[model]) else None


def from_dwarf(elf: ElfImage, debug: ElfImage | None) -> dict | None:
    """{"latch_model": NAME or None, "members": {C member: value}, "globals": {name:
    [[offset, size, path]]}} read from the build's DWARF; None without DWARF or reader."""
    found = answer(elf, debug)
    if found is None:
        return None
    known = members(found)
    model = latch_model(found, known)
    # one model's own members mean nothing to a build of the other (or of neither, whole)
    foreign = (set(MODELS["sux"]) ^ set(MODELS["rw_lock"])) - set(MODELS.get(model, ()))
    known = {m: v for m, v in known.items() if m not in foreign}
    return {"latch_model": model, "members": known, "globals": global_members(found)}


def global_members(found: dict) -> dict[str, list[list]]:
    """Each flattened global's own members (a latch is one of them, or inside one):
    {global: [[offset, size, "global.member"]]}. Globals that are pointers are left out:
    their latches live in the object they point to, not at the global's address."""
    out = {}
    for name, flat in found.get("flatten", {}).items():
        rows = [[m["offset"], m["size"], m["path"]] for m in flat.get("members", [])
                if m.get("size") and m["path"].count(".") == 1]
        if rows and not flat.get("via_pointer"):
            out[name] = rows
    return out


_read: dict[tuple, dict | None] = {}


def layout_of(elf: ElfImage, debug: ElfImage | None) -> dict | None:
    """from_dwarf, read once per process for a build (discovery asks several times)."""
    if elf is None:  # a target known by name only
        return None
    key = (elf.path, elf.build_id, debug.path if debug else None)
    if key not in _read:
        _read[key] = from_dwarf(elf, debug)
    return _read[key]


def view_list(found: dict) -> tuple[dict, dict] | None:
    """The transactions' list the open read views are walked on: its first element's
    pointer and trx_t's next pointer, as the reader gave them; None if the build has none."""
    paths = found.get("paths", {})
    return next(((paths[head], paths[nxt]) for head, nxt in VIEW_LISTS if head in paths and nxt in paths), None)


def view_member(found: dict, name: str) -> dict | None:
    """A VIEW_PATHS member as the reader gave it, with the path that held it."""
    paths = found.get("paths", {})
    return next((paths[p] | {"path": p} for p in VIEW_PATHS[name] if p in paths), None)


def views_walkable(found: dict | None) -> bool:
    """Whether this build's open read views can be read from its memory (view_walk.py)."""
    return bool(found and found.get("globals", {}).get("trx_sys", {}).get("address") and view_list(found)
                and all(view_member(found, name) for name in VIEW_NEEDED))
