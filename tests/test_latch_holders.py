"""Latch holders and pthread mutex waits on real servers.

Many connections updating a few hot rows wait on each other's block latches: whoever woke
a waiter released the latch it waited on, so every holder stack must be a release path
(an unlock, a futex wake, an event set) reached from the update code, on a user
connection. On MariaDB 10.6+ the same load makes threads wait on pthread mutexes (the
table cache, MDL, lock_sys): those waits sleep in libc, built without frame pointers,
and their stacks must still reach the server function that locked the mutex."""
from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

from innostall.analysis.holders import top_holders
from innostall.collector.discovery import libc
from innostall.format import journal as fmt
from innostall.format.roles import ROLES, role_of

SERVERS = ["mariadb-11.4.5", "mysql-8.0.15", "mariadb-10.2.11", "mysql-9.7.4"]
# where a thread that holds a latch lets it go: the unlock, then the futex wake or event set
RELEASE = re.compile(r"unlock|release|wake|os_event::set|os_event_set|sync_array_object_signalled|"
                     r"pthread_cond_(?:broadcast|signal)|pthread_mutex_unlock|__lll_lock_wake|syscall")
UPDATE_PATH = re.compile(r"row_upd|row_purge|btr_cur|btr_pcur|mtr_t::commit|mtr_commit|row_ins|trx_commit|"
                         r"lock_rec|row_search|buf_page_get|buf_page_io_complete")  # the last: a page read's end
LIBC_FRAME = fmt.LIBC_FRAME  # the C and C++ libraries' frames, as the lock-site names skip them


@pytest.mark.parametrize("server_name", SERVERS)
def test_hot_row_holders_are_update_paths_of_user_connections(servers, hot_rows, server_name):
    srv = servers(server_name)
    rec, _ = hot_rows(server_name)
    holders = rec.latch_holders
    total = holders["wait_us"].sum()
    waited_us = (rec.counter_total("block_wait_ns") + rec.counter_total("other_latch_wait_ns")) / 1000
    print(f"{server_name}: {len(holders)} holder stacks, {total / 1000:.0f} ms of {waited_us / 1000:.0f} ms "
          f"waited; by role {holders.groupby('role')['wait_us'].sum().round().to_dict()}")
    for latch in top_holders(holders, latches=3, per_latch=1):
        print(f"  {latch['name']} {latch['latch']}: {latch['wait_ms']} ms; {latch['holders'][0]['role']}: "
              f"...{latch['holders'][0]['stack'][-160:]}")
    assert len(holders) and total > 0
    # named as the latch report names them (the latches lines, by address): the blocks at
    # least (MySQL's os_event mutexes, say, have no name there)
    named = holders.groupby("name")["wait_us"].sum()
    print(f"  named: {named.drop('unknown', errors='ignore').sum() / total:.0%} of the time")
    assert (holders["name"].str.startswith("block ")).any(), named.to_dict()
    # holders share out the woken waits' time, no more (waits still open at the end
    # were charged their stretches up to their last wake, but not counted as waited)
    assert total <= waited_us * 1.02
    assert holders["waits"].sum() <= rec.counter_total("holders_found") <= 1.01 * holders["waits"].sum()
    # every wake the tracepoint tied to a waiter comes from a release of a latch. Without the
    # C library's symbols (no libc6-dbg, as in a fresh root) its inner frames are addresses:
    # it wakes a thread only in its unlock and signal paths, so a wake from inside it is one.
    leaf = holders["stack"].str.rsplit(";", n=1).str[-1]
    released = holders["stack"].str.contains(RELEASE) | leaf.str.match(r"libc\.so\.6\+|libc-[\d.]+\.so\+")
    assert holders.loc[released, "wait_us"].sum() >= 0.9 * total, \
        holders.loc[~released].nlargest(3, "wait_us")[["thread", "stack"]].to_dict("records")
    # the block latches the updates waited on were held by page accesses: the updates
    # themselves, purge cleaning up after them, a page read ending
    blocks = holders[holders["name"].str.startswith("block ")]  # an S/X wait may be another rw_lock's
    top = blocks.nlargest(5, "wait_us")
    for row in top.itertuples():
        print(f"  block holder {row.role} {row.wait_us:.0f} us: {row.stack}")
    # A waker's stack the BPF side could not read is "[unknown]": not known, not another path.
    # It must stay a minority (a fresh root once had one of 6 waits, 18 ms, among the top 5).
    unread = top["stack"] == "[unknown]"
    assert (~unread).any() and top.loc[~unread, "stack"].str.contains(UPDATE_PATH).all(), list(top["stack"])
    assert top.loc[unread, "wait_us"].sum() < 0.5 * top["wait_us"].sum(), list(top["stack"])
    by_role = blocks.groupby("role")["wait_us"].sum()
    assert by_role.get("user connection", 0) > 0, by_role.to_dict()
    if server_name.startswith("mariadb-11"):  # its purge hardly holds a block there: ~1%
        assert by_role.idxmax() == "user connection", by_role.to_dict()
    assert srv.serves()


