"""Statement fingerprints (innostall/format/fingerprint.py): real statements (sysbench's OLTP
ones, the seed scenarios', an application's with e-mails, tokens, IN lists, multi-row
VALUES and comments) against the fingerprint we expect, and against pt-fingerprint's
(Percona Toolkit) where it is installed, with each deliberate difference named; no literal
survives, not even in a statement cut short; and no text makes fingerprint() fail. The
recorder's side: the statement read from the server is fingerprinted before it is cut,
unless record --keep-literals."""
from __future__ import annotations

import random
import re
import shutil
import subprocess
import types
from typing import NamedTuple

import pytest

from innostall.cli import parser
from innostall.collector.recorder import server_access
from innostall.collector.server import sql
from innostall.format.fingerprint import fingerprint

# Where ours differs from pt-fingerprint (Percona Toolkit 3.2, with --match-embedded-numbers,
# which keeps the digits of names such as sbtest1), and why.
DIFFERENCES = {
    "operator": "pt reads every + or - before a digit as a sign (k=k+1 → k=k?); we keep an "
                "operator between two operands, and take the sign only where it is one (id = -5 → id = ?)",
    "comment quote": "pt keeps a -- or # comment that holds a quote, and its words; we drop every comment",
    "hex case": "pt reads hex digits in lower case only, so 0xDEADBEEF leaves ?deadbeef: the value's letters",
    "prefix": "pt leaves the prefix of a hex string or a character set introducer (x?, _utf8mb4?); "
              "we take it with the string",
    "doubled quote": "pt 3.2 reads 'D''Arcy' as two strings (??); MySQL reads one",
    "backslash": "pt misreads a string that ends in an escaped backslash and leaves the next one's "
                 "text (?eve'); we read the escape",
    "backquoted": "pt replaces digits and - inside backquoted names (`group-by` → `group?y`); a name "
                  "is no literal, we keep it whole",
    "NULL": "we keep NULL: it holds no one's value, and IS NULL reads differently from IS ?",
    "LIMIT ASC": "pt folds LIMIT ? OFFSET ? into LIMIT ? and drops ASC after ORDER BY; we keep the "
                 "statement's shape as written",
    "cut": "pt leaves a string whose closing quote is missing as it is; the server cuts statements "
           "(200 characters kept), so everything after an open quote becomes ?",
    "CALL": "pt keeps only `call NAME` of a procedure call; we keep its arguments, as ?",
    "version comment": "pt keeps /*!...*/ comments; we drop every comment, this one's SQL with it",
    "USE": "pt hides the database of USE (use ?); a database's name is no literal",
    "UNION": "pt folds repeated UNION ALL SELECTs into one; we keep the statement as written",
}


class Case(NamedTuple):
    statement: str
    expected: str
    secrets: tuple[str, ...] = ()  # literal values that must not survive
    differs: str | None = None  # a key of DIFFERENCES, where pt-fingerprint's differs


