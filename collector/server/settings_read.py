"""The server's settings that decide what purge, the redo log, the page cleaners and a
replica's applier can do, read once at the start of a recording and once at its end, so that
advice can speak of the value in force ("innodb_purge_threads is 4") and a setting changed
while recording is seen.

One `SHOW GLOBAL VARIABLES` over a short session: the server answers it from memory (no
table is opened, no page read). Names either family lacks are simply not returned; both
spellings of the renamed ones are asked (MySQL 8.0.26+ says replica_* for slave_*)."""
from __future__ import annotations

import pymysql

from . import sql

NAMES = (
    # purge: its threads, its batch, the DML delay that bounds the history
    "innodb_purge_threads", "innodb_purge_batch_size", "innodb_max_purge_lag",
    "innodb_max_purge_lag_delay", "innodb_max_purge_lag_wait", "innodb_purge_rseg_truncate_frequency",
    "innodb_undo_log_truncate", "innodb_max_undo_log_size", "transaction_isolation", "tx_isolation",
    # the redo log's room and the page cleaners that make it
    "innodb_log_file_size", "innodb_log_files_in_group", "innodb_redo_log_capacity",
    "innodb_log_buffer_size", "innodb_io_capacity", "innodb_io_capacity_max", "innodb_page_cleaners",
    "innodb_lru_scan_depth", "innodb_buffer_pool_size", "innodb_max_dirty_pages_pct",
    "innodb_flush_log_at_trx_commit", "innodb_log_file_buffering", "sync_binlog", "log_bin",
    # a replica's appliers
    "replica_parallel_workers", "slave_parallel_workers", "slave_parallel_threads", "slave_parallel_mode",
    "replica_preserve_commit_order", "slave_preserve_commit_order",
)
MAX_VALUE = 256  # characters kept of a value: these are numbers and words, never statements


def read_settings(session: sql.SqlSession) -> dict[str, str]:
    """{name: value} of NAMES as the server has them now; empty when it cannot be asked."""
    marks = ", ".join(["%s"] * len(NAMES))
    try:
        rows = session.query(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({marks})", NAMES)
    except (pymysql.MySQLError, OSError, ValueError):
        return {}
    return {str(name): str(value)[:MAX_VALUE] for name, value in rows}


def settings_at(pid: int, dsn: str | None) -> tuple[dict[str, str], str | None]:
    """The settings in force now over a session of their own, and why not where none."""
    session, reason = sql.connect(pid, dsn)
    if session is None:
        return {}, reason
    with session:
        read = read_settings(session)
    return read, None if read else "the server's variables could not be read"


def settings_meta(at_start: dict[str, str], at_end: dict[str, str], note: str | None) -> dict:
    """What meta.json keeps: the values at the start, those that differ at the end, and why
    none were read."""
    changed = {name: [at_start.get(name), value] for name, value in at_end.items()
               if at_start.get(name) != value}
    return {"at_start": at_start, "changed": changed, "note": note}
