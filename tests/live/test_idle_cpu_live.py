"""What a start and a finish cost the server: innostall's bulk work waits for CPU the server
leaves (collector/recorder/idle.py), and libc's frame table is decoded once per libc build
(collector/discovery/libc.py's cache), not at every start."""
from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from innostall.collector.discovery import discover, target
from innostall.collector.recorder import idle, recorder


SERVER = "mariadb-11.4.5"


def procs(path: str) -> set[int]:
    with open(path) as f:
        return {int(line) for line in f if line.strip()}


def test_a_stay_in_the_idle_group_ends_when_its_patience_is_up():
    if os.geteuid() != 0:
        pytest.skip("cgroups are root's")
    group = idle.IdleGroup.create()
    if group is None:
        pytest.skip("no cpu controller to be had here")
    with open(os.path.join(group.dir, "cpu.idle")) as f:
        assert f.read().strip() == "1"
    child = subprocess.Popen(["sleep", "30"])
    try:
        began = time.monotonic()
        stay = group.stay([child.pid], patience_s=0.5)
        assert child.pid in procs(group.procs)
        while child.pid in procs(group.procs) and time.monotonic() - began < 10:
            time.sleep(0.05)  # the patience timer's thread may wait for a CPU on a busy host
        assert time.monotonic() - began >= 0.5  # not before its patience was up
        assert child.pid not in procs(group.procs)  # sent home, where it came from
        assert child.pid in procs(group.home_procs)
        stay.end()
    finally:
        child.kill()
        child.wait()
        group.remove()


def test_the_governor_leaves_the_idle_group_before_anything_is_attached(servers, tmp_path):
    """A recording starts in the idle group, and by the time the probes are attached
    neither the recorder nor the loader is in it; the group is gone after the recording."""
    srv = servers(SERVER)
    if idle.IdleGroup.create() is None:
        pytest.skip("no cpu controller to be had here")
    tgt = target.from_pid(srv.pid)
    probes = discover.resolve(tgt, discover.select("default"))
    seen = {}

    def on_event(rec):
        if rec["type"] == "attached":
            seen["in_idle_group"] = procs(os.path.join(idle.cpu_cgroup_root()[0], idle.GROUP,
                                                       "cgroup.procs"))

    cache = tmp_path / "cache"
    os.environ["INNOSTALL_CACHE"] = str(cache)
    try:
        recorder.record(tgt, probes, str(tmp_path / "rec"), duration_s=2, on_event=on_event)
    finally:
        del os.environ["INNOSTALL_CACHE"]
    assert seen["in_idle_group"] == set()
    assert not os.path.exists(os.path.join(idle.cpu_cgroup_root()[0], idle.GROUP))
    assert "cannot leave the idle cgroup" not in (tmp_path / "rec" / "loader.log").read_text()
    # the latch probes' libc table was kept for the next start
    assert any(p.name.startswith("libc-cfi-") for p in cache.iterdir())
    shutil.rmtree(cache)


def test_a_patience_of_0_never_enters_the_idle_group():
    """record --patience 0: no stay for the start, and the tables' process shares the CPU at once."""
    if os.geteuid() != 0:
        pytest.skip("cgroups are root's")
    if idle.IdleGroup.create() is None:
        pytest.skip("no cpu controller to be had here")
    child = subprocess.Popen(["sleep", "30"])
    try:
        with idle.Start(patience_s=0) as start:
            assert start.stay is None
            stay = start.group.stay([child.pid])
            stay.add(os.getpid())
            assert procs(start.group.procs) == set()
            stay.end()
    finally:
        child.kill()
        child.wait()
