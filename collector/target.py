"""The process or binary to trace: where its executable is and which server it is."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from innostall.errors import UserError

from .elf import ElfImage

# Version strings compiled into .rodata. MariaDB embeds "10.2.11-MariaDB"; MySQL and
# Percona embed the bare version next to their compilation comment.
MARIADB_VERSION = re.compile(rb"\0(\d+\.\d+\.\d+)-MariaDB")
PERCONA_MARKER = re.compile(rb"Percona Server")
MYSQL_MARKER = re.compile(rb"MySQL (?:Community|Enterprise) Server|mysqld")
BARE_VERSION = re.compile(rb"\0([58]\.\d\.\d{1,2}|9\.\d\.\d{1,2})(?:-\d+)?\0")


@dataclass
class Target:
    path: str  # what we open and attach to (/proc/PID/exe for a process)
    exe: str  # what the user knows it by
    pid: int | None
    elf: ElfImage
    family: str | None = None  # mysql, percona, mariadb
    version: str | None = None

    @property
    def label(self) -> str:
        return server_label(self.family, self.version)

    def version_tuple(self) -> tuple[int, ...]:
        return parse_version(self.version) if self.version else ()


def server_label(family: str | None, version: str | None) -> str:
    name = {"mariadb": "MariaDB", "mysql": "MySQL", "percona": "Percona Server"}
    return f"{name.get(family, 'unknown server')} {version or ''}".strip()


def parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def from_pid(pid: int) -> Target:
    proc = f"/proc/{pid}"
    if not os.path.isdir(proc):
        raise UserError(f"no process with pid {pid}")
    try:
        exe = os.readlink(f"{proc}/exe")
    except PermissionError:
        raise UserError(f"cannot inspect pid {pid}: run innostall as root")
    except OSError:
        raise UserError(f"pid {pid} has no executable (a kernel thread?)")
    # /proc/PID/exe reaches the running file even when it was replaced or deleted on disk.
    target = Target(path=f"{proc}/exe", exe=exe, pid=pid, elf=ElfImage(f"{proc}/exe"))
    identify(target)
    return target


def from_binary(path: str) -> Target:
    target = Target(path=os.path.abspath(path), exe=path, pid=None, elf=ElfImage(path))
    identify(target)
    return target


def identify(target: Target) -> None:
    rodata = target.elf.section_bytes(".rodata")
    if m := MARIADB_VERSION.search(rodata):
        target.family, target.version = "mariadb", m.group(1).decode()
        return
    if PERCONA_MARKER.search(rodata):
        target.family = "percona"
    elif MYSQL_MARKER.search(rodata):
        target.family = "mysql"
    else:
        raise UserError(f"{target.exe}: not a MySQL, Percona or MariaDB server binary")
    if m := BARE_VERSION.search(rodata):
        target.version = m.group(1).decode()
