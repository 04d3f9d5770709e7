"""Optional SQL access to the traced server: whose connection holds the read view that pins purge.

The probes name the OS thread (tid) that opened a read view. Where innostall can log in to
the server, it adds what only the server knows about that thread: its connection id, user,
current statement and when its transaction started, and lists the transactions already open
when the recording began (views the probes never saw opened). Nothing else depends on this:
connect() returns (None, reason) on any failure, and a session that breaks later answers
empty and keeps the reason in `failure`.

Reaching the server
  `--sql DSN`, the one explicit form: [USER@]SOCKET, SOCKET an absolute path to the server's
  unix socket as innostall sees it (e.g. root@/run/mysqld/mysqld.sock); USER defaults to root;
  the password, if the account has one, comes from the MYSQL_PWD environment variable (as
  for the mysql client), never from the command line; it is taken out of the environment
  at the start, so that no process innostall starts inherits it. Unix sockets only: TCP is not taken.
  Without --sql, the socket is found from the server process: --socket on its command line,
  `socket` in its --defaults-file, the unix sockets the process listens on, then the compiled
  defaults (/run/mysqld/mysqld.sock, /var/run/mysqld/mysqld.sock, /tmp/mysql.sock). All are
  paths as the server sees them, reached through /proc/PID/root, so a server in a container
  or chroot is found too. innostall logs in as root without a password: unix-socket
  authentication (MariaDB's unix_socket, MySQL's auth_socket) or a password-less root. The
  socket must belong to the traced process (its peer credentials say which pid serves it).

Which columns give a connection's OS thread id
  - information_schema.PROCESSLIST.TID: MariaDB 10.1.8+ (MDEV-6756) and Percona Server
    5.6.27+; needs no performance_schema. Preferred where it exists.
  - performance_schema.threads.THREAD_OS_ID: MySQL 5.7.9+ (WL#8853) and MariaDB 10.5+, only
    when performance_schema=ON (MySQL's default; MariaDB's is OFF).
  - Neither (MySQL with performance_schema off): `tid_source` is None and `note` says why;
    threads() finds nothing, old_transactions() still lists transactions, without tids.
  The transaction's start comes from information_schema.INNODB_TRX (trx_mysql_thread_id,
  trx_started, whole seconds). The server refreshes that table only when it was last read
  over 0.1 s ago: ask it more often and a transaction opened meanwhile may never show (seen
  on MariaDB 11.4 and MySQL 8.0 polling every 10 ms). With a thread pool a connection has
  no fixed OS thread: the tid is the worker's while it runs a statement.

Use
  session, reason = connect(pid, dsn, keep_literals=False)  # reason: "no SQL access: ..." when None
  session.threads([tid, ...])               # {tid: {connection_id, user, statement, trx_started_epoch_s}}
  session.old_transactions()                # [{tid, connection_id, user, statement, trx_started_epoch_s}]
  session.tid_source, session.note          # the tid column used, or None and why not
  session.failure                           # set once a query failed; the session is closed then
  session.close()
The statement is the one running now (None while the connection idles in its transaction),
at most STATEMENT_CHARS characters, as a fingerprint (its literals replaced by `?`,
innostall/format/fingerprint.py) unless the session keeps literals (record --keep-literals). Bytes that are not UTF-8 the server handles first (MySQL
cuts the text there, MariaDB shows "?"); any that still come through are replaced.
"""
from __future__ import annotations

import os
import re
import socket
import struct
from dataclasses import dataclass

import pymysql

from innostall.errors import UserError
from innostall.format.fingerprint import fingerprint

TIMEOUT_S = 2  # connect, read and write: a stuck server must not stall the recording
STATEMENT_CHARS = 200  # statement text kept, in characters
COMPILED_SOCKETS = ("/run/mysqld/mysqld.sock", "/var/run/mysqld/mysqld.sock", "/tmp/mysql.sock")
SERVER_GROUPS = re.compile(r"(mysqld|server|mariadb|mariadbd)(-[\d.]+)?$")  # option-file groups mysqld reads
SO_ACCEPTCON = 0x10000  # /proc/net/unix flag of a listening socket
LONGEST_SOCKET_PATH = 107  # sun_path holds 108 bytes with the NUL


