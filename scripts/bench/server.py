"""The bench's server: the shared fixture server (scripts/fixture_servers.py) with its pid
read once and one connection kept open for counters and settings."""
from __future__ import annotations

import contextlib

import pymysql

import fixture_servers

from .settings import SERVER


def fixture(*args: str) -> str:
    """fixture.sh for the bench's server; raises fixture_servers.FixtureError."""
    return fixture_servers.fixture(SERVER, *args)


class BenchServer(fixture_servers.Server):
    """The fixture server, its pid and one connection for counters and settings."""

    # A plain attribute, read once, shadowing Server.pid (which runs fixture.sh each time):
    # every window samples the server's CPU by pid, between two readings of the clock.
    pid: int = 0

    def __init__(self):
        super().__init__(SERVER)
        self.pid = int(fixture("pid"))
        self.conn = self.connect()

    def query(self, sql: str, conn: pymysql.Connection | None = None) -> list[tuple]:
        with (conn or self.conn).cursor() as cur:
            cur.execute(sql)
            return list(cur.fetchall())

    def transactions(self) -> int:
        # The server's own count, read at the same instant as its CPU time: sysbench's
        # per-second lines run on sysbench's clock and would not line up with the window.
        rows = self.query("SELECT SUM(VARIABLE_VALUE) FROM information_schema.GLOBAL_STATUS "
                          "WHERE VARIABLE_NAME IN ('COM_COMMIT', 'COM_ROLLBACK')")
        return int(rows[0][0])

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.close()


def start_server(*options: str) -> BenchServer:
    """A clean start: stop whatever runs, then start with only these options added."""
    fixture_servers.restart(SERVER, *options)
    return BenchServer()
