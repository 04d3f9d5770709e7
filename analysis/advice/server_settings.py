"""What advice needs to know of a server's settings: the value in force (the recording's
meta.json keeps them: collector/server/settings_read.py) and whether SET GLOBAL changes it
on this family and version, from the servers' manuals:

- innodb_purge_threads: MariaDB 10.5.2+ (purge became a pool of tasks); MySQL: at start only.
- innodb_log_file_size: MariaDB 10.11+ resizes the redo log online; MySQL 8.0.30+ has
  innodb_redo_log_capacity instead, online; older: at start only.
- the purge batch, the purge lag and its delay, the I/O capacity, the LRU scan depth, the
  commit's flush and sync_binlog: at any time, on every supported release.
- a replica's parallel appliers (slave_parallel_threads, replica_parallel_workers): at any
  time, taking effect when the applier is restarted (STOP/START SLAVE SQL_THREAD)."""
from __future__ import annotations

ALWAYS = {"innodb_purge_batch_size", "innodb_max_purge_lag", "innodb_max_purge_lag_delay", "innodb_io_capacity",
          "innodb_io_capacity_max", "innodb_lru_scan_depth", "innodb_flush_log_at_trx_commit", "sync_binlog"}
SINCE = {("mariadb", "innodb_purge_threads"): (10, 5, 2), ("mariadb", "innodb_log_file_size"): (10, 11, 0),
         ("mysql", "innodb_redo_log_capacity"): (8, 0, 30)}


def release(version: str | None) -> tuple[int, ...]:
    """'11.4.5-MariaDB-log' → (11, 4, 5); unknown → ()."""
    parts = []
    for piece in str(version or "").split("-")[0].split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


def family_of(meta: dict) -> str:
    """'mariadb' or 'mysql' (Percona Server is MySQL here)."""
    return "mariadb" if "mariadb" in str(meta.get("target", {}).get("family", "")).lower() else "mysql"


def online(name: str, meta: dict) -> bool:
    """Whether SET GLOBAL changes name on the recorded server while it runs."""
    if name in ALWAYS:
        return True
    since = SINCE.get((family_of(meta), name))
    known = release(meta.get("target", {}).get("version"))
    return since is not None and bool(known) and known >= since


def in_force(meta: dict) -> dict[str, str]:
    """The settings the recording read at its start (empty: --no-sql, or an older recording)."""
    return dict((meta.get("server_variables") or {}).get("at_start") or {})


def number(settings: dict[str, str], name: str) -> int | None:
    try:
        return int(float(settings[name]))
    except (KeyError, ValueError):
        return None
