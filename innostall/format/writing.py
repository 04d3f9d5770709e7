"""Whether a recording is still being written. The recorder holds an exclusive lock on the
recording's directory from the moment it makes it until meta.json says how it ended; the
kernel drops the lock when the recorder's process ends, however it ends. So a reader that
finds meta.json unfinished can tell a recording still going on (the lock is held) from one
cut short (nobody holds it), with no pid to check and nothing left behind to clean up."""
from __future__ import annotations

import fcntl
import os


def hold(directory: str) -> int:
    """Lock directory for the writer; returns the descriptor to keep open while writing."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def in_progress(directory: str) -> bool:
    """True while a recorder on this host still writes directory."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    except OSError:  # a file system without locks: nothing to tell by
        return False
    finally:
        os.close(fd)