CASES = [
    # sysbench's OLTP statements (oltp_common.lua)
    Case("SELECT c FROM sbtest1 WHERE id=5021", "SELECT c FROM sbtest1 WHERE id=?", ("5021",)),
    Case("SELECT c FROM sbtest3 WHERE id BETWEEN 4998 AND 5097",
         "SELECT c FROM sbtest3 WHERE id BETWEEN ? AND ?", ("4998", "5097")),
    Case("SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 2110 AND 2209",
         "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?", ("2110", "2209")),
    Case("SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 2110 AND 2209 ORDER BY c",
         "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c", ("2110", "2209")),
    Case("UPDATE sbtest1 SET k=k+1 WHERE id=4978", "UPDATE sbtest1 SET k=k+? WHERE id=?", ("4978",),
         "operator"),
    Case("UPDATE sbtest1 SET c='83868641912-28773972837-60736120486-75162659906-27563526494' WHERE id=5010",
         "UPDATE sbtest1 SET c=? WHERE id=?", ("83868641912", "27563526494", "5010")),
    Case("DELETE FROM sbtest1 WHERE id=5005", "DELETE FROM sbtest1 WHERE id=?", ("5005",)),
    Case("INSERT INTO sbtest1 (id, k, c, pad) VALUES (5005, 5025, '38436346591-12045837462', '67847967377-48000963322')",
         "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?+)", ("5005", "5025", "38436346591", "48000963322")),
    # the seed scenarios' (scripts/scenarios/*.sh)
    Case("START TRANSACTION WITH CONSISTENT SNAPSHOT", "START TRANSACTION WITH CONSISTENT SNAPSHOT"),
    Case("SELECT CONCAT('avg(k)=', ROUND(AVG(k), 1)) FROM sbtest1 FORCE INDEX (k_1)",
         "SELECT CONCAT(?, ROUND(AVG(k), ?)) FROM sbtest1 FORCE INDEX (k_1)", ("avg(k)=",)),
    Case("INSERT INTO fill (pad) VALUES (REPEAT('x', 255))", "INSERT INTO fill (pad) VALUES (REPEAT(?, ?))",
         ("'x'", "255")),
    Case("SELECT COUNT(*) FROM fill WHERE pad <> ''", "SELECT COUNT(*) FROM fill WHERE pad <> ?", ("''",)),
    Case("SELECT IF(VERSION() LIKE '%MariaDB%', 'mariadb', 'mysql')", "SELECT IF(VERSION() LIKE ?, ?, ?)",
         ("MariaDB", "mariadb", "mysql")),
    Case("SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = 'purge_undo_log_pages'",
         "SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = ?", ("purge_undo_log_pages",)),
    Case("INSERT INTO fill (pad) SELECT pad FROM fill", "INSERT INTO fill (pad) SELECT pad FROM fill"),
    Case("SELECT CONCAT(ROUND(@@innodb_buffer_pool_size / 1048576), 'M')",
         "SELECT CONCAT(ROUND(@@innodb_buffer_pool_size / ?), ?)", ("1048576", "'M'")),
    # an application's, an ORM's
    Case("SELECT `users`.* FROM `users` WHERE `users`.`email` = 'alice.smith@example.com' LIMIT 1",
         "SELECT `users`.* FROM `users` WHERE `users`.`email` = ? LIMIT ?", ("alice.smith@example.com",)),
    Case("UPDATE sessions SET token = 'eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.Qx7', expires_at = '2026-11-25 12:00:00' "
         "WHERE user_id = 1234", "UPDATE sessions SET token = ?, expires_at = ? WHERE user_id = ?",
         ("eyJhbGciOiJIUzI1NiJ9", "c2VjcmV0", "2026-11-25", "12:00", "1234")),
    Case('SELECT * FROM orders WHERE customer_id IN (17, 42, 99, 1001) AND status = "shipped"',
         "SELECT * FROM orders WHERE customer_id IN (?+) AND status = ?", ("17", "42", "99", "1001", "shipped")),
    Case("INSERT INTO audit (user_id, action, ip) VALUES (1, 'login', '10.0.0.1'), (2, 'logout', '10.0.0.2'), "
         "(3, 'login', '192.168.1.7')", "INSERT INTO audit (user_id, action, ip) VALUES (?+)",
         ("login", "logout", "10.0.0", "192.168.1.7")),
    Case("/* app:checkout request_id=8f14e45f */ SELECT balance FROM accounts WHERE id = 77 FOR UPDATE",
         "SELECT balance FROM accounts WHERE id = ? FOR UPDATE", ("checkout", "8f14e45f", "77")),
    Case("SELECT id FROM t WHERE a = 1 -- note for bob@example.com\nAND b = 2 # ticket 4711\n",
         "SELECT id FROM t WHERE a = ? AND b = ?", ("bob@example.com", "note", "ticket", "4711")),
    Case("SELECT id FROM t WHERE a = 1 -- 'quoted' note\nAND b = 2", "SELECT id FROM t WHERE a = ? AND b = ?",
         ("quoted", "note"), "comment quote"),
    Case("SELECT * FROM t WHERE h = 0xdeadbeef AND b = b'1010'", "SELECT * FROM t WHERE h = ? AND b = ?",
         ("deadbeef", "1010")),
    Case("SELECT * FROM t WHERE h = 0xDEADBEEF", "SELECT * FROM t WHERE h = ?", ("DEADBEEF",), "hex case"),
    Case("SELECT * FROM t WHERE x = X'4F4B'", "SELECT * FROM t WHERE x = ?", ("4F4B", "X'"), "prefix"),
    Case("UPDATE accounts SET balance = balance - 25.50, credit = -3.5e2 WHERE id = 9",
         "UPDATE accounts SET balance = balance - ?, credit = ? WHERE id = ?", ("25.50", "3.5e2", "-3")),
    Case("SELECT name FROM users WHERE name = 'O\\'Brien' OR nick = 'Smithy'",
         "SELECT name FROM users WHERE name = ? OR nick = ?", ("Brien", "Smithy")),
    Case("SELECT name FROM users WHERE name = 'D''Arcy'", "SELECT name FROM users WHERE name = ?", ("Arcy",),
         "doubled quote"),
    Case("SELECT path FROM files WHERE path = 'C:\\\\temp\\\\' AND owner = 'eve'",
         "SELECT path FROM files WHERE path = ? AND owner = ?", ("temp", "eve"), "backslash"),
    Case("SELECT `order`, `group-by`, `2024_sales` FROM `my db`.`tbl` WHERE `select` = 'x'",
         "SELECT `order`, `group-by`, `2024_sales` FROM `my db`.`tbl` WHERE `select` = ?", ("'x'",), "backquoted"),
    Case("SELECT * FROM t WHERE note = 'naïve café ☕' AND city = 'Zürich'",
         "SELECT * FROM t WHERE note = ? AND city = ?", ("naïve", "café", "☕", "Zürich")),
    Case("SELECT nom, prénom FROM clients WHERE prénom = 'Zoë' AND âge > 42",
         "SELECT nom, prénom FROM clients WHERE prénom = ? AND âge > ?", ("Zoë", "42")),
    Case("SELECT * FROM t WHERE a IS NULL AND b IS NOT NULL AND c = TRUE",
         "SELECT * FROM t WHERE a IS NULL AND b IS NOT NULL AND c = TRUE", (), "NULL"),
    Case("SELECT * FROM products ORDER BY price ASC, name LIMIT 20 OFFSET 40",
         "SELECT * FROM products ORDER BY price ASC, name LIMIT ? OFFSET ?", ("20", "40"), "LIMIT ASC"),
    Case("UPDATE users SET bio = 'I was born in 1970; write to carol@example.org or call +1 555",  # cut
         "UPDATE users SET bio = ?", ("born", "1970", "carol@example.org", "555"), "cut"),
    Case("SELECT SLEEP(100)", "SELECT SLEEP(?)", ("100",)),
    Case("CALL add_user('dave@example.net', 'hunter2')", "CALL add_user(?, ?)", ("dave@example.net", "hunter2"),
         "CALL"),
    Case("SELECT * FROM t WHERE x = _utf8mb4'secret' COLLATE utf8mb4_bin",
         "SELECT * FROM t WHERE x = ? COLLATE utf8mb4_bin", ("secret",), "prefix"),
    Case("SELECT /*+ MAX_EXECUTION_TIME(1000) */ id FROM t WHERE k = 5", "SELECT id FROM t WHERE k = ?",
         ("1000",)),
    Case("SELECT /*!40001 SQL_NO_CACHE */ id FROM t WHERE k = 5", "SELECT id FROM t WHERE k = ?",
         ("40001",), "version comment"),
    Case("INSERT INTO t (a, b) VALUES (1, 'a') ON DUPLICATE KEY UPDATE b = VALUES(b), n = n + 1",
         "INSERT INTO t (a, b) VALUES (?+) ON DUPLICATE KEY UPDATE b = VALUES(b), n = n + ?", ("'a'",)),
    Case("SELECT a FROM t WHERE b IN ('x1', 'y2') AND c NOT IN (SELECT c FROM u WHERE d = 3)",
         "SELECT a FROM t WHERE b IN (?+) AND c NOT IN (SELECT c FROM u WHERE d = ?)", ("x1", "y2")),
    Case("SELECT\n\ta,\n\tb\nFROM t\nWHERE  id =  7", "SELECT a, b FROM t WHERE id = ?", ("7",)),
    Case("SELECT * FROM events WHERE ts BETWEEN '2025-01-01' AND '2025-12-31' AND kind = 'signup'",
         "SELECT * FROM events WHERE ts BETWEEN ? AND ? AND kind = ?", ("2025", "signup")),
    Case("DELETE FROM tokens WHERE token = 'a3f9c2e1b4d5' AND expires < 1764000000",
         "DELETE FROM tokens WHERE token = ? AND expires < ?", ("a3f9c2e1b4d5", "1764000000")),
    Case("SET @secret = 'p4ssw0rd'", "SET @secret = ?", ("p4ssw0rd",)),
    Case("SELECT * FROM t WHERE id = ? AND name = ?", "SELECT * FROM t WHERE id = ? AND name = ?"),
    Case("SELECT 1.5e-3, .25, 3.", "SELECT ?, ?, ?", ("1.5", "e-3", "25", "3.")),
    Case("SELECT * FROM t1 JOIN t2 ON t1.id = t2.t1_id WHERE t2.v = -1",
         "SELECT * FROM t1 JOIN t2 ON t1.id = t2.t1_id WHERE t2.v = ?", ("-1",)),
    Case("REPLACE INTO kv (k, v) VALUES ('a', 1), ('b', 2)", "REPLACE INTO kv (k, v) VALUES (?+)", ("'a'", "'b'")),
    Case("use shop", "use shop", (), "USE"),
    Case("SELECT a FROM t WHERE b = 1 UNION ALL SELECT a FROM t WHERE b = 2",
         "SELECT a FROM t WHERE b = ? UNION ALL SELECT a FROM t WHERE b = ?", (), "UNION"),
    Case("INSERT INTO log (at, msg) VALUES (NOW(), 'first'), (NOW(), 'second')",
         "INSERT INTO log (at, msg) VALUES (NOW(), ?)", ("first", "second")),
    Case("SELECT * FROM t WHERE created > NOW() - INTERVAL 7 DAY",
         "SELECT * FROM t WHERE created > NOW() - INTERVAL ? DAY", ("7",)),
]
IDS = [f"{i:02d}-{re.sub(r'[^A-Za-z]+', '-', c.statement[:24]).strip('-')}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_statement_fingerprints_to_what_a_dba_expects(case):
    assert fingerprint(case.statement) == case.expected


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_no_literal_survives_even_in_a_statement_cut_anywhere(case):
    assert not [s for s in case.secrets if s in fingerprint(case.statement)]
    for cut in range(len(case.statement) + 1):  # the server keeps a statement's first characters
        shown = fingerprint(case.statement[:cut])
        assert not [s for s in case.secrets if s in shown], case.statement[:cut]
        assert not re.search(r"['\"]", re.sub(r"`[^`]*`", "", shown)), case.statement[:cut]  # no string's text


def lower_and_unspaced(text: str) -> str:
    """pt-fingerprint lower-cases (ASCII only: it reads bytes) and writes `in(?+)`: compared
    without case or whitespace."""
    return re.sub(r"\s+", "", re.sub(r"[A-Z]+", lambda m: m.group().lower(), text))


# pt-fingerprint's own main(), as `pt-fingerprint OPTIONS --query STATEMENT` runs it, once per
# statement read from stdin (each ended by a NUL), in one Perl: a Perl start and the toolkit's
# compile were ~45 ms of CPU each, 2.3 s for the cases, the suite's costliest setup. The script is
# a module too (it runs main only when not required); its options are read from its own POD, in $0.
PT_EACH_STATEMENT = r"""
$0 = shift @ARGV;
require $0;
my @options = @ARGV;  # main() sets @ARGV to its arguments, and its option parser empties it
local $/ = "\0";
while (my $statement = <STDIN>) { chomp $statement; pt_fingerprint::main(@options, "--query", $statement); print "\0"; }
"""


@pytest.fixture(scope="module")
def pt_fingerprints() -> list[str]:
    tool = shutil.which("pt-fingerprint")
    if not tool:
        pytest.skip("pt-fingerprint is not installed (Debian's percona-toolkit; scripts/setup.sh installs it)")
    statements = [c.statement for c in CASES]
    assert not any("\0" in s for s in statements)  # a NUL ends a statement on the way in
    done = subprocess.run(["perl", "-e", PT_EACH_STATEMENT, tool, "--match-embedded-numbers"],
                          input="".join(s + "\0" for s in statements), capture_output=True, text=True, timeout=60)
    printed = done.stdout.split("\0")[:-1]
    # each main()'s exit status is print()'s value: what it printed says whether it worked
    assert not done.stderr and len(printed) == len(statements) and all(printed), done
    return [p.rstrip("\n") for p in printed]


@pytest.mark.parametrize("number", range(len(CASES)), ids=IDS)
def test_pt_fingerprint_agrees_but_where_we_differ_on_purpose(pt_fingerprints, number):
    case, theirs = CASES[number], pt_fingerprints[number]
    same = lower_and_unspaced(fingerprint(case.statement)) == lower_and_unspaced(theirs)
    if case.differs is None:
        assert same, f"pt-fingerprint: {theirs}"
    else:
        assert not same, f"listed as differing ({case.differs}), but pt-fingerprint agrees: {theirs}"
        assert case.differs in DIFFERENCES


def random_text(rnd: random.Random) -> str:
    """SQL's special characters and words, random bytes read as text, any Unicode."""
    pieces = list("'\"`\\/*-#+.,()?;=<> \n\t0123456789abexnEXBN_$") + [
        "IN (", "VALUES (", "NULL", "SELECT ", "0x", "/*", "*/", "-- ", "é", "…", "\x00", "\ud800", "💥"]
    kind = rnd.randrange(3)
    if kind == 0:
        return "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 60)))
    if kind == 1:
        return bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 60))).decode("utf-8", errors="replace")
    return "".join(chr(rnd.randrange(0x110000)) for _ in range(rnd.randint(0, 30)))