# --- the explicit form --------------------------------------------------------------------

@dataclass(frozen=True)
class Dsn:
    user: str
    socket: str  # as innostall sees it


def parse_dsn(text: str) -> Dsn:
    """[USER@]SOCKET; a UserError (one line) if it is not that form."""
    user, at, path = text.rpartition("@")
    if not at:
        user = "root"
    if not path.startswith("/") or not user or "\n" in text:
        raise UserError(f"--sql {text!r}: expected [USER@]/path/to/mysqld.sock (a unix socket)")
    return Dsn(user, path)


# --- finding the server's socket ----------------------------------------------------------

def cmdline(pid: int) -> list[str]:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return [a.decode(errors="surrogateescape") for a in f.read().split(b"\0") if a]


def option(args: list[str], name: str) -> str | None:
    """The last --name=VALUE or --name VALUE (the last one wins, as for mysqld)."""
    found = None
    for i, arg in enumerate(args):
        if arg.startswith(f"--{name}="):
            found = arg.split("=", 1)[1]
        elif arg == f"--{name}" and i + 1 < len(args):
            found = args[i + 1]
    return found


def option_file_socket(text: str) -> str | None:
    """`socket` in the groups mysqld reads; later settings override earlier ones."""
    found, in_server_group = None, False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            in_server_group = bool(SERVER_GROUPS.match(line.strip("[] ")))
        elif in_server_group and not line.startswith(("#", ";", "!")):
            key, eq, value = line.partition("=")
            if eq and key.strip().replace("_", "-") == "socket":
                found = value.split("#")[0].strip().strip("'\"")
    return found


def listening_sockets(pid: int) -> list[str]:
    """Paths of the unix sockets the process listens on, as bound: its fds' socket inodes
    matched with its network namespace's table of unix sockets."""
    inodes = set()
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            link = os.readlink(f"{fd_dir}/{fd}")
        except OSError:  # closed since we listed it
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    paths = []
    with open(f"/proc/{pid}/net/unix") as f:
        next(f)  # the header
        for line in f:
            # Num RefCount Protocol Flags Type St Inode [Path]; '@' starts an abstract name
            fields = line.rstrip("\n").split(None, 7)
            if len(fields) == 8 and fields[6] in inodes and int(fields[3], 16) & SO_ACCEPTCON \
                    and not fields[7].startswith("@"):
                paths.append(fields[7])
    return paths


def server_sockets(pid: int) -> list[str]:
    """Candidate socket paths as the server sees them, most likely first."""
    args = cmdline(pid)
    named = [option(args, "socket")]
    if defaults := option(args, "defaults-file"):
        try:
            with open(in_process_root(pid, defaults)) as f:
                named.append(option_file_socket(f.read()))
        except OSError:
            pass
    try:
        listening = listening_sockets(pid)
    except OSError:
        listening = []
    # MySQL's X plugin listens on a unix socket too, and speaks another protocol.
    xsocket = option(args, "mysqlx-socket") or option(args, "mysqlx_socket")
    listening = [p for p in listening if p != xsocket and not os.path.basename(p).startswith("mysqlx")]
    candidates = [p for p in named if p] + listening + list(COMPILED_SOCKETS)
    return list(dict.fromkeys(candidates))


def in_process_root(pid: int, path: str) -> str:
    """The path the process means, reached from here: through its root (a container's or a
    chroot's), a relative one from its working directory (mysqld's is its datadir)."""
    return f"/proc/{pid}/root{path}" if path.startswith("/") else f"/proc/{pid}/cwd/{path}"


# --- logging in ---------------------------------------------------------------------------

