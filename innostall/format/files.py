"""The files of a recording, opened as data that came from elsewhere: a recording may be
copied from another machine or made by someone else, and its reader (or `export`) may run
as root. So a file inside a recording, or one export writes, is used only when it is a
regular file reached without a symbolic link: counters.parquet -> /etc/shadow is not read,
journal.jsonl -> /dev/zero or a FIFO does not hang or flood the reader, and a link planted
where export writes is not written through (nor a hard link to a file elsewhere).

Every name is one component inside a directory the user named: O_NOFOLLOW on it is enough
(the directory itself may be a link: the user chose it). O_NONBLOCK keeps the open of a
FIFO from waiting for a writer; the file is then refused by what fstat says it is.
"""
from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

from innostall.errors import UserError

READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class NotRegular(UserError):
    """A file of a recording that is not a plain file: refused, never followed."""


def what_is(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def state(path: str) -> str | None:
    """None for a regular file, "missing" when there is nothing there, else what is there
    instead ("a symbolic link", "a FIFO", ...), without following a link or opening it."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except OSError as e:
        return f"unreadable ({e.strerror})"
    return None if stat.S_ISREG(mode) else what_is(mode)


def open_regular(path: str) -> BinaryIO:
    """path opened for reading, if it is a regular file; FileNotFoundError if it is not
    there, NotRegular (one line) if it is something else."""
    refused = state(path)
    if refused == "missing":
        raise FileNotFoundError(errno.ENOENT, "No such file", path)
    if refused:
        raise NotRegular(f"{path}: {refused}, not read")
    try:
        fd = os.open(path, READ_FLAGS)
    except OSError as e:  # replaced since the lstat: a link (ELOOP) or gone
        if e.errno == errno.ENOENT:
            raise
        raise NotRegular(f"{path}: not read ({e.strerror})")
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegular(f"{path}: {what_is(mode)}, not read")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def create_regular(path: str) -> BinaryIO:
    """path opened for writing from its start: created, or an existing regular file of one
    link truncated. A symbolic link, a hard link to another file, a FIFO or a device at path
    is not written through: UserError."""
    refused = state(path)
    if refused not in (None, "missing"):
        raise UserError(f"{path}: {refused} is there, not written through")
    try:
        fd = os.open(path, WRITE_FLAGS, 0o644)
    except OSError as e:
        raise UserError(f"{path}: cannot write ({e.strerror})")
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        what = what_is(info.st_mode) if not stat.S_ISREG(info.st_mode) else "a hard link to another file"
        raise UserError(f"{path}: {what} is there, not written through")
    try:
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
    except OSError as e:
        os.close(fd)
        raise UserError(f"{path}: cannot write ({e.strerror})")
    return os.fdopen(fd, "wb")