@pytest.mark.heavy  # fingerprints 20,000 random texts, each twice: the fuzz's reach
def test_any_text_fingerprints_without_failing_and_fingerprints_to_itself():
    rnd = random.Random(20261125)
    for _ in range(20000):
        text = random_text(rnd)
        once = fingerprint(text)
        assert isinstance(once, str)
        assert fingerprint(once) == once, text


def test_a_literal_of_any_characters_is_replaced_whole():
    rnd = random.Random(7)
    for _ in range(3000):
        value = "".join(rnd.choice("ab'\"\\%_-#/*`\n é💥0") for _ in range(rnd.randint(1, 12)))
        quoted = "'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
        assert fingerprint(f"SELECT a FROM t WHERE b = {quoted} AND c = 1") == "SELECT a FROM t WHERE b = ? AND c = ?"


# --- the recorder's side ------------------------------------------------------------------

def test_a_statement_read_from_the_server_is_fingerprinted_unless_literals_are_kept():
    raw = b"SELECT * FROM users WHERE email = 'bob@example.com' AND id IN (1, 2, 3)"
    assert sql.statement_text(raw) == "SELECT * FROM users WHERE email = ? AND id IN (?+)"
    assert sql.statement_text(raw, keep_literals=True) == raw.decode()
    row = (4321, 17, b"app", raw, 1_800_000_000)
    assert sql.row_dict(row)["statement"] == "SELECT * FROM users WHERE email = ? AND id IN (?+)"
    assert sql.row_dict(row, keep_literals=True)["statement"] == raw.decode()


