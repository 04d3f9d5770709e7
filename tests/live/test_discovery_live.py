"""Discovery on the real fixture binaries (downloaded, not started) and on bad input."""
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import INNOSTALL
from fixture_binaries import (BINARIES, assert_core_set_resolves, assert_identified_with_purge_batch, fixture_binary,
                              rooted)
from innostall.collector.discovery import discover, target


@pytest.mark.parametrize("name", rooted(BINARIES))
def test_core_set_and_version_step_resolve_at_the_versions_own_variants(name):
    """MySQL 9.7.4's drifted signatures (its fetch needs root), nothing as a fallback; the
    other fixtures: tests/pure/test_discovery.py."""
    assert_core_set_resolves(name)


def test_server_in_another_root_is_named_as_it_sees_itself(servers):
    """The chroot'd MySQL 9.7.4, as a server in a container: --pid works from the host."""
    server = servers("mysql-9.7.4")
    tgt = target.from_pid(server.pid)
    assert tgt.root == f"/proc/{server.pid}/root" and tgt.exe_in_root == "/usr/sbin/mysqld"
    assert (tgt.family, tgt.version) == ("mysql", "9.7.4")


@pytest.mark.parametrize("name", rooted(BINARIES))
def test_identifies_server_and_resolves_purge_batch(name):
    assert_identified_with_purge_batch(name)


def test_not_root_is_told_to_use_root():
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    record = subprocess.run(as_nobody + INNOSTALL + ["record", "--pid", "1", "-o", "/tmp/never"],
                            capture_output=True, text=True)
    assert record.returncode == 1 and "needs root" in record.stderr
    probes = subprocess.run(as_nobody + INNOSTALL + ["probes", "--pid", "1"], capture_output=True, text=True)
    assert probes.returncode == 1 and "run innostall as root" in probes.stderr


def test_a_function_whose_arguments_moved_is_reported_not_attached():
    """A parameter list no decoder knows (say, a fork that put the latch second) is never
    attached: the probe is missing and says why."""
    tgt = target.from_binary(str(fixture_binary("mysql-9.7.4")))
    variant = {"function": "rw_lock_s_lock_spin", "params": ["unsigned long, rw_lock_t\\*, .*"]}
    with pytest.raises(discover.LayoutUnknown, match=r"rw_lock_s_lock_spin\(rw_lock_t\*, unsigned long, "
                       r"ut::Location\) is in the binary, but its arguments"):
        discover.variant_symbols(variant, tgt)
    variant["params"] = ["rw_lock_t\\*, unsigned long, .*"]
    assert [s.name for s in discover.variant_symbols(variant, tgt)] == \
        ["_Z19rw_lock_s_lock_spinP9rw_lock_tmN2ut8LocationE"]


def test_a_server_whose_binary_was_deleted_is_still_traced(tmp_path):
    """--pid reaches the running executable through /proc/PID/exe after an upgrade
    replaced or deleted it on disk: discovery, attaching and recording still work."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    original = fixture_binary("mariadb-10.2.11")
    copy, data = tmp_path / "mysqld", tmp_path / "data"
    shutil.copy2(original, copy)
    data.mkdir()
    # --bootstrap initialises InnoDB, then reads SQL from stdin: a server that stays up
    server = subprocess.Popen([str(copy), "--no-defaults", f"--basedir={original.parent.parent}",
                               f"--datadir={data}", "--bootstrap", "--user=root",
                               "--innodb-buffer-pool-size=16M", "--skip-networking"],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(120):  # InnoDB is up once its redo log exists
            if (data / "ib_logfile0").exists() or server.poll() is not None:
                break
            time.sleep(0.25)
        assert server.poll() is None, "the copied server exited"
        copy.unlink()
        probes = subprocess.run(INNOSTALL + ["probes", "--pid", str(server.pid)],
                                capture_output=True, text=True)
        assert probes.returncode == 0, probes.stdout + probes.stderr
        assert probes.stdout.startswith(f"MariaDB 10.2.11  {copy} (deleted)")
        record = subprocess.run(INNOSTALL + ["record", "--pid", str(server.pid), "--duration", "2",
                                             "-o", str(tmp_path / "rec")], capture_output=True, text=True)
        assert record.returncode == 0, record.stderr
        assert json.loads((tmp_path / "rec" / "meta.json").read_text())["complete"]
    finally:
        server.kill()
        server.wait()
