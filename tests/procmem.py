"""Read (never write) a traced process's code, to see whether a uprobe is installed:
the kernel puts an int3 (0xcc) at a probed instruction and restores it on detach."""
from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

INT3 = 0xCC


def runtime_address(pid: int, file_offset: int, library: str | None = None) -> int:
    """Where a file offset of the process's executable (or of a library it maps, named as
    this host opens it) is mapped in its address space."""
    exe = os.path.realpath(f"/proc/{pid}/exe")
    wanted = os.stat(library).st_ino if library else None  # maps names files as we see them
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) < 6:
                continue
            if wanted is None and fields[5] != exe:
                continue
            if wanted is not None and int(fields[4]) != wanted:
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            offset = int(fields[2], 16)
            if offset <= file_offset < offset + (end - start):
                return start + file_offset - offset
    raise LookupError(f"offset {file_offset:#x} of {exe} is not mapped in pid {pid}")


def code_byte(pid: int, file_offset: int, library: str | None = None) -> int:
    with open(f"/proc/{pid}/mem", "rb") as mem:
        mem.seek(runtime_address(pid, file_offset, library))
        return mem.read(1)[0]


def file_byte(path: str, file_offset: int) -> int:
    with open(path, "rb") as f:
        f.seek(file_offset)
        return f.read(1)[0]


def children(pid: int) -> list[int]:
    """The processes a process has started and not yet reaped, over all its threads."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def loaders_of(pid: int) -> list[int]:
    """The innostall loaders a process runs (the recorder's child)."""
    return [c for c in children(pid) if "innostall-loader" in
            Path(f"/proc/{c}/cmdline").read_text(errors="replace")]


def stop_own_recording() -> None:
    """Ctrl-C to the recording this process runs: SIGINT to its loaders, as the recorder
    forwards a user's, so the recording ends (its final snapshot, its tables) as it would."""
    for loader in loaders_of(os.getpid()):
        os.kill(loader, signal.SIGINT)
