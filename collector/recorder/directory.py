"""The recording's directory while it is written: made (or refused) before the loader starts,
private to root, taken back if the recording never started, room kept for the last meta.json
on a full disk, and the journal appended line by line."""
from __future__ import annotations

import contextlib
import os
import queue
import sys
import threading

from innostall.errors import UserError
from innostall.format import journal_files
from innostall.format.output_path import check_path
from innostall.format.journal import JOURNAL, META

from . import idle

RESERVE, RESERVE_BYTES = ".reserve", 64 * 1024  # room kept for the last meta.json on a full disk
COMPRESS_WAIT_S = 10  # at the end, for the last segments' compression: 0.5 s each on an idle core


def prepare_dir(path: str) -> bool:
    """Create the recording directory, 0700 (the process's umask keeps its files 0600);
    True if it did not exist (so a recording that never started removes it again). An
    existing one must be empty and ours; it is made private too."""
    if os.path.exists(os.path.join(path, META)):
        raise UserError(f"{path} already holds a recording; choose another -o directory")
    check_path(path)
    created = not os.path.lexists(path)
    if not created and os.path.isdir(path) and os.listdir(path):
        raise UserError(f"{path} is not empty: a recording needs a directory of its own")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create {path}: {e.strerror}")
    check_path(path)  # again: what was checked may have been swapped in between
    if not created:
        with contextlib.suppress(OSError):  # a read-only one is refused just below, in plain words
            os.chmod(path, 0o700)
    probe = os.path.join(path, ".innostall-write-test")
    try:
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        if created:  # nothing of ours is in it yet: only the directory to take back
            with contextlib.suppress(OSError):
                os.rmdir(path)
        raise UserError(f"cannot write into {path}: {e.strerror}")
    return created


DEFAULT_MAX_BYTES = 1 << 30  # many hours of a busy server's journal (docs/using.md gives rates)


def size_limit(path: str, asked: int | None) -> int:
    """The journal's size limit: as asked, or the smaller of DEFAULT_MAX_BYTES and half the
    space free where it is written, so that a recording never fills the disk the server
    may share (the tables, built from the journal at the end, take a sixth of its size)."""
    if asked is not None:
        return asked
    try:
        st = os.statvfs(path)
    except OSError:
        return DEFAULT_MAX_BYTES
    return min(DEFAULT_MAX_BYTES, st.f_bavail * st.f_frsize // 2)


def discard_dir(path: str, created: bool) -> None:
    """Undo prepare_dir for a recording that never started: what we wrote, and the
    directory if we made it. Nothing else is touched."""
    for name in (META, META + ".tmp", JOURNAL, "loader.log", RESERVE):
        with contextlib.suppress(OSError):
            os.remove(os.path.join(path, name))
    if created:
        with contextlib.suppress(OSError):
            os.rmdir(path)


def reserve_room(out_dir: str) -> None:
    """Keep room for the last meta.json: when the disk fills, the journal stops, this file
    goes, and meta.json can still say how the recording ended."""
    with open(os.path.join(out_dir, RESERVE), "wb") as f:
        os.posix_fallocate(f.fileno(), 0, RESERVE_BYTES)


def release_room(out_dir: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(os.path.join(out_dir, RESERVE))


class Journal:
    """The journal while it is recorded (innostall/format/journal_files.py): appended line by
    line and flushed, so a recording cut short keeps every complete line; rolled at an
    interval's end once the live file is large, each rolled segment compressed by a process
    of its own on idle CPU (compress()), off the path that keeps up with the loader. A write
    the disk refuses ends the journal, not the recorder."""

    def __init__(self, directory: str):
        self.writer = journal_files.JournalWriter(directory)
        self.failed: str | None = None  # why the disk refused a write
        self.segment_sizes: dict[int, int] = {}  # rolled segments' bytes, plain and then compressed
        self.rolled: queue.SimpleQueue = queue.SimpleQueue()
        self.compressor = threading.Thread(target=self.compress, name="journal-xz", daemon=True)
        self.compressor.start()
        self.done: str | None = None  # a recording's journal never asks to end it (a watch's does)

    @property
    def written(self) -> int:
        """The journal's bytes on disk, against the recording's size limit."""
        return self.writer.live_bytes + sum(self.segment_sizes.values())

    def write(self, line: str, rec: dict) -> bool:
        """The line, rec its record; at an interval's end, the live file rolled if due."""
        if self.failed:
            return False
        try:
            self.writer.write(line)
            if rec["type"] == "interval" and (number := self.writer.roll()) is not None:
                self.segment_sizes[number] = os.path.getsize(
                    os.path.join(self.writer.directory, journal_files.segment_name(number)))
                self.rolled.put(number)
            return True
        except OSError as e:
            self.failed = e.strerror
            return False

    def compress(self) -> None:
        """Each rolled segment compressed by a process of its own, on CPU time nothing else
        wants: xz's encoder takes 32 MB, which the recorder's heap kept once it had held it
        (its RSS stepped from 75 to 109 MB in a soak). A segment it could not compress (a
        full disk) stays plain, as readable."""
        while (number := self.rolled.get()) is not None:
            if idle.run_idle([sys.executable, "-m", "innostall.format.journal_files",
                              self.writer.directory, str(number)])[0] == 0:
                with contextlib.suppress(OSError):
                    self.segment_sizes[number] = os.path.getsize(os.path.join(
                        self.writer.directory, journal_files.segment_name(number, compressed=True)))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        """Closed; the segments still being compressed are waited for a while, not for ever
        (a saturated host may hold idle work back): any moment of a compression reads."""
        with contextlib.suppress(OSError):
            self.writer.close()
        self.rolled.put(None)
        self.compressor.join(timeout=COMPRESS_WAIT_S)
