"""The server's state read by SQL, for the gauges its memory cannot give: a build without
DWARF (every MySQL build a DBA runs is stripped) has no offsets for state.py, but where
innostall may log in the server tells the same figures itself. Into the same gauges
(server.NAME) as the memory's readings; the recording says which came from where.

Each snapshot, from the cheapest source that has the figure:

  INNODB_METRICS (where the counter is enabled; PROCESS privilege)
    log_lsn_current, log_lsn_last_checkpoint     -> lsn, checkpoint_lsn
    log_max_modified_age_async, _sync            -> async_flush_age, sync_flush_age: the
        server's own flush points (log_sys's max_modified_age_*), never derived by us
    trx_rseg_history_len                         -> history
    trx_rseg_current_size                        -> undo_pages (the rollback segments' pages)
  SHOW GLOBAL STATUS (no privilege)
    Innodb_redo_log_current_lsn, _checkpoint_lsn -> lsn, checkpoint_lsn (MySQL 8.0.30+)
    Innodb_redo_log_capacity_resized             -> log_capacity (MySQL 8.0.30+)
    Innodb_buffer_pool_pages_dirty, _free, _data -> dirty_pages, free_pages, lru_pages
    Innodb_page_size                             -> page_size
  SHOW ENGINE INNODB STATUS, only where neither gave the LSN (5.7 and 8.0 before 8.0.30
    with the log metrics disabled): its LOG and TRANSACTIONS sections, parsed
  INFORMATION_SCHEMA.FILES, the undo tablespaces (MySQL 8.0+)   -> undo_file_bytes, read
    every UNDO_FILES_EVERY-th snapshot: it opens the data dictionary

The flush points have no other source: where the metrics are disabled, none is recorded
(MySQL's derivation from the log's capacity changed with 8.0.30's redo; a guess would put
the verdict's bound in the wrong place). Nothing that scans the buffer pool is run
(INNODB_BUFFER_PAGE). Every statement is read-only; one that fails is dropped for the
rest of the recording with one line, its figures then absent; the others go on.

Use
    reader = SqlState.start(session, wanted)   # wanted: the gauges memory cannot read
    reader.gauges()                                     # the last answer, {gauge: int}
    reader.sources                                      # {gauge: "sql"} of those ever read
    reader.close()
"""
from __future__ import annotations

import re
import sys
import threading

import pymysql

METRICS = {"log_lsn_current": "lsn", "log_lsn_last_checkpoint": "checkpoint_lsn",
           "log_max_modified_age_async": "async_flush_age", "log_max_modified_age_sync": "sync_flush_age",
           "trx_rseg_history_len": "history", "trx_rseg_current_size": "undo_pages"}
STATUS = {"Innodb_redo_log_current_lsn": "lsn", "Innodb_redo_log_checkpoint_lsn": "checkpoint_lsn",
          "Innodb_redo_log_capacity_resized": "log_capacity",
          "Innodb_buffer_pool_pages_dirty": "dirty_pages", "Innodb_buffer_pool_pages_free": "free_pages",
          "Innodb_buffer_pool_pages_data": "lru_pages", "Innodb_page_size": "page_size"}
# SHOW ENGINE INNODB STATUS's lines (5.6 to 9.x spell them alike)
MONITOR_LINES = {"lsn": r"^Log sequence number\s+(\d+)\s*$", "checkpoint_lsn": r"^Last checkpoint at\s+(\d+)\s*$",
                 "history": r"^History list length\s+(\d+)\s*$"}
UNDO_FILES_EVERY = 10  # snapshots between two reads of the undo tablespaces' sizes
# How long a snapshot waits for the read it asks for: the statements take 0.1-0.9 ms each
# on the server, 14 ms at worst under load (docs/overhead.md); a server slower than this
# leaves the snapshot with the read before (one interval old), never the recording waiting.
FRESH_WAIT_S = 0.2

METRICS_SQL = ("SELECT NAME, COUNT FROM information_schema.INNODB_METRICS WHERE STATUS = 'enabled' AND NAME IN ("
               + ", ".join(f"'{name}'" for name in METRICS) + ")")
STATUS_SQL = ("SHOW GLOBAL STATUS WHERE Variable_name IN (" + ", ".join(f"'{name}'" for name in STATUS) + ")")
MONITOR_SQL = "SHOW ENGINE INNODB STATUS"
UNDO_FILES_SQL = ("SELECT SUM(TOTAL_EXTENTS * EXTENT_SIZE) FROM information_schema.FILES "
                  "WHERE FILE_TYPE = 'UNDO LOG'")


def from_metrics(rows) -> dict[str, int]:
    return {METRICS[str(name)]: int(count) for name, count in rows if str(name) in METRICS and count is not None}


