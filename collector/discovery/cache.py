"""innostall's cache on the database host: what a start would otherwise work out again from
files that do not change, such as libc's frame table (collector/discovery/libc.py), kept per build.
/var/cache/innostall, or $INNOSTALL_CACHE; where neither can be written, starts work as
before, uncached."""
from __future__ import annotations

import os

DEFAULT_DIR = "/var/cache/innostall"


def cache_dir() -> str | None:
    """The cache directory, created if need be; None when it cannot be written."""
    path = os.environ.get("INNOSTALL_CACHE") or DEFAULT_DIR
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None
