"""What names latch holders and mutex waits, without a server: libc's frame table against
readelf's, the roles told from thread names or frames, the wait function debug symbols name,
and the page index's bounds (the real servers' holders: tests/live/test_latch_holders_live.py)."""
from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

from innostall.collector.discovery import libc
from innostall.format.roles import ROLES, role_of


@pytest.mark.heavy  # reads the host's libc's .eh_frame, and readelf's: ~1.7 s of CPU
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


@pytest.mark.heavy  # reads the host's libc and a fixture's debug symbols: ~2 s of CPU
def test_hidden_wait_function_is_the_one_debug_symbols_name():
    """Without symbols, __lll_lock_wait is found as pthread_mutex_lock's unexported callee
    that makes the futex call: the debug file (libc6-dbg), where there is one, agrees."""
    lib = libc.find(os.getpid())  # this Python runs on the host's glibc
    named = lib.functions(["__lll_lock_wait"]).get("__lll_lock_wait") if lib else None
    if named is None or named.table != ".symtab":
        pytest.skip("no glibc with debug symbols here (libc6-dbg)")
    assert libc.hidden_callee(lib, "pthread_mutex_lock").vaddr == named.vaddr


@pytest.mark.heavy  # reads the host's libc's .eh_frame: ~1.5 s of CPU
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