def short_path(path: str, keep: list[int]) -> str:
    """A path connect() takes: sun_path is 108 bytes, so a long one goes through an open
    directory (/proc/self/fd/N/NAME); the fd is appended to keep, for the caller to close."""
    if len(os.fsencode(path)) <= LONGEST_SOCKET_PATH:
        return path
    directory, name = os.path.split(path)
    fd = os.open(directory, os.O_PATH | os.O_DIRECTORY)
    keep.append(fd)
    return f"/proc/self/fd/{fd}/{name}"


def peer_pid(conn: pymysql.Connection) -> int | None:
    """The pid serving the connection's socket (SO_PEERCRED: pid, uid, gid)."""
    sock = getattr(conn, "_sock", None)
    if sock is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[0]


_password = ""


def take_password() -> None:
    """MYSQL_PWD, kept here and removed from the environment: the loader and the table
    writer would inherit it, and /proc/PID/environ shows it to root for as long as they run."""
    global _password
    _password = os.environ.pop("MYSQL_PWD", _password)


def login(path: str, user: str) -> pymysql.Connection:
    fds: list[int] = []
    try:
        return pymysql.connect(unix_socket=short_path(path, fds), user=user,
                               password=_password,
                               connect_timeout=TIMEOUT_S, read_timeout=TIMEOUT_S,
                               write_timeout=TIMEOUT_S, autocommit=True, charset="utf8mb4",
                               program_name="innostall",
                               ssl_disabled=True,  # TLS adds nothing on a local socket (connect() checks the peer pid)
                               # INNODB_TRX's times are in the server's system time zone
                               init_command="SET time_zone = 'SYSTEM'")
    finally:
        for fd in fds:
            os.close(fd)


def why(e: Exception) -> str:
    """One line from a PyMySQL or OS error."""
    if isinstance(e, pymysql.MySQLError) and len(e.args) == 2:
        return " ".join(str(e.args[1]).split())
    return " ".join(str(getattr(e, "strerror", None) or e).split())


def connect(pid: int | None, dsn: str | None = None,
            keep_literals: bool = False) -> tuple[SqlSession | None, str | None]:
    """(session, None), or (None, "no SQL access: ...") naming what was tried. A malformed
    dsn raises UserError: it is the user's mistake, not the server's. The session's
    statements are fingerprints unless keep_literals."""
    if dsn:
        target = parse_dsn(dsn)
        try:
            conn = login(target.socket, target.user)
        except (pymysql.MySQLError, OSError) as e:
            return None, f"no SQL access: {target.user}@{target.socket}: {why(e)}"
        return open_session(conn, target.socket, target.user, keep_literals)
    if pid is None:
        return None, "no SQL access: no server process to find a socket from (give --sql)"
    try:
        candidates = server_sockets(pid)
    except OSError as e:
        return None, f"no SQL access: cannot read process {pid}: {why(e)}"
    failures = []
    for path in candidates:
        reached = in_process_root(pid, path)
        if not os.path.exists(reached):
            continue
        try:
            conn = login(reached, "root")
        except (pymysql.MySQLError, OSError) as e:
            failures.append(f"root@{path}: {why(e)}")
            continue
        try:
            serving = peer_pid(conn)
        except OSError:
            serving = None  # the kernel did not say: take the server at its word
        if serving not in (pid, None):
            conn.close()
            failures.append(f"{path} is served by pid {serving}, not {pid}")
            continue
        return open_session(conn, reached, "root", keep_literals)
    if not failures:
        return None, f"no SQL access: no socket of pid {pid} found (tried {', '.join(candidates)}; give --sql)"
    return None, f"no SQL access: {'; '.join(failures)} (give --sql USER@SOCKET)"


# --- asking the server --------------------------------------------------------------------

@dataclass(frozen=True)
class ThreadTable:
    """Where a server keeps each connection's OS thread id, user and statement."""
    table: str
    connection: str  # the connection id column (CONNECTION_ID())
    tid: str | None
    user: str
    statement: str


