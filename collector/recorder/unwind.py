"""libc's frame table for the latch programs' stacks (collector/discovery/libc.py): decoded
before the loader starts, in a process of its own on idle CPU, and cached by libc build."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile

from ..discovery import cache, libc
from ..discovery.discover import ResolvedProbe
from ..discovery.target import Target
from . import idle


def unwind_table(target: Target, probes: list[ResolvedProbe],
                 group: idle.IdleGroup | None) -> tuple[str | None, dict[str, int], bool]:
    """libc's frame table for the latch programs' stacks (collector/discovery/libc.py), which the
    loader reads at start: its path, the settings that go with it, and whether the path is
    a temporary file to remove after the recording (it is not when the table is cached).
    None and no settings without latch probes, a process, or a table that fits."""
    if not target.pid or not any(p.ok and "latch_wait_exit" in p.programs.values() for p in probes):
        return None, {}, False
    lib, directory = libc.find(target.pid), cache.cache_dir()
    cached = libc.cached_table_path(lib, directory) if lib and directory else None
    if cached:
        settings = (libc.cached_settings(lib, cached)
                    or build_unwind_table(target.pid, cached, group))
        if settings:
            return cached, settings, False
    fd, path = tempfile.mkstemp(prefix="innostall-libc-cfi-")
    os.close(fd)
    settings = build_unwind_table(target.pid, path, group)
    with contextlib.suppress(OSError):
        os.remove(path + ".json")  # the counts matter only in the cache
    if not settings:
        os.remove(path)
        return None, {}, False
    return path, settings, True


def build_unwind_table(pid: int, path: str, group: idle.IdleGroup | None) -> dict[str, int] | None:
    """Decode libc's .eh_frame into path, in a process of its own as the tables are
    written: decoding takes memory, and it runs on idle CPU."""
    done = run_idle([sys.executable, "-m", "innostall.collector.discovery.libc", str(pid), path], group)
    return json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else None


def run_idle(cmd: list[str], group: idle.IdleGroup | None) -> subprocess.CompletedProcess:
    """Run a command of our own bulk work to its end on idle CPU (idle.start_idle)."""
    proc, stay = idle.start_idle(cmd, group)
    out, err = proc.communicate()
    if stay:
        stay.end()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