def test_pthread_mutex_waits_reach_the_server_frames(servers, hot_rows):
    srv = servers("mariadb-11.4.5")
    rec, probes = hot_rows(srv.name)
    mutex = next(p for p in probes if p.name == "mutex_wait")
    assert mutex.path and "libc" in mutex.library  # in the C library, not the server
    waits, wait_ns = rec.counter_total("mutex_waits"), rec.counter_total("mutex_wait_ns")
    # the waits shorter than the recording's stack threshold keep no stack, and are counted so
    stacked = waits - rec.counter_total("mutex_waits_unstacked")
    stacks = rec.wait_stacks[rec.wait_stacks["mode"] == "other"]
    frames = stacks["stack"].str.split(";")
    # the innermost frame that is not libc's, and how many libc frames sit above it
    server_leaf = frames.map(lambda f: next((x for x in reversed(f) if not LIBC_FRAME.match(x)), None))
    libc_frames = frames.map(lambda f: next((i for i, x in enumerate(reversed(f))
                                             if not LIBC_FRAME.match(x)), len(f)))
    in_libc = libc_frames > 0
    reaching = in_libc & server_leaf.notna() & (frames.map(len) > libc_frames + 2)
    print(f"mutex waits {waits}, {wait_ns / 1e6:.0f} ms; stacks ending in libc {in_libc.sum()}, "
          f"reaching the server {stacks.loc[reaching, 'waits'].sum()} of {stacks.loc[in_libc, 'waits'].sum()} waits "
          f"({stacked} long enough for a stack); "
          f"callers {server_leaf[reaching].value_counts().head(4).to_dict()}; "
          f"unwind steps {rec.counter_total('unwind_steps')}, failed {rec.counter_total('unwind_fails')}")
    assert waits > 50 and stacked > 25
    # each mutex wait's stack ends in libc (the tables are printed just before the counters)
    assert 0.99 * stacked <= stacks.loc[in_libc, "waits"].sum() <= stacked
    assert stacks.loc[reaching, "wait_us"].sum() >= 0.95 * stacks.loc[in_libc, "wait_us"].sum()
    assert server_leaf[reaching].map(lambda f: f.startswith("[unknown]") or "+0x" in f).sum() == 0
    # a mutex's waiters are woken by whoever unlocks it: their holders release it in libc
    mutex_latches = set(rec.latch_holders.loc[rec.latch_holders["stack"].str.contains(
        "pthread_mutex_unlock|__lll_lock_wake|libc"), "latch"])
    assert mutex_latches
    assert srv.serves()


