"""Real database servers from scripts/fixture.sh, shared by the tests (tests/conftest.py) and
the overhead benchmark (scripts/bench/): the script's actions as a function, a running
server as an object to connect to, read counters of and put sysbench load on.

A top-level module: whoever uses it puts scripts/ on sys.path first."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pymysql

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "scripts" / "fixture.sh"


class FixtureError(RuntimeError):
    """fixture.sh failed; the message names the action and carries the script's stderr."""


def fixture(server: str, *args: str, check: bool = True) -> str:
    """scripts/fixture.sh SERVER ARGS...: its stdout, stripped. check=False ignores a failure
    (for cleanup, where the server may already be gone)."""
    result = subprocess.run([str(FIXTURE), server, *args], capture_output=True, text=True)
    if check and result.returncode:
        raise FixtureError(f"fixture.sh {server} {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


def restart(server: str, *options: str) -> None:
    """A clean start: stop whatever runs, then start with only these mysqld options added."""
    fixture(server, "stop")
    fixture(server, "start", *options)


def sysbench_command(server: str, test: str, seconds: int, *extra: str) -> list[str]:
    """fixture.sh runs sysbench with the server's socket, user and schema filled in."""
    return [str(FIXTURE), server, "sysbench", test, str(seconds), *extra]


class Server:
    """A running fixture server, reached over its unix socket as the `innostall` user."""

    def __init__(self, name: str):
        self.name = name
        self.socket = fixture(name, "socket")

    @property
    def pid(self) -> int:
        """Asked anew each time: a test may have restarted the server since."""
        return int(fixture(self.name, "pid"))

    def connect(self) -> pymysql.Connection:
        return pymysql.connect(unix_socket=self.socket, user="innostall", password="",
                               database="sbtest", autocommit=True)

    def metric(self, conn: pymysql.Connection, name: str) -> int:
        """An InnoDB counter (information_schema.INNODB_METRICS; the fixtures enable them all)."""
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = %s", (name,))
            return int(cur.fetchone()[0])

    def status(self, conn: pymysql.Connection, name: str) -> int:
        """A global status variable (SHOW GLOBAL STATUS), as a number."""
        with conn.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS LIKE %s", (name,))
            return int(cur.fetchone()[1])

    def sysbench(self, test: str, seconds: int, *extra: str) -> subprocess.Popen:
        """sysbench in the background, quiet but for its errors; end it with stop_load()."""
        # A session of its own, so that stop_load() ends fixture.sh and sysbench together.
        return subprocess.Popen(sysbench_command(self.name, test, seconds, *extra),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)

    def serves(self) -> bool:
        """It answers queries and still holds the loaded rows."""
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM sbtest1")
            return cur.fetchone()[0] > 0


def stop_load(proc: subprocess.Popen) -> None:
    """Ends a Server.sysbench() load, if it has not ended already, and waits for it."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)
