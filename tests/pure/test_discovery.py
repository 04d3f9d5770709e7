"""Discovery on the real fixture binaries (downloaded, not started) and on bad input."""
import os
import re
import subprocess

import pytest

from conftest import INNOSTALL, innostall
from fixture_binaries import (BINARIES, assert_core_set_resolves, assert_identified_with_purge_batch, fixture_binary,
                              unrooted)
from innostall.collector.discovery import call_sites, discover, elf, target
from innostall.errors import UserError


@pytest.mark.heavy  # decodes each fixture server's binary (tens of MB) with Capstone: ~3.5 s of CPU in all
@pytest.mark.parametrize("name", unrooted(BINARIES))
def test_core_set_and_version_step_resolve_at_the_versions_own_variants(name):
    """Every fixture any user may fetch, nothing as a fallback (MySQL 9.7.4's drifted
    signatures, whose fetch needs root: tests/live/test_discovery_live.py)."""
    assert_core_set_resolves(name)


@pytest.mark.parametrize("text, version", [
    (b"\0mysqld-8.0\0x\0" + b"8.0.15\0", "8.0.15"),
    (b"\0mysqld-9.7\0 9.7.4.0\0MySQL 9.7.4\0ndb-9.7.4\0", "9.7.4"),  # tail-merged, Debian 9.7.4
    (b"1.2.840\0" + b"2.0.0\0\0mysqld-8.4\0" + b"8.4.3\0", "8.4.3"),  # other dotted numbers first
    (b"\0mysqld-8.0\0" + b"8.0.36-28\0", "8.0.36-28"),  # Percona: release after the dash
    (b"\0mysqld-2027.1\0" + b"2027.1.0\0", "2027.1.0"),  # year-style numbering
    (b"\0mysqld-10.0\0", "10.0"),  # only the group: major.minor
    (b"\0" + b"5.7.22-log\0" + b"5.7.22\0", "5.7.22"),  # no group: the first plausible
])
def test_mysql_version_from_rodata(text, version):
    assert target.mysql_version(text) == version


def test_mariadb_version_even_tail_merged():
    for text, version in [(b"\0" + b"10.2.11-MariaDB\0", "10.2.11"),
                          (b"Ver 12.1.2-MariaDB-log\0", "12.1.2"),
                          (b"10.11.5-MariaDB", "10.11.5"),  # at the very start
                          (b"x-MariaDB\0" + b"1.2.3-MariaDB\0" + b"11.4.5-MariaDB\0", "11.4.5"),  # not the first suffix
                          (b"\0123456789.1.1-MariaDB" + b"\0" + b"10.6.1-MariaDB", "10.6.1")]:  # digits before: not a version
        assert target.mariadb_version(text) == version
        assert target.MARIADB_VERSION.search(text).group(1).decode() == version  # the expression's own first
    assert target.mariadb_version(b"\0mysqld-8.0\0" + b"8.0.15\0 -MariaDB") is None


def test_a_build_newer_than_checked_is_said_plainly():
    def stub(family, version):
        return target.Target(path="", exe="", pid=None, elf=None, family=family, version=version)

    assert discover.version_note(stub("mysql", "9.7.4")) is None
    assert "newer than the newest release innostall was checked on (9.7.4)" in \
        discover.version_note(stub("mysql", "10.1.0"))
    assert "not checked on a build of this family" in discover.version_note(stub("percona", "8.0.36-28"))


@pytest.mark.heavy  # reads each fixture's binary (tens of MB) and runs objdump: 1.0 s of CPU for MySQL 8.0.15's
@pytest.mark.parametrize("name", unrooted(BINARIES))
def test_identifies_server_and_resolves_purge_batch(name):
    assert_identified_with_purge_batch(name)


