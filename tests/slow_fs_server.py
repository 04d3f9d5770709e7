"""The private fixture server on slow_fs (scripts/slow-fs-server.sh: MariaDB 11.4.5 whose reads,
and writes but the redo log's, wait a set time) for the live tests that need a disk with
latency whatever the machine's own. One at a time: each test module starts it with its own
delays and options, and stops it at its end."""
from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager

import pytest

from conftest import REPO, Server, fetched

BASE = "mariadb-11.4.5"
SERVER = f"{BASE}:slowfs"
SCRIPT = [str(REPO / "scripts" / "slow-fs-server.sh"), BASE]
INITIALISED = REPO / "build" / "fixtures" / BASE / "slowfs" / "backing" / ".initialised"


def start(delays: str, options: list[str]) -> Server:
    """Started with these delays (READ_DELAY_US[,WRITE_DELAY_US]; mounted again where they
    differ from the mount's) and mysqld options."""
    subprocess.run(SCRIPT + ["start", delays, *options], check=True, capture_output=True, text=True)
    return Server(SERVER)


@contextmanager
def slow_fs_server(delays: str, options: list[str], fresh: bool = False):
    """The server, stopped first (another module's options), on a data directory made anew
    if fresh; stopped at the end whatever happens."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("needs /dev/fuse for slow_fs")
    fetched(BASE)
    subprocess.run(SCRIPT + ["stop"], capture_output=True, text=True)
    if fresh:
        INITIALISED.unlink(missing_ok=True)
    try:
        yield start(delays, options)
    finally:
        subprocess.run(SCRIPT + ["stop"], capture_output=True, text=True)