def test_libc_frame_table_matches_readelf():
    """The unwinder's table against binutils' reading of the same .eh_frame."""
    path = next((p for p in ["/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"]
                 if libc.os.path.exists(p)), None)
    if path is None:
        pytest.skip("no glibc here")
    table = libc.cfi_table(libc.ElfImage(path))
    done = subprocess.run(["readelf", "--debug-dump=frames-interp", path], capture_output=True, text=True)
    rows = []
    for line in done.stdout.splitlines():
        m = re.match(r"^([0-9a-f]{16}) (rsp|rbp)\+(\d+) ", line)
        if m and int(m.group(1), 16):  # pc 0: a CIE's initial rule, no code
            rows.append((int(m.group(1), 16), m.group(2), int(m.group(3))))
    assert len(rows) > 10000
    pcs = np.array([pc for pc, _, _ in rows])
    found = table[np.searchsorted(table["pc"], pcs, side="right") - 1]
    want_base = np.array([libc.CFA_RSP if reg == "rsp" else libc.CFA_RBP for _, reg, _ in rows])
    want_offset = np.array([offset for _, _, offset in rows])
    wrong = (found["cfa_base"] != want_base) | (found["cfa_offset"] != want_offset)
    assert not wrong.any(), [hex(pc) for pc in pcs[wrong][:5]]


@pytest.mark.parametrize("thread, stack, role", [
    ("ib_pg_flush_co", "", "page cleaner"),
    ("ib_purge_wkr-1", "", "purge worker"),
    ("ib_src_main", "", "master thread"),
    ("connection", "", "user connection"),
    ("mariadbd", "tpool::task_group::execute;purge_coordinator_callback(void*);trx_purge", "purge coordinator"),
    ("mariadbd", "tpool::worker;purge_worker_callback(void*);row_purge_step", "purge worker"),
    ("mariadbd", "buf_flush_page_cleaner();buf_flush_list", "page cleaner"),
    ("mariadbd", "do_command(THD*, bool);dispatch_command;mysql_update", "user connection"),
    ("mariadbd", "handle_slave_sql;exec_relay_log_event", "replication applier"),
    ("mariadbd", "handle_rpl_parallel_thread;rpl_parallel_thread::run", "replication applier"),
    ("mariadbd", "handle_slave_io;queue_event", "replication receiver"),
    ("rpl_rca_wkr-0", "", "replication applier"),
    ("rpl_rca_io", "", "replication receiver"),
    ("mariadbd", "buf_dump_load_func;buf_load()", "buffer pool dump/load"),
    ("mariadbd", "srv_master_callback;srv_master_do_active_tasks", "master thread"),
    ("mariadbd", "tpool::thread_pool_generic::worker_main;tpool::task_group::execute;io_callback", "I/O completion"),
    ("mysqld", "start_thread;io_handler_thread;fil_aio_wait(unsigned long);buf_page_io_complete", "I/O completion"),
    ("mariadbd", "tpool::thread_pool_generic::worker_main;tpool::thread_pool_generic::get_task", "other"),
])
def test_roles_from_thread_names_or_frames(thread, stack, role):
    assert role_of(thread, stack) == role


def test_every_role_has_a_name_and_a_frame_pattern():
    assert all(re.compile(by_name) and re.compile(by_frames) for _, by_name, by_frames in ROLES)


def test_hidden_wait_function_is_the_one_debug_symbols_name():
    """Without symbols, __lll_lock_wait is found as pthread_mutex_lock's unexported callee
    that makes the futex call: the debug file (libc6-dbg), where there is one, agrees."""
    lib = libc.find(os.getpid())  # this Python runs on the host's glibc
    named = lib.functions(["__lll_lock_wait"]).get("__lll_lock_wait") if lib else None
    if named is None or named.table != ".symtab":
        pytest.skip("no glibc with debug symbols here (libc6-dbg)")
    assert libc.hidden_callee(lib, "pthread_mutex_lock").vaddr == named.vaddr


def test_page_index_bounds_the_search():
    """The row in force at any pc lies in the rows its page's entries bound, as the BPF
    search assumes (probes/unwind.bpf.h, cfi_row_at)."""
    lib = libc.find(os.getpid())
    if lib is None:
        pytest.skip("no glibc here")
    table = libc.cfi_table(lib.image)
    pages = libc.page_index(table)
    pcs = np.random.default_rng(3).integers(table["pc"][0], table["pc"][-1], 20000)
    want = np.searchsorted(table["pc"], pcs, side="right") - 1
    page = pcs >> libc.CFI_PAGE_SHIFT
    assert ((pages[page] <= want) & (want <= pages[page + 1])).all()
    assert (np.diff(pages.astype(np.int64)) >= 0).all()