PROCESSLIST_TID = ThreadTable("information_schema.PROCESSLIST", "ID", "TID", "USER", "INFO")
PS_THREADS = ThreadTable("performance_schema.threads", "PROCESSLIST_ID", "THREAD_OS_ID",
                         "PROCESSLIST_USER", "PROCESSLIST_INFO")
PROCESSLIST = ThreadTable("information_schema.PROCESSLIST", "ID", None, "USER", "INFO")


def statement_text(raw: bytes | None, keep_literals: bool = False) -> str | None:
    """Statement bytes as text: any bytes decode (invalid ones replaced), fingerprinted
    unless keep_literals, cut to STATEMENT_CHARS with an ellipsis when longer."""
    if raw is None:
        return None
    text = bytes(raw).decode("utf-8", errors="replace")
    cut = len(text) > STATEMENT_CHARS  # the server gives one character more than is kept
    if not keep_literals:
        # Fingerprinted before the cut, on all the server gave: a literal the cut would
        # split is still seen whole (its quote open) and goes. The fingerprint is shorter,
        # but the ellipsis says the statement went on.
        text = fingerprint(text)
    return text[:STATEMENT_CHARS] + "…" if cut or len(text) > STATEMENT_CHARS else text


def row_dict(row: tuple, keep_literals: bool = False) -> dict:
    tid, connection_id, user, statement, started = row
    return {"tid": int(tid) if tid is not None else None,
            "connection_id": int(connection_id) if connection_id is not None else None,
            "user": user if not isinstance(user, bytes) else user.decode(errors="replace"),
            "statement": statement_text(statement, keep_literals),
            "trx_started_epoch_s": int(started) if started is not None else None}


