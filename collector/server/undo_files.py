"""The undo tablespaces' size on disk, from the files the server holds open: where a MySQL
build has no DWARF and innostall may not log in (`--no-sql`), the figure INFORMATION_SCHEMA.FILES
gives (TOTAL_EXTENTS * EXTENT_SIZE of the UNDO LOG files is the file's size) without a
statement, and cheaper than one: that query opens the data dictionary, a stat does not.

MySQL 8.0+ keeps its undo logs in undo tablespaces, `undo_001` and `undo_002` by default and
`NAME.ibu` for those a DBA creates, each held open by the server. Their descriptors are found
by reading the links of /proc/PID/fd once every RESCAN_EVERY readings (a server holds
thousands of tables open; a truncated undo tablespace is a new file), and each reading reads
those few links again and stats them: the link leads to the open file whatever root the
server runs in (a container's, or Debian's sid root here). Nothing is opened, nothing written."""
from __future__ import annotations

import os
import re

UNDO_FILE = re.compile(r"/(undo_\d+|[^/]+\.ibu)$")
RESCAN_EVERY = 10  # readings between two scans of the descriptors


class UndoFiles:
    """The summed size of the undo tablespaces the process holds open (a Place's read())."""

    source = "files"  # meta.json's server_state.sources: not the server's memory, nor SQL

    def __init__(self, pid: int):
        self.pid, self.fds, self.reads = pid, [], 0

    def scan(self) -> list[str]:
        try:
            names = os.listdir(f"/proc/{self.pid}/fd")
        except OSError:
            return []
        found = []
        for fd in names:
            try:
                link = os.readlink(f"/proc/{self.pid}/fd/{fd}")
            except OSError:  # closed since the listing
                continue
            if UNDO_FILE.search(link):  # a deleted file's link ends in " (deleted)": left out
                found.append(fd)
        return found

    def read(self, memory=None) -> int | None:
        if self.reads % RESCAN_EVERY == 0:
            self.fds = self.scan()
        self.reads += 1
        sizes = [self.size(fd) for fd in self.fds]
        if None in sizes:  # closed, or reused for another file: scanned again now
            self.fds = self.scan()
            sizes = [self.size(fd) for fd in self.fds]
        return sum(sizes) if sizes and None not in sizes else None

    def size(self, fd: str) -> int | None:
        """The size of the undo tablespace open at fd; None where fd holds none now."""
        try:
            if UNDO_FILE.search(os.readlink(f"/proc/{self.pid}/fd/{fd}")):
                return os.stat(f"/proc/{self.pid}/fd/{fd}").st_size
        except OSError:
            pass
        return None
