"""The recording's directory while it is written: made (or refused) before the loader starts,
taken back if the recording never started, room kept for the last meta.json on a full disk,
and the journal appended line by line."""
from __future__ import annotations

import contextlib
import os

from innostall.errors import UserError
from innostall.format.journal import JOURNAL, META

RESERVE, RESERVE_BYTES = ".reserve", 64 * 1024  # room kept for the last meta.json on a full disk


def prepare_dir(path: str) -> bool:
    """Create the recording directory; True if it did not exist (so a recording that never
    started removes it again)."""
    if os.path.exists(os.path.join(path, META)):
        raise UserError(f"{path} already holds a recording; choose another -o directory")
    created = not os.path.exists(path)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create {path}: {e.strerror}")
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
    """journal.jsonl, appended line by line and flushed, so a recording cut short keeps
    every complete line. A write the disk refuses ends the journal, not the recorder."""

    def __init__(self, path: str):
        self.file = open(path, "a")
        self.failed: str | None = None  # why the disk refused a write

    def write(self, line: str) -> bool:
        if self.failed:
            return False
        try:
            self.file.write(line)
            self.file.flush()
            return True
        except OSError as e:
            self.failed = e.strerror
            return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        with contextlib.suppress(OSError):
            self.file.close()
