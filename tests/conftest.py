"""Real servers for the tests: fixture servers from scripts/fixture.sh, started once per
session on a fresh datadir with sysbench tables, stopped at the end."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pymysql
import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "scripts" / "fixture.sh"
INNOSTALL = [str(REPO / "build" / "venv" / "bin" / "innostall")]


def fixture(server: str, *args: str, check: bool = True) -> str:
    result = subprocess.run([str(FIXTURE), server, *args], capture_output=True, text=True)
    if check and result.returncode:
        raise RuntimeError(f"fixture.sh {server} {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout.strip()


class Server:
    def __init__(self, name: str):
        self.name = name
        self.socket = fixture(name, "socket")
        self.binary = None

    @property
    def pid(self) -> int:
        return int(fixture(self.name, "pid"))

    def connect(self) -> pymysql.Connection:
        return pymysql.connect(unix_socket=self.socket, user="innostall", password="",
                               database="sbtest", autocommit=True)

    def metric(self, conn: pymysql.Connection, name: str) -> int:
        with conn.cursor() as cur:
            cur.execute("SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = %s", (name,))
            return int(cur.fetchone()[0])

    def sysbench(self, test: str, seconds: int, *extra: str) -> subprocess.Popen:
        return subprocess.Popen([str(FIXTURE), self.name, "sysbench", test, str(seconds), *extra],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)

    def serves(self) -> bool:
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM sbtest1")
            return cur.fetchone()[0] > 0


@pytest.fixture(scope="session")
def servers():
    """servers(name) -> a running, loaded Server; each is started once per session."""
    if os.geteuid() != 0:
        pytest.skip("real-server tests need root")
    started: dict[str, Server] = {}

    def get(name: str) -> Server:
        if name not in started:
            fixture(name, "init")
            fixture(name, "start")
            fixture(name, "load", "2", "10000")
            started[name] = Server(name)
        return started[name]

    yield get
    for name in started:
        fixture(name, "stop", check=False)


def stop_load(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
    proc.wait(timeout=30)
