"""The process or binary to trace: where its executable is and which server it is."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from innostall.errors import NotCovered, UserError
from innostall.names import demangle, server_label, split_function

from .debuginfo import find_debug_file
from .elf import STT_FUNC, STT_OBJECT, ElfImage, Symbol

# Version strings compiled into .rodata. A linker may merge a string into the tail of a
# longer one ("9.7.4" inside "MySQL 9.7.4"), so none is anchored on the NUL before it.
#  - MariaDB 10.x-12.x: "10.2.11-MariaDB" (the server version with its suffix).
#  - MySQL 5.6-9.x and Percona: MYSQL_SERVER_VERSION, "8.0.15", or "8.0.36-28" on Percona
#    (its release after the dash), and MYSQL_BASE_VERSION, "mysqld-8.0", the option-file
#    group every release reads: it tells the version apart from other dotted numbers.
MARIADB_VERSION = re.compile(rb"(?<![\d.])(\d{2}\.\d{1,2}\.\d{1,3})-MariaDB")
# the suffix MARIADB_VERSION ends on, looked for first: the expression, which begins with
# a digit, scans a MySQL server's 12 MB of .rodata in 0.6 s, and finds nothing there
MARIADB_SUFFIX = b"-MariaDB"
PERCONA_MARKER = re.compile(rb"Percona Server")
MYSQL_MARKER = re.compile(rb"MySQL (?:Community|Enterprise) Server|mysqld")
BASE_VERSION = re.compile(rb"\0mysqld-(\d{1,4})\.(\d{1,2})\0")
DOTTED_VERSION = re.compile(rb"(?<![\d.])(\d{1,4})\.(\d{1,2})\.(\d{1,3})(-\d{1,3}(?:\.\d{1,3})?)?\0")
OLDEST_MYSQL_MAJOR = 5


@dataclass
class Target:
    path: str  # what we open and attach to (/proc/PID/exe for a process)
    exe: str  # what the user knows it by
    pid: int | None
    elf: ElfImage
    family: str | None = None  # mysql, percona, mariadb
    version: str | None = None
    debug: ElfImage | None = None  # a separate debug file holding the symbol table
    root: str | None = None  # /proc/PID/root when the process runs in another root (a container)
    exe_in_root: str | None = None  # the executable as the process sees it there

    def find_functions(self, names: list[str]) -> dict[str, Symbol]:
        return self._find(names, STT_FUNC)

    def find_function_copies(self, qualified: str) -> list[tuple[Symbol, str]]:
        """(symbol, demangled parameter list) of every function called qualified (e.g.
        "buf_pool_t::page_fix"), whatever its parameter list, in the first symbol table
        that has it. Compiler copies count as the function: .constprop and .isra clones
        are whole copies and are included; a .part fragment only stands in when there is
        no whole function (it runs after the inlined head, which would count twice)."""
        identifier = qualified.split("::")[-1].split("<")[0]
        for image, table in [(self.elf, ".symtab"), (self.debug, ".symtab"), (self.elf, ".dynsym")]:
            if not image:
                continue
            named = {}
            for name in image.names_mentioning(identifier, table):
                function, params, clone = split_function(demangle(name))
                if function == qualified and params is not None:
                    named[name] = (params, clone)
            found = image.find(list(named), table) if named else {}
            whole = [(sym, named[n][0]) for n, sym in found.items() if named[n][1] != "part"]
            if whole or found:
                return sorted(whole or [(sym, named[n][0]) for n, sym in found.items()],
                              key=lambda pair: pair[0].vaddr)
        return []

    def find_objects(self, names: list[str]) -> dict[str, Symbol]:
        return self._find(names, STT_OBJECT)

    def _find(self, names: list[str], sym_type: int) -> dict[str, Symbol]:
        """Full symbol tables first (local symbols live only there), then exported ones."""
        found: dict[str, Symbol] = {}
        sources = [(self.elf, ".symtab"), (self.debug, ".symtab"), (self.elf, ".dynsym")]
        for image, table in sources:
            wanted = [n for n in names if n not in found]
            if image and wanted:
                found.update(image.find(wanted, table, sym_type))
        return found

    @property
    def label(self) -> str:
        return server_label(self.family, self.version)

    def runtime_address(self, vaddr: int) -> int | None:
        """Where a link-time address lives in the running process (None without one)."""
        if not self.elf.is_pie:
            return vaddr
        if self.pid is None:
            return None
        exe = os.path.realpath(self.path)
        with open(f"/proc/{self.pid}/maps") as maps:
            for line in maps:
                fields = line.split()
                if len(fields) >= 6 and fields[5] == exe and int(fields[2], 16) == 0:
                    return int(fields[0].split("-")[0], 16) - self.elf.first_load_vaddr + vaddr
        return None

    def version_tuple(self) -> tuple[int, ...]:
        return parse_version(self.version) if self.version else ()


def parse_version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def from_pid(pid: int, debuginfo: str | None = None) -> Target:
    proc = f"/proc/{pid}"
    if not os.path.isdir(proc):
        raise UserError(f"no process with pid {pid}")
    try:
        exe = os.readlink(f"{proc}/exe")
    except PermissionError:
        if os.geteuid() == 0:
            raise UserError(f"cannot inspect pid {pid}: permission denied even to root "
                            "(a process of another container?)")
        raise UserError(f"cannot inspect pid {pid}: run innostall as root")
    except OSError:
        raise UserError(f"pid {pid} has no executable (a kernel thread?)")
    # /proc/PID/exe reaches the running file even when it was replaced or deleted on disk.
    target = Target(path=f"{proc}/exe", exe=exe, pid=pid, elf=ElfImage(f"{proc}/exe"))
    target.root, target.exe_in_root = process_root(pid, exe)
    try:
        return prepare(target, debuginfo)
    except NotCovered:
        raise
    except UserError as e:
        raise UserError(f"pid {pid} ({exe}): {str(e).removeprefix(f'{exe}: ')}") from None


def process_root(pid: int, exe: str) -> tuple[str | None, str | None]:
    """(/proc/PID/root, the executable's path as the process sees it) for a process in
    another root (chroot, or a container's mount namespace); (None, None) in ours. Read
    from the host, a chrooted process's exe reads as the host path: the root's own path
    is cut off it; one in another mount namespace already reads as the container sees it."""
    proc_root = f"/proc/{pid}/root"
    try:
        theirs, ours = os.stat(proc_root), os.stat("/")
    except OSError:
        return None, None
    if (theirs.st_dev, theirs.st_ino) == (ours.st_dev, ours.st_ino):
        return None, None
    root_path = os.path.realpath(proc_root)
    inside = exe[len(root_path):] if root_path != "/" and exe.startswith(root_path + "/") else exe
    return proc_root, inside


def from_binary(path: str, debuginfo: str | None = None) -> Target:
    target = Target(path=os.path.abspath(path), exe=path, pid=None, elf=ElfImage(path))
    return prepare(target, debuginfo)


def prepare(target: Target, debuginfo: str | None) -> Target:
    identify(target)
    if debuginfo or not target.elf.has_symtab:
        target.debug = find_debug_file(target.elf, target.exe, debuginfo,
                                       root=target.root, exe_in_root=target.exe_in_root)
    if target.family == "mariadb" and not target.elf.has_symtab and not target.debug:
        raise NotCovered(f"{target.exe} is stripped and MariaDB keeps InnoDB's symbols out of "
                         f"its exports: {debug_symbols_hint(target)}")
    return target


def debug_symbols_hint(target: Target) -> str:
    """How to get the symbols: the distro's debug package if we can name it."""
    build_id = target.elf.build_id or "unknown"
    exe = os.path.realpath(target.exe.removesuffix(" (deleted)"))
    for query, advice in (["dpkg-query", "-S", exe], "install {pkg}-dbgsym (Debian/Ubuntu debug archive)"), \
                         (["rpm", "-qf", "--qf", "%{NAME}", exe], "run 'debuginfo-install {pkg}'"):
        if shutil.which(query[0]):
            result = subprocess.run(query, capture_output=True, text=True)
            if result.returncode == 0 and result.stdout.strip():
                pkg = result.stdout.split(":")[0].strip()
                return advice.format(pkg=pkg) + f", or pass --debuginfo FILE (build-id {build_id})"
    return f"install its debug symbols (build-id {build_id}) or pass --debuginfo FILE"


def identify(target: Target) -> None:
    rodata = target.elf.section_bytes(".rodata")
    if version := mariadb_version(rodata):
        target.family, target.version = "mariadb", version
        return
    if PERCONA_MARKER.search(rodata):
        target.family = "percona"
    elif MYSQL_MARKER.search(rodata):
        target.family = "mysql"
    else:
        raise UserError(f"{target.exe}: not a MySQL, Percona or MariaDB server binary")
    target.version = mysql_version(rodata)


def mariadb_version(rodata: bytes) -> str | None:
    """The first MARIADB_VERSION in rodata: matched just before each MARIADB_SUFFIX, in a
    window of 12 bytes (a version has 9 at most, so its start and the byte before it are
    inside)."""
    at = rodata.find(MARIADB_SUFFIX)
    while at >= 0:
        if m := MARIADB_VERSION.search(rodata, max(0, at - 12), at + len(MARIADB_SUFFIX)):
            return m.group(1).decode()
        at = rodata.find(MARIADB_SUFFIX, at + 1)
    return None


def mysql_version(rodata: bytes) -> str | None:
    """MYSQL_SERVER_VERSION: the dotted number whose major and minor match the build's
    option-file group (mysqld-X.Y); without that group, the first plausible one."""
    base = BASE_VERSION.search(rodata)
    for m in DOTTED_VERSION.finditer(rodata):
        major, minor = int(m.group(1)), int(m.group(2))
        if base and (major, minor) != (int(base.group(1)), int(base.group(2))):
            continue
        if major >= OLDEST_MYSQL_MAJOR:
            return m.group(0).rstrip(b"\0").decode()
    return f"{int(base.group(1))}.{int(base.group(2))}" if base else None