class SqlSession:
    """A logged-in session. Every query is bounded by TIMEOUT_S; the first failure closes
    the session, keeps its reason in `failure`, and later calls answer empty."""

    def __init__(self, conn: pymysql.Connection, socket_path: str, user: str, keep_literals: bool = False):
        self.conn: pymysql.Connection | None = conn
        self.socket, self.user = socket_path, user
        self.keep_literals = keep_literals  # statements as the server gives them, else fingerprinted
        self.server = self.query("SELECT VERSION()")[0][0]
        self.source, self.note = self.find_thread_table()
        self.failure: str | None = None

    @property
    def tid_source(self) -> str | None:
        """The column that gives OS thread ids here, e.g. information_schema.PROCESSLIST.TID."""
        return f"{self.source.table}.{self.source.tid}" if self.source.tid else None

    def query(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self.conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def works(self, sql: str) -> bool:
        try:
            self.query(sql)
            return True
        except pymysql.MySQLError:  # no such column or table, or no privilege
            return False

    def find_thread_table(self) -> tuple[ThreadTable, str | None]:
        """Where connections' OS thread ids are: MariaDB's PROCESSLIST.TID, else
        performance_schema.threads. MySQL is asked for the latter first: there any statement
        naming information_schema.PROCESSLIST writes a page to disk (MySQL 9.7.4: one each
        time, even LIMIT 0), a write of our own at the attach."""
        mariadb = "mariadb" in str(self.server).lower()
        if mariadb and self.works("SELECT TID FROM information_schema.PROCESSLIST LIMIT 0"):
            return PROCESSLIST_TID, None
        try:
            ps_on = bool(int(self.query("SELECT @@GLOBAL.performance_schema")[0][0]))
        except pymysql.MySQLError:  # built without it
            ps_on = False
        if ps_on and self.works("SELECT THREAD_OS_ID FROM performance_schema.threads LIMIT 0"):
            return PS_THREADS, None
        if not mariadb and self.works("SELECT TID FROM information_schema.PROCESSLIST LIMIT 0"):
            return PROCESSLIST_TID, None
        if not ps_on:
            return PROCESSLIST, "performance_schema is off, so OS threads cannot be matched to connections"
        return PROCESSLIST, f"{self.server} shows no connection's OS thread id"

    def columns(self, who: str, trx: str) -> str:
        """tid, connection id, user, statement (as bytes, one character more than kept,
        to tell a cut one), transaction start: `who` the thread table, `trx` INNODB_TRX."""
        s = self.source
        tid = f"{who}.{s.tid}" if s.tid else "NULL"
        return (f"{tid}, COALESCE({who}.{s.connection}, {trx}.trx_mysql_thread_id), {who}.{s.user}, "
                f"CONVERT(LEFT({who}.{s.statement}, {STATEMENT_CHARS + 1}) USING binary), "
                f"UNIX_TIMESTAMP({trx}.trx_started)")

    def ask(self, sql: str, args: tuple = ()) -> list[tuple]:
        """query(), but a failure ends the session instead of raising."""
        if self.conn is None:
            return []
        try:
            return self.query(sql, args)
        except (pymysql.MySQLError, OSError, ValueError) as e:  # ValueError: a malformed packet
            self.failure = f"SQL access lost: {why(e)}"
            self.close()
            return []

    def threads(self, tids) -> dict[int, dict]:
        """{tid: {connection_id, user, statement, trx_started_epoch_s}} for those of tids
        that are threads of connections now; trx_started_epoch_s is None outside a transaction."""
        tids = sorted({int(t) for t in tids})
        if not tids or not self.source.tid:
            return {}
        s = self.source
        rows = self.ask(f"SELECT {self.columns('p', 'x')} FROM {s.table} p "
                        f"LEFT JOIN information_schema.INNODB_TRX x ON x.trx_mysql_thread_id = p.{s.connection} "
                        f"WHERE p.{s.tid} IN ({', '.join(['%s'] * len(tids))})", tuple(tids))
        return {thread.pop("tid"): thread for thread in (row_dict(row, self.keep_literals) for row in rows)}

    def old_transactions(self) -> list[dict]:
        """Transactions open now, oldest first: [{tid, connection_id, user, statement,
        trx_started_epoch_s, isolation, running}]; tid None where the server cannot tell it;
        running: a statement of it runs now (trx_query)."""
        s = self.source
        rows = self.ask(f"SELECT {self.columns('p', 'x')}, x.trx_isolation_level, x.trx_query IS NOT NULL "
                        f"FROM information_schema.INNODB_TRX x "
                        f"LEFT JOIN {s.table} p ON p.{s.connection} = x.trx_mysql_thread_id "
                        f"ORDER BY x.trx_started, x.trx_mysql_thread_id")
        return [{**row_dict(row[:5], self.keep_literals), "isolation": row[5], "running": bool(row[6])}
                for row in rows]

    def index_names(self) -> dict[int, tuple[str, str]]:
        """{index id: (table, index)} of every InnoDB index, the table as InnoDB names it
        (db/table): to name the pages whose latches were waited for, by the index id their
        header carries. MySQL 8.0+: INNODB_INDEXES, INNODB_TABLES; MariaDB and MySQL 5.7:
        INNODB_SYS_INDEXES, INNODB_SYS_TABLES. Empty when neither answers."""
        for prefix in ("INNODB_", "INNODB_SYS_"):
            sql = (f"SELECT i.INDEX_ID, t.NAME, i.NAME FROM information_schema.{prefix}INDEXES i "
                   f"JOIN information_schema.{prefix}TABLES t ON t.TABLE_ID = i.TABLE_ID")
            try:
                rows = self.query(sql)
            except pymysql.MySQLError:  # the other family's tables
                continue
            return {int(index_id): (str(table), str(index)) for index_id, table, index in rows}
        return {}

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except (pymysql.MySQLError, OSError):
                pass
            self.conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_session(conn: pymysql.Connection, path: str, user: str,
                 keep_literals: bool = False) -> tuple[SqlSession | None, str | None]:
    try:
        return SqlSession(conn, path, user, keep_literals), None
    except (pymysql.MySQLError, OSError, ValueError) as e:
        conn.close()
        return None, f"no SQL access: {user}@{path}: {why(e)}"
