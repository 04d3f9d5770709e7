"""Discovery on the real fixture binaries (downloaded, not started) and on bad input."""
import os
import subprocess
from pathlib import Path

import pytest

from conftest import INNOSTALL, REPO, fixture
from innostall.collector import discover, target
from innostall.errors import UserError

BINARIES = {
    "mariadb-11.4.5": ("mariadb", "11.4.5", "bin/mariadbd", "_Z9trx_purgemm", True),
    "mariadb-10.2.11": ("mariadb", "10.2.11", "bin/mysqld", "_Z9trx_purgemmb", False),
    "mysql-8.0.15": ("mysql", "8.0.15", "bin/mysqld", "_Z9trx_purgemmb", False),
}


def fixture_binary(name: str) -> Path:
    fixture(name, "fetch")
    return REPO / "build" / "fixtures" / name / "dist" / BINARIES[name][2]


@pytest.mark.parametrize("name", BINARIES)
def test_identifies_server_and_resolves_purge_batch(name):
    family, version, _, symbol, pie = BINARIES[name]
    tgt = target.from_binary(str(fixture_binary(name)))
    assert (tgt.family, tgt.version, tgt.elf.is_pie) == (family, version, pie)
    probe, = discover.resolve(tgt, ["purge_batch"])
    assert probe.symbol.name == symbol and not probe.fallback
    # the file offset holds the function's first bytes, as objdump sees them at its address
    assert file_bytes(tgt.path, probe.offset, 8) == objdump_bytes(tgt.path, probe.symbol.vaddr, 8)


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


@pytest.mark.parametrize("path, message", [
    ("/nonexistent/mysqld", "no such file"),
    ("/etc/hostname", "not an ELF file"),
    ("/bin/ls", "not a MySQL, Percona or MariaDB server binary"),
])
def test_bad_binaries_give_one_clear_line(path, message):
    result = subprocess.run(INNOSTALL + ["probes", "--binary", path], capture_output=True, text=True)
    assert result.returncode == 1
    assert message in result.stderr and len(result.stderr.splitlines()) == 1


def test_pid_that_does_not_exist():
    with pytest.raises(UserError, match="no process with pid"):
        target.from_pid(2 ** 22 + 12345)


def test_pid_that_is_not_a_server():
    result = subprocess.run(INNOSTALL + ["probes", "--pid", str(os.getpid())], capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.startswith(f"innostall: pid {os.getpid()} (")
    assert "not a MySQL, Percona or MariaDB server" in result.stderr


def test_not_root_is_told_to_use_root():
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    record = subprocess.run(as_nobody + INNOSTALL + ["record", "--pid", "1", "-o", "/tmp/never"],
                            capture_output=True, text=True)
    assert record.returncode == 1 and "needs root" in record.stderr
    probes = subprocess.run(as_nobody + INNOSTALL + ["probes", "--pid", "1"], capture_output=True, text=True)
    assert probes.returncode == 1 and "run innostall as root" in probes.stderr


def test_unsupported_version(tmp_path):
    source = tmp_path / "old.c"
    source.write_text('#include <stdio.h>\nint main(void) { puts("10.1.48-MariaDB"); return 0; }\n')
    subprocess.run(["gcc", "-o", str(tmp_path / "mysqld"), str(source)], check=True)
    result = subprocess.run(INNOSTALL + ["probes", "--binary", str(tmp_path / "mysqld")],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stderr.strip() == ("innostall: MariaDB 10.1.48 is not supported: innostall covers "
                                     "mysql 5.6+, percona 5.6+, mariadb 10.2+")


def test_latch_layout_by_version_and_its_absence():
    def stub(family, version):
        return target.Target(path="", exe="", pid=None, elf=None, family=family, version=version)

    assert discover.layout(stub("mariadb", "11.4.5"))["members"]["buf_block_t.lock"] == 24
    assert discover.layout(stub("mariadb", "10.11.5"))["members"]["buf_page_t::WRITE_FIX"] == 0xA0000000
    mysql = discover.layout(stub("mysql", "8.0.15"))
    assert mysql["latch_model"] == "rw_lock"
    assert divmod(mysql["members"]["rw_lock_t.is_block_lock"], 8) == (0x59, 5)
    assert discover.layout(stub("mysql", "8.0.30")) is None  # is_block_lock moved: needs DWARF