def from_status(rows) -> dict[str, int]:
    found = {}
    for name, value in rows:
        gauge = STATUS.get(str(name))
        if gauge and re.fullmatch(r"\d+", str(value).strip()):
            found[gauge] = int(value)
    return found


def from_monitor(text: str) -> dict[str, int]:
    """The LSN, the last checkpoint and the history from SHOW ENGINE INNODB STATUS's text."""
    found = {}
    for gauge, pattern in MONITOR_LINES.items():
        if match := re.search(pattern, text, re.MULTILINE):
            found[gauge] = int(match[1])
    return found


def from_monitor_rows(rows) -> dict[str, int]:
    return from_monitor(str(rows[0][2])) if rows else {}


def from_undo_files(rows) -> dict[str, int]:
    total = rows[0][0] if rows else None
    return {"undo_file_bytes": int(total)} if total is not None and int(total) > 0 else {}


class SqlState:
    """Reads, in a thread of its own, the wanted gauges when a snapshot asks (gauges()): the
    snapshot waits up to FRESH_WAIT_S for that read, else takes the one before, so the
    figures are the server's at the snapshot, and a server slow to answer never holds the
    recording back."""

    def __init__(self, session, wanted: set[str]):
        self.session, self.wanted = session, set(wanted)
        self.queries = [(METRICS_SQL, from_metrics), (STATUS_SQL, from_status), (UNDO_FILES_SQL, from_undo_files)]
        self.latest: dict[str, int] = {}
        self.sources: dict[str, str] = {}
        self.failed: list[str] = []
        self.reads = 0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.asked, self.fresh = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self.run, name="sql-state", daemon=True)

    @classmethod
    def start(cls, session, wanted: set[str]) -> "SqlState | None":
        """A reader, reading, if one first read gives any wanted gauge; None otherwise (the
        session is closed then)."""
        reader = cls(session, wanted)
        reader.read_once()
        if not reader.latest:
            session.close()
            return None
        reader.thread.start()
        return reader

    def ask(self, sql: str, parse) -> dict[str, int] | None:
        """One statement's gauges; None when it failed (it is then dropped, said in one line)."""
        try:
            with self.session.conn.cursor() as cur:
                cur.execute(sql)
                rows = list(cur.fetchall())
            return parse(rows)
        except (pymysql.MySQLError, OSError, ValueError, IndexError, TypeError) as e:
            words = f"{sql.split(' FROM ')[-1].split(' WHERE ')[0][:60]}: {e}"
            self.failed.append(words)
            sys.stderr.write(f"innostall: the server's state by SQL: {words}; its figures left out\n")
            self.queries = [(s, p) for s, p in self.queries if s != sql]
            return None

    def read_once(self) -> None:
        found: dict[str, int] = {}
        for sql, parse in list(self.queries):
            if sql == UNDO_FILES_SQL and self.reads % UNDO_FILES_EVERY:
                continue
            if sql == MONITOR_SQL and "lsn" in found:
                continue
            answer = self.ask(sql, parse)
            if answer is not None:
                found.update({gauge: value for gauge, value in answer.items() if gauge not in found})
        if "lsn" not in found and "lsn" in self.wanted and not any(s == MONITOR_SQL for s, _ in self.queries) \
                and self.reads == 0:
            self.queries.append((MONITOR_SQL, from_monitor_rows))  # 5.7 and early 8.0 with the log metrics off
            answer = self.ask(MONITOR_SQL, from_monitor_rows)
            found.update({g: v for g, v in (answer or {}).items() if g not in found})
        self.reads += 1
        kept = {gauge: value for gauge, value in found.items() if gauge in self.wanted}
        if "undo_file_bytes" not in kept and "undo_file_bytes" in self.latest:
            kept["undo_file_bytes"] = self.latest["undo_file_bytes"]  # read every UNDO_FILES_EVERY-th time
        with self.lock:
            self.latest = kept
            self.sources.update({gauge: "sql" for gauge in kept})

    def run(self) -> None:
        while self.asked.wait() and not self.stopping.is_set():
            self.asked.clear()
            if self.session.conn is None or not self.queries:
                return
            self.read_once()
            self.fresh.set()

    def gauges(self) -> dict[str, int]:
        """The figures read now, or (the server slow to answer) at the snapshot before."""
        if self.thread.is_alive():
            self.fresh.clear()
            self.asked.set()
            self.fresh.wait(FRESH_WAIT_S)
        with self.lock:
            return dict(self.latest)

    def close(self) -> dict:
        """What meta.json keeps of the reading: the statements that failed."""
        self.stopping.set()
        self.asked.set()
        self.thread.join(timeout=5)
        self.session.close()
        return {"sql_failed": self.failed} if self.failed else {}


SQL_GAUGES = {*METRICS.values(), *STATUS.values(), *MONITOR_LINES, "undo_file_bytes"}
