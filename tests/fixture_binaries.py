"""The fixture servers' binaries, read from disk (downloaded, not started), and the checks
that run on each of them. Shared by tests/pure/ and tests/live/: the same check runs on
every fixture, in the pure suite for those any user may fetch, in the live suite for those
whose fetch needs root (ROOTED: installed in a debootstrap'd Debian root)."""
from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import REPO, fetched
from innostall.collector.discovery import discover, target

ROOTED = ("mysql-9.7.4",)

BINARIES = {  # family, version, executable in the fixture's directory, trx_purge, PIE
    "mariadb-11.4.5": ("mariadb", "11.4.5", "dist/bin/mariadbd", "_Z9trx_purgemm", True),
    "mariadb-10.11.5": ("mariadb", "10.11.5", "dist/bin/mariadbd", "_Z9trx_purgemm", True),
    "mariadb-10.4.6": ("mariadb", "10.4.6", "dist/bin/mysqld", "_Z9trx_purgemb", True),
    "mariadb-10.2.11": ("mariadb", "10.2.11", "dist/bin/mysqld", "_Z9trx_purgemmb", False),
    "mysql-8.0.15": ("mysql", "8.0.15", "dist/bin/mysqld", "_Z9trx_purgemmb", False),
    "mysql-9.7.4": ("mysql", "9.7.4", "root/usr/sbin/mysqld", "_Z9trx_purgemmb", True),
}
WITH_DWARF = {"mariadb-11.4.5": "dist/bin/mariadbd", "mariadb-10.11.5": "dist/bin/mariadbd",
              "mariadb-10.4.6": "dist/bin/mysqld", "mariadb-10.2.11": "dist/bin/mysqld"}
CODE_CHECKED = {"mysql-8.0.15": "dist/bin/mysqld", "mysql-9.7.4": "root/usr/sbin/mysqld"}


def unrooted(names) -> list[str]:
    return [name for name in names if name not in ROOTED]


def rooted(names) -> list[str]:
    return [name for name in names if name in ROOTED]


def fixture_binary(name: str) -> Path:
    fetched(name)
    return REPO / "build" / "fixtures" / name / BINARIES[name][2]


def fixture_target(name: str, path: str | None = None) -> target.Target:
    fetched(name)
    return target.from_binary(str(REPO / "build" / "fixtures" / name / (path or WITH_DWARF[name])))


def assert_core_set_resolves(name: str) -> None:
    """The core probes and version_step resolve at the version's own variants: no fallback."""
    tgt = target.from_binary(str(fixture_binary(name)))
    probes = {p.name: p for p in discover.resolve(tgt)}
    wanted = [n for n, p in probes.items() if p.core] + ["version_step"]
    if discover.layout(tgt) is None:  # no latch layout known for this build: said so
        wanted = [n for n in wanted if not n.startswith("block_lock")]
    for probe in wanted:
        assert probes[probe].ok and not probes[probe].fallback, (probe, probes[probe].reason)


def assert_identified_with_purge_batch(name: str) -> None:
    family, version, _, symbol, pie = BINARIES[name]
    tgt = target.from_binary(str(fixture_binary(name)))
    assert (tgt.family, tgt.version, tgt.elf.is_pie) == (family, version, pie)
    probe, = discover.resolve(tgt, ["purge_batch"])
    assert probe.symbol.name == symbol and not probe.fallback
    # the file offset holds the function's first bytes, as objdump sees them at its address
    assert file_bytes(tgt.path, probe.offset, 8) == objdump_bytes(tgt.path, probe.symbol.vaddr, 8)


def assert_code_confirms_catalog(name: str) -> None:
    """Oracle-style builds (.dynsym only): the history length's offset the catalog claims is
    the one the build's own code adds to (machine_code.py)."""
    found = discover.layout(fixture_target(name, CODE_CHECKED[name]))
    assert found["source"] == "catalog" and found["confirmed"] == ["trx_sys_t.rseg_history_len"]
    assert found["refused"] == {}


def file_bytes(path: str, offset: int, n: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(n)


def objdump_bytes(path: str, vaddr: int, n: int) -> bytes:
    out = subprocess.run(["objdump", "-s", f"--start-address={vaddr}", f"--stop-address={vaddr + n}",
                          "-j", ".text", path], capture_output=True, text=True, check=True).stdout
    row = next(line for line in out.splitlines() if line.startswith(f" {vaddr:x} "))
    hex_columns = row[len(f" {vaddr:x} "):][:35]  # 4 groups of 8 digits, then ASCII
    return bytes.fromhex(hex_columns.replace(" ", ""))[:n]
