"""Separate debug files: where stripped distro builds keep the symbols innostall needs.

Looked for, in order: --debuginfo (a file, or a directory holding the debuglink name),
/usr/lib/debug/.build-id/xx/rest.debug, then the .gnu_debuglink name next to the
executable, in its .debug/ directory and under /usr/lib/debug. A candidate counts only if
its build-id (or, without one, the debuglink CRC) matches the executable.
"""
from __future__ import annotations

import os

from innostall.errors import UserError

from .elf import ElfImage

DEBUG_ROOT = "/usr/lib/debug"


def standard_places(exe: ElfImage, exe_path: str) -> list[str]:
    """The build-id path, then the debuglink name where distros put it."""
    link = exe.debuglink
    paths = []
    if exe.build_id:
        paths.append(f"{DEBUG_ROOT}/.build-id/{exe.build_id[:2]}/{exe.build_id[2:]}.debug")
    if link:
        directory = os.path.dirname(os.path.realpath(exe_path)) if os.path.exists(exe_path) \
            else os.path.dirname(exe_path)
        paths += [os.path.join(directory, link[0]), os.path.join(directory, ".debug", link[0]),
                  DEBUG_ROOT + os.path.join(directory, link[0]), os.path.join(DEBUG_ROOT, link[0])]
    return paths


def candidates(exe: ElfImage, exe_path: str, explicit: str | None, root: str | None = None,
               exe_in_root: str | None = None) -> list[str]:
    """--debuginfo first; for a process in another root (a container), the places inside
    that root (through /proc/PID/root), where its packages put the file; then ours."""
    paths = []
    if explicit:
        if not os.path.exists(explicit):
            raise UserError(f"--debuginfo {explicit}: no such file or directory")
        link = exe.debuglink
        paths.append(os.path.join(explicit, link[0]) if os.path.isdir(explicit) and link else explicit)
    if root:
        paths += [root + path for path in standard_places(exe, exe_in_root or exe_path)]
    return paths + standard_places(exe, exe_path)


def matches(exe: ElfImage, debug: ElfImage) -> bool:
    if exe.build_id and debug.build_id:
        return exe.build_id == debug.build_id
    return bool(exe.debuglink) and exe.debuglink[1] == debug.crc32()


def find_debug_file(exe: ElfImage, exe_path: str, explicit: str | None = None,
                    root: str | None = None, exe_in_root: str | None = None) -> ElfImage | None:
    for path in candidates(exe, exe_path, explicit, root, exe_in_root):
        if not os.path.isfile(path):
            continue
        debug = ElfImage(path)
        if matches(exe, debug) and debug.has_symtab:
            return debug
        if explicit and path.startswith(explicit):
            raise UserError(f"--debuginfo {path} does not belong to {exe_path} "
                            f"(build-id {exe.build_id or 'none'} vs {debug.build_id or 'none'})")
    return None
