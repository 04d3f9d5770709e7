"""The changes verify may make to a server, each undone whatever happens: a dynamic setting
(SET GLOBAL, its value read first and read back after the restore) or ending the
transactions older than an age (KILL, for the advice to end a pinning transaction). Only
the server verify was pointed at, over its own socket (sql.connect checks the peer's pid)."""
from __future__ import annotations

import contextlib
import re
import threading

import pymysql

from innostall.errors import UserError

from ..server import sql

NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
VALUE = re.compile(r"^[A-Za-z0-9_.+-]{1,64}$")  # numbers and words: nothing to escape
NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
SAME = {"on": "1", "true": "1", "off": "0", "false": "0"}  # a boolean reads back as 1 or 0


def same_value(a: str, b: str) -> bool:
    return SAME.get(a.lower(), a) == SAME.get(b.lower(), b)
POLL_S = 0.5
# SET GLOBAL innodb_log_file_size returns once the resize is done (MariaDB 10.11+): when every
# page dirtied before it is written, tens of seconds on a busy disk, not the session's 2 s.
SET_TIMEOUT_S = 600


@contextlib.contextmanager
def patient(session: sql.SqlSession, seconds: float):
    """The session's statements may take that long to answer, for the block."""
    conn = session.conn
    before = conn._read_timeout  # PyMySQL sets the socket's timeout from it at each read
    conn._read_timeout = seconds
    try:
        yield
    finally:
        conn._read_timeout = before


def session_of(pid: int, dsn: str | None) -> sql.SqlSession:
    session, reason = sql.connect(pid, dsn)
    if session is None:
        raise UserError(f"verify needs SQL access to change the server: {reason}")
    return session


class SetGlobal:
    """SET GLOBAL name = value[, name = value ...] for one run, made together (a change may need
    two settings: the commit's flush and, on MariaDB 10.8+, the log's buffering); the values in
    force before are put back, last set first, and read back."""

    def __init__(self, text: str):
        self.pairs: list[tuple[str, str]] = []
        for part in text.split(","):
            name, _, value = part.partition("=")
            name, value = name.strip().lower(), value.strip()
            if not NAME.match(name) or not VALUE.match(value):
                raise UserError(f"--set wants NAME=VALUE[,NAME=VALUE], variable names and numbers or words, not {text!r}")
            self.pairs.append((name, value))
        self.before: list[tuple[str, str]] = []
        self.words = "SET GLOBAL " + ", ".join(f"{n} = {v}" for n, v in self.pairs)

    @staticmethod
    def read(session: sql.SqlSession, name: str) -> str:
        try:
            return str(session.query(f"SELECT @@GLOBAL.{name}")[0][0])
        except pymysql.MySQLError as e:
            raise UserError(f"verify: the server has no global {name} ({sql.why(e)})")

    @staticmethod
    def put(session: sql.SqlSession, name: str, value: str) -> None:
        with patient(session, SET_TIMEOUT_S):
            if NUMBER.match(value):  # a number as a number: a quoted one is refused for numeric variables
                session.query(f"SET GLOBAL {name} = {value}")
            else:
                session.query(f"SET GLOBAL {name} = %s", (value,))

    def apply(self, session: sql.SqlSession) -> None:
        for name, value in self.pairs:
            self.before.append((name, self.read(session, name)))
            try:
                self.put(session, name, value)
            except pymysql.MySQLError as e:
                raise UserError(f"verify: SET GLOBAL {name} = {value} refused: {sql.why(e)}")

    def undo(self, session: sql.SqlSession) -> str:
        """Puts the old values back and reads them back; what was done, in words."""
        # Every value is put back before any failure is told: one the server will not take back
        # (MariaDB 11.4 kept innodb_log_file_buffering ON) must not leave the others changed.
        left = []
        for name, value in reversed(self.before):
            try:
                self.put(session, name, value)
                now = self.read(session, name)
            except (pymysql.MySQLError, UserError) as e:
                now = f"unknown ({e})"
            if not same_value(now, value):
                left.append(f"{name} reads {now} after the restore, not {value}")
        if left:
            raise UserError(f"verify: {'; '.join(left)}: set it back by hand")
        return "restored " + ", ".join(f"{n} = {v}" for n, v in self.before) if self.before else "nothing to restore"


class EndOldTransactions:
    """For one run, KILL every connection whose transaction has been open longer than
    older_than_s (INNODB_TRX.trx_started), but verify's own: a pinning transaction ended as
    the advice says, as soon as it is that old."""

    def __init__(self, older_than_s: float):
        if not 0 < older_than_s <= 86400:
            raise UserError(f"--end-older-than wants seconds between 0 and 86400, not {older_than_s}")
        self.older_than_s = older_than_s
        self.words = f"end transactions open longer than {older_than_s:g} s (KILL)"
        self.killed: list[int] = []
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def apply(self, session: sql.SqlSession) -> None:
        self.thread = threading.Thread(target=self.watch, args=(session,), daemon=True)
        self.thread.start()

    def watch(self, session: sql.SqlSession) -> None:
        own = session.query("SELECT CONNECTION_ID()")[0][0]
        while not self.stop.wait(POLL_S):
            rows = session.ask("SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX "
                               "WHERE trx_started < NOW() - INTERVAL %s SECOND AND trx_mysql_thread_id <> %s",
                               (self.older_than_s, own))
            for (connection,) in rows:
                try:
                    session.query(f"KILL {int(connection)}")
                    self.killed.append(int(connection))
                except pymysql.MySQLError:  # it ended meanwhile
                    pass

    def undo(self, session: sql.SqlSession) -> str:
        self.stop.set()
        if self.thread:
            self.thread.join(timeout=10)
        return f"ended {len(self.killed)} transaction(s): connections {', '.join(map(str, self.killed)) or 'none'}"


def parse_changes(sets: list[str], end_older_than: list[float]):
    changes = [SetGlobal(s) for s in sets] + [EndOldTransactions(s) for s in end_older_than]
    if not changes:
        raise UserError("verify needs a change to try: --set NAME=VALUE or --end-older-than SECONDS")
    return changes


def with_change(change, pid: int, dsn: str | None, run):
    """run() with the change made, and undone after whatever happens; (run's result, the
    words of what was done and undone)."""
    session = session_of(pid, dsn)
    with session:
        try:
            change.apply(session)  # inside: a setting made before another is refused is put back
            result = run()
        finally:
            undone = change.undo(session)
    return result, f"{change.words}; {undone}"
