"""Symbols from separate debug files, as distros ship them: a fixture binary split with
objcopy/strip (scripts/split-debuginfo.sh), and Debian's own stripped mariadbd."""
import os
import subprocess
from pathlib import Path

import pytest

from conftest import INNOSTALL, REPO, fetched
from innostall.collector.discovery import debuginfo, discover, target
from innostall.errors import NotCovered, UserError

CORE = ["purge_batch", "version_walk", "block_lock_s", "block_lock_x"]


@pytest.fixture(scope="module")
def split():
    out = subprocess.run([str(REPO / "scripts" / "split-debuginfo.sh"), "mariadb-11.4.5"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return Path(out)


@pytest.fixture(scope="module")
def unstripped_offsets():
    exe = REPO / "build" / "fixtures" / "mariadb-11.4.5" / "dist" / "bin" / "mariadbd"
    return {p.name: p.offsets for p in discover.resolve(target.from_binary(str(exe)), CORE)}


def assert_same_probes(tgt, unstripped_offsets):
    probes = discover.resolve(tgt, CORE)
    assert {p.name: p.offsets for p in probes} == unstripped_offsets


def test_stripped_without_debug_file_names_the_fix(split):
    with pytest.raises(NotCovered, match="stripped.*build-id df9ed6c4.*--debuginfo FILE"):
        target.from_binary(str(split / "bare" / "mariadbd"))


def test_debuginfo_file_option(split, unstripped_offsets):
    tgt = target.from_binary(str(split / "bare" / "mariadbd"), str(split / "debug" / "mariadbd.debug"))
    assert tgt.debug is not None and not tgt.elf.has_symtab
    assert_same_probes(tgt, unstripped_offsets)


def test_debuglink_next_to_the_executable(split, unstripped_offsets):
    tgt = target.from_binary(str(split / "linked" / "mariadbd"))
    assert tgt.debug.path.endswith("linked/.debug/mariadbd.debug")
    assert_same_probes(tgt, unstripped_offsets)


def test_build_id_tree(split, unstripped_offsets, tmp_path, monkeypatch):
    build_id = "df9ed6c416aa0cd2e07169c3b5e3cf1bf966c72c"
    tree = tmp_path / ".build-id" / build_id[:2]
    tree.mkdir(parents=True)
    (tree / f"{build_id[2:]}.debug").symlink_to(split / "debug" / "mariadbd.debug")
    monkeypatch.setattr(debuginfo, "DEBUG_ROOT", str(tmp_path))
    assert_same_probes(target.from_binary(str(split / "bare" / "mariadbd")), unstripped_offsets)


def test_without_build_id_the_debuglink_crc_decides(split, unstripped_offsets):
    tgt = target.from_binary(str(split / "nobuildid" / "mariadbd"), str(split / "debug"))
    assert tgt.elf.build_id is None
    assert_same_probes(tgt, unstripped_offsets)


def test_a_debug_file_of_another_build_is_refused(split):
    # another release's server, fetched here: earlier tests must not be needed to bring it
    fetched("mariadb-10.2.11")
    other = REPO / "build" / "fixtures" / "mariadb-10.2.11" / "dist" / "bin" / "mysqld"
    with pytest.raises(UserError, match="does not belong to"):
        target.from_binary(str(split / "bare" / "mariadbd"), str(other))


@pytest.mark.skipif(not os.path.exists("/usr/sbin/mariadbd"), reason="Debian's mariadb-server-core not installed")
def test_debian_stripped_mariadbd_gives_one_line_naming_the_dbgsym_package():
    result = subprocess.run(INNOSTALL + ["probes", "--binary", "/usr/sbin/mariadbd"],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert "stripped" in result.stderr and "mariadb-server-core-dbgsym" in result.stderr
