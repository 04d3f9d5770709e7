"""What kind of thread a latch holder is: the `role` column of the latch-holders table,
computed when the recording is written.

A thread's role comes from its name where the server names its threads (MySQL 8.0+:
ib_pg_flush_co, ib_purge_*, ib_src_main ...), else from the frames of its stack (MariaDB
runs purge, the page cleaner's helpers and the master task on unnamed thread-pool
threads), the outermost frame that matches one of ROLES."""
from __future__ import annotations

import re

# (role, pattern on the thread name, pattern on the folded stack), most specific first
ROLES = [
    ("purge coordinator", r"^ib_purge_co|^ib_purge_thr$", r"purge_coordinator|srv_purge_coordinator_thread|trx_purge\b|purge_coordinator_callback|purge_truncation_callback"),
    ("purge worker", r"^ib_purge_wor|^ib_purge_wkr", r"purge_worker_callback|srv_worker_thread|row_purge"),
    ("page cleaner", r"^ib_pg_flush|^ib_page_clean|^page_cleaner", r"buf_flush_page_cleaner|pc_flush_slot|buf_flush_page_coordinator|buf_flush_page_cleaner_thread"),
    ("buffer pool dump/load", r"^ib_buf_dump|^ib_buf_load", r"buf_dump_thread|buf_load_thread|buf_dump_load_func|buf_load\b|buf_dump\b"),
    ("I/O completion", r"^ib_io_|^io_", r"io_handler_thread|fil_aio_wait|io_callback|buf_page_io_complete|read_io_callback|write_io_callback"),
    ("master thread", r"^ib_src_main|^ib_master", r"srv_master_thread|srv_master_callback"),
    # the receiver first: it writes the relay log (and the source's position), it applies nothing
    ("replication receiver", r"^rpl_rca_io|^rpl_.*_io\b|^slave_io|^replica_io", r"handle_slave_io|handle_replica_io"),
    ("replication applier", r"^rpl_|^slave_sql|^slave_worker|^replica_|^mysqld/rpl", r"handle_slave_sql|Slave_worker|handle_rpl_parallel_thread|rpl_parallel|Rpl_applier|slave_worker_exec"),
    ("log writer", r"^ib_log", r"log_writer|log_flusher"),
    ("user connection", r"^one_connection$|^connection$", r"do_command|handle_one_connection|do_handle_one_connection|tp_callback|threadpool_process_request|dispatch_command"),
]
OTHER = "other"


def role_of(thread: str | None, stack: str | None) -> str:
    """The role of a thread from its name, else from the frames of its stack: the one
    nearest the thread's start that says a role (a connection's commit may call into the
    log or purge code; what it is, its outer frames tell)."""
    for role, by_name, _ in ROLES:
        if thread and re.search(by_name, thread):
            return role
    for frame in (stack or "").split(";"):
        for role, _, by_frames in ROLES:
            if re.search(by_frames, frame):
                return role
    return OTHER