def test_a_statement_cut_by_the_server_is_fingerprinted_before_it_is_cut():
    # The server gives one character more than is kept, to tell a cut statement.
    given = ("UPDATE users SET bio = '" + "carol@example.org " * 20)[:sql.STATEMENT_CHARS + 1]
    assert sql.statement_text(given.encode()) == "UPDATE users SET bio = ?…"  # still said to be cut
    assert sql.statement_text(given.encode(), keep_literals=True) == given[:sql.STATEMENT_CHARS] + "…"
    columns = "SELECT " + ", ".join(f"column_number_{i}" for i in range(40))
    assert sql.statement_text(columns[:sql.STATEMENT_CHARS + 1].encode()) == columns[:sql.STATEMENT_CHARS] + "…"


class ScriptedServer:
    """A pymysql connection's stand-in: answers the session's questions from a script."""

    def __init__(self, statement: bytes):
        self.row = (4321, 17, b"app", statement, 1_800_000_000)

    def cursor(self):
        server = self

        class Cursor:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def execute(self, query, args=()):
                # old_transactions() asks for the isolation and whether a statement runs too
                more = ("REPEATABLE READ", 1) if "trx_isolation_level" in query else ()
                self.rows = ([("11.4.5-MariaDB",)] if "VERSION()" in query else
                             [server.row + more] if "INNODB_TRX" in query else [])

            def fetchall(self):
                return self.rows
        return Cursor()

    def close(self):
        pass