@pytest.mark.parametrize("path, message", [
    ("/nonexistent/mysqld", "no such file"),
    ("/etc/hostname", "not an ELF file"),
    ("/bin/ls", "not a MySQL, Percona or MariaDB server binary"),
])
def test_bad_binaries_give_one_clear_line(path, message):
    # main() in this process (~0.45 s of CPU less each); the command as its own process, its
    # exit status and its one line, is the pid's and the unsupported version's test
    result = innostall("probes", "--binary", path, in_process=True)
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
    assert discover.layout(stub("mysql", "9.7.4"))["members"]["rw_lock_t.is_block_lock"] == 0x50 * 8
    for unverified in ("8.0.24", "8.0.28", "10.5.20"):  # the layout moved there: no guess
        found = discover.layout(stub("mysql" if unverified[0] == "8" else "mariadb", unverified))
        assert found is None or found["latch_model"] is None
    # members known for other ranges than the latch structs join the build's layout
    assert discover.layout(stub("mysql", "8.0.28"))["members"]["trx_sys_t.rseg_history_len"] == 0xa8
    assert discover.layout(stub("mariadb", "10.3.20"))["members"]["sizeof(trx_sys_t.rseg_history_len)"] == 4


@pytest.mark.heavy  # decodes a fixture server's binary (tens of MB) with Capstone
def test_free_page_wait_is_its_call_site_as_objdump_reads_it():
    """MariaDB 11.4.5's wait for a free page is probed at buf_LRU_get_free_block's call of
    pthread_cond_timedwait on &buf_pool.done_free, not in libc (issue 44): the offsets are
    that call and the instruction after it, as objdump disassembles them."""
    tgt = target.from_binary(str(fixture_binary("mariadb-11.4.5")))
    probe, = discover.resolve(tgt, ["free_page_wait"])
    assert probe.ok and probe.path is None and probe.callee == "pthread_cond_timedwait", probe.reason
    call, after = probe.offsets[0], probe.after_calls[0]
    vaddr = probe.symbol.vaddr - tgt.elf.file_offset(probe.symbol.vaddr) + call
    listing = subprocess.run(["objdump", "-d", f"--start-address={vaddr}", f"--stop-address={vaddr + after - call}",
                              tgt.path], capture_output=True, text=True, check=True).stdout
    assert re.search(r"call\s+[0-9a-f]+ <pthread_cond_timedwait@plt>", listing), listing
    assert f"free_page_cond_wait_enter={call:#x}" in probe.attach_args()
    assert f"flush_wait_exit=after-call:{after:#x}" in probe.attach_args()


def test_a_call_whose_first_argument_the_code_does_not_hold_is_not_taken():
    """The same call asked with &buf_pool itself as its first argument, where the code passes
    &buf_pool.done_free: refused, never guessed."""
    tgt = target.from_binary(str(fixture_binary("mariadb-11.4.5")))
    buf_pool = tgt.find_objects(["buf_pool"])["buf_pool"].vaddr
    with pytest.raises(call_sites.Unconfirmed, match="no call to pthread_cond_timedwait"):
        call_sites.find(tgt, "buf_LRU_get_free_block", "pthread_cond_timedwait", buf_pool)


@pytest.mark.parametrize("name, full", [("eax", "rax"), ("al", "rax"), ("sil", "rsi"), ("edi", "rdi"),
                                        ("r14d", "r14"), ("r8b", "r8"), ("bpl", "rbp"), ("rbx", "rbx")])
def test_registers_are_followed_by_their_64_bit_whole(name, full):
    assert call_sites.full_register(name) == full


def test_a_name_is_found_wherever_its_string_ends_in_the_table():
    """A linker merges a string into the tail of a longer one: "bar" may start inside
    "foo_bar"; a name not followed by its terminator there ("foo" in "foo_bar") is not found."""
    strtab = b"\0foo_bar\0baz\0xfoo\0"
    assert elf._string_offsets(strtab, ["bar", "foo_bar", "foo"]) == {1: "foo_bar", 5: "bar", 14: "foo"}
    assert elf._string_offsets(strtab, ["qux"]) == {}


def test_names_mentioning_an_identifier_are_mangled_and_hold_it_whole():
    strtab = b"\0_Z9trx_purgev\0_Z19trx_purge_somethingv\0plain9trx_purge\0_ZN3foo9trx_purgeEv\0"
    assert elf._mangled_names_mentioning(strtab, "trx_purge") == ["_Z9trx_purgev", "_ZN3foo9trx_purgeEv"]
