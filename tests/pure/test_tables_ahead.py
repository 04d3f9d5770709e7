"""The tables' writer started ahead of a recording's known end (collector/recorder/store.py,
TablesAhead): parked on idle CPU while the recording runs, it writes the tables the writer
started at the end writes, once told; one never told writes nothing and is reaped."""
from __future__ import annotations

import shutil
import sys
import time

import pytest

from innostall.collector.recorder import store
from recordings import synthetic


class ParkedGroup:
    """Stands for the idle cgroup: the pids parked there, then those waited for."""

    def __init__(self):
        self.parked, self.waited = [], []

    def park(self, pid: int) -> bool:
        self.parked.append(pid)
        return True

    def stay_parked(self, pid: int) -> "ParkedGroup":
        self.waited.append(pid)
        return self  # the stay: write_tables_aside ends it

    def end(self) -> None:
        pass


def tables(directory) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in directory.glob("*.parquet")}


def journal_only(source, directory):
    shutil.copytree(source, directory)
    for path in directory.glob("*.parquet"):
        path.unlink()
    return directory


@pytest.mark.heavy  # the writers are Pythons of their own, each importing pandas (~0.8 s of CPU)
def test_a_writer_started_ahead_writes_once_told_the_tables_of_one_started_at_the_end(tmp_path):
    here = synthetic(tmp_path / "here")  # the tables written in this process
    told, untold = journal_only(here, tmp_path / "told"), journal_only(here, tmp_path / "untold")
    group = ParkedGroup()
    ahead = store.TablesAhead(str(told), group, duration_s=1.0)
    ahead.heed("attached")  # the end is within AHEAD_S: started now
    assert ahead.proc and group.parked == [ahead.proc.pid] and not tables(told)  # waits for the word
    assert store.write_tables_aside(str(told), None, ahead=ahead) is None
    assert group.waited == group.parked  # its patience began once it was waited for
    assert tables(told) == tables(here) and tables(here)

    never = store.TablesAhead(str(untold), group, duration_s=1.0)
    never.heed("attached")
    proc = never.proc
    never.close()  # the recording ended without its tables
    assert proc.returncode is not None and never.proc is None and not tables(untold)


@pytest.mark.parametrize("parked, duration_s", [(True, None), (False, 1.0), (True, store.AHEAD_S + 60)])
def test_no_writer_is_started_ahead_for_a_watch_a_far_end_or_without_an_idle_group(tmp_path, parked, duration_s):
    """A watch (no duration, not open-ended) saves when it may; without the idle cgroup the
    writer's imports would compete with the server while it is traced; a --duration's end
    is far off (its imports kept out of what it measures until then)."""
    ahead = store.TablesAhead(str(tmp_path), ParkedGroup() if parked else None, duration_s)
    for kind in ("attached", "interval", "interval"):
        ahead.heed(kind)
    assert ahead.proc is None


def test_a_recording_without_a_duration_starts_its_writer_at_the_attach_parked_at_most_so_long(
        tmp_path, monkeypatch):
    """Ctrl-C: the writer's imports done while the recording runs, the tables a second sooner
    after it; one parked PARKED_AT_MOST_S gives its memory back, and the writer started at
    the end writes."""
    monkeypatch.setattr(store, "WRITER", [sys.executable, "-c", "import sys; sys.stdin.read()"])
    group = ParkedGroup()
    ahead = store.TablesAhead(str(tmp_path), group, None, open_ended=True)
    ahead.heed("attached")
    started = ahead.proc
    assert started and group.parked == [started.pid]
    ahead.heed("interval")
    assert ahead.proc is started and started.poll() is None  # still parked, waiting for the word
    later = ahead.until + 1  # PARKED_AT_MOST_S after the attach
    monkeypatch.setattr(time, "monotonic", lambda: later)
    ahead.heed("interval")
    assert ahead.proc is None and started.returncode is not None  # ended and reaped
    ahead.heed("interval")
    assert ahead.proc is None and group.parked == [started.pid]  # not started again