@pytest.mark.parametrize("keep", [False, True])
def test_the_session_connect_opens_keeps_literals_only_if_asked(monkeypatch, keep):
    statement = b"SELECT SLEEP(20) FROM t WHERE token = 'a3f9c2e1b4d5'"
    monkeypatch.setattr(sql, "login", lambda path, user: ScriptedServer(statement))
    session, reason = sql.connect(None, "app@/run/mysqld/mysqld.sock", keep_literals=keep)
    assert reason is None
    shown = session.old_transactions()[0]["statement"]
    assert shown == (statement.decode() if keep else "SELECT SLEEP(?) FROM t WHERE token = ?")
    assert session.threads([4321])[4321]["statement"] == shown


@pytest.mark.parametrize("argv, kept", [([], "fingerprinted"), (["--keep-literals"], "literals kept")])
def test_record_keep_literals_reaches_the_session_and_meta(monkeypatch, argv, kept):
    args = parser().parse_args(["record", "--pid", "1", "-o", "out", *argv])
    seen = {}

    def connect(pid, dsn, keep_literals=False):
        seen["keep_literals"] = keep_literals
        return types.SimpleNamespace(socket="/s.sock", user="root", tid_source=None, note=None), None

    monkeypatch.setattr(server_access.sql, "connect", connect)
    read_view = types.SimpleNamespace(ok=True, name="read_view")
    _, meta = server_access.sql_access(types.SimpleNamespace(pid=1), [read_view], None, True, args.keep_literals)
    assert seen["keep_literals"] is args.keep_literals
    assert meta["statements"] == kept


def test_views_read_from_memory_are_named_by_sql_without_their_probe(monkeypatch):
    """Where the open read views are read from the server's memory, the read_view probe is
    out of the default set; SQL must still name their connections (the demo lost its 'user'
    before this)."""
    monkeypatch.setattr(server_access.sql, "connect", lambda pid, dsn, keep_literals=False: (
        types.SimpleNamespace(socket="/s.sock", user="root", tid_source=None, note=None), None))
    target, others = types.SimpleNamespace(pid=1), [types.SimpleNamespace(ok=True, name="purge_batch")]
    assert server_access.sql_access(target, others, None, True)[1] == {
        "access": False, "reason": "read views are not traced"}
    assert server_access.sql_access(target, others, None, True, views_from_memory=True)[1]["access"]
