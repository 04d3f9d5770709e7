"""Faults and bad input, as an adversarial user would cause them: each gives one line and
the right exit code, never a traceback; leaves no probe in the server (the probed
instruction is back, read in /proc/PID/mem); and keeps what was recorded readable, with a
truthful end in meta.json and the report."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import recordings
from conftest import INNOSTALL, fixture, innostall, stop_load
from innostall.collector.discovery import discover, target
from procmem import code_byte, file_byte, loaders_of

SERVER = "mariadb-11.4.5"


def one_line(result: subprocess.CompletedProcess) -> str:
    """The error output, asserted to be one line and no traceback."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.mark.parametrize("args", [
    ["--duration", "nan"], ["--duration", "inf"], ["--duration", "1e-9"],
    ["--interval", "nan"], ["--interval", "0.001"], ["--duration", "-1"],
])
def test_bad_numbers_are_refused_before_anything_is_created(tmp_path, args):
    out = tmp_path / "rec"
    result = innostall("record", "--pid", str(os.getpid()), *args, "-o", str(out))
    assert result.returncode == 2 and "usage:" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def probed_offsets(pid: int) -> list[tuple[str, int]]:
    tgt = target.from_pid(pid)
    return [(tgt.path, p.offset) for p in discover.resolve(tgt, discover.select("default")) if p.ok]


def assert_no_probe_left(pid: int, offsets: list[tuple[str, int]]) -> None:
    for path, offset in offsets:
        assert code_byte(pid, offset) == file_byte(path, offset), f"probe left at {offset:#x}"


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str, *options: str):
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join([f"size={size}", *options]), "tmpfs",
                    str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_read_only_output_directory_is_one_line(servers, tmp_path):
    srv = servers(SERVER)
    with small_tmpfs(tmp_path / "ro", "64k", "ro") as read_only:
        result = innostall("record", "--pid", str(srv.pid), "--duration", "1", "-o", str(read_only))
        assert result.returncode == 1
        assert one_line(result) == f"innostall: cannot write into {read_only}: Read-only file system"


def test_a_disk_full_at_start_leaves_nothing_behind(servers, tmp_path):
    srv = servers(SERVER)
    with small_tmpfs(tmp_path / "tiny", "4k") as tiny:
        result = innostall("record", "--pid", str(srv.pid), "--duration", "1", "-o", str(tiny / "rec"))
        assert result.returncode == 1
        assert "cannot write" in one_line(result) and "No space left on device" in result.stderr
        assert not (tiny / "rec").exists()  # not even the directory it created


def test_damaged_journal_lines_are_skipped_and_said(tmp_path):
    """A garbage line in the middle of a journal whose tables are gone: the report reads
    around it, loses nothing (the snapshots are cumulative) and says so."""
    whole = recordings.synthetic(tmp_path / "whole", latches=False)
    damaged = recordings.synthetic(tmp_path / "damaged", latches=False)
    lines = (damaged / "journal.jsonl").read_text().splitlines(keepends=True)
    lines.insert(len(lines) // 2, "}{ not json\n")
    (damaged / "journal.jsonl").write_text("".join(lines))
    for table in damaged.glob("*.parquet"):
        table.unlink()
    report = innostall("report", str(damaged), "--json")
    assert report.returncode == 0, report.stderr
    summary = json.loads(report.stdout)
    assert summary["purge"] == json.loads(innostall("report", str(whole), "--json").stdout)["purge"]
    assert summary["warnings"][0].startswith("1 damaged journal line(s) skipped")
    assert "warning   1 damaged journal line(s) skipped" in innostall("report", str(damaged)).stdout


def test_an_empty_recording_is_said_to_be_empty(tmp_path):
    rec = recordings.synthetic(tmp_path / "rec", latches=False)
    (rec / "journal.jsonl").write_text('{"type":"attached","mono_ns":1,"real_ns":1,"programs":[]}\n')
    for table in rec.glob("*.parquet"):
        table.unlink()
    result = innostall("report", str(rec))
    assert result.returncode == 1 and "the recording is empty" in one_line(result)


def start_recording(pid: int, out: Path, *extra: str) -> tuple[subprocess.Popen, int]:
    """A recorder and, once it has attached, its loader's pid."""
    recorder = subprocess.Popen(INNOSTALL + ["record", "--pid", str(pid), "-o", str(out), *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60  # the start may wait for CPU the server leaves (idle.py)
    while time.monotonic() < deadline and recorder.poll() is None:
        journal = out / "journal.jsonl"
        if journal.exists() and '"type":"attached"' in journal.read_text(errors="replace"):
            break
        time.sleep(0.05)
    loaders = loaders_of(recorder.pid)
    assert loaders, "no loader under the recorder"
    return recorder, loaders[0]


def test_killing_only_the_loader_ends_truthfully(servers, tmp_path):
    srv = servers(SERVER)
    offsets = probed_offsets(srv.pid)
    recorder, loader_pid = start_recording(srv.pid, tmp_path / "rec", "--duration", "30")
    time.sleep(1.5)
    os.kill(loader_pid, signal.SIGKILL)
    out, err = recorder.communicate(timeout=60)
    assert recorder.returncode == 0, err
    assert "ended by loader killed by SIGKILL" in err
    meta = json.loads((tmp_path / "rec" / "meta.json").read_text())
    assert meta["end_reason"] == "loader killed by SIGKILL" and meta["complete"]
    report = innostall("report", str(tmp_path / "rec"))
    assert report.returncode == 0 and "ended by loader killed by SIGKILL" in report.stdout
    assert_no_probe_left(srv.pid, offsets)


def test_a_full_disk_ends_the_recording_and_keeps_the_journal(servers, tmp_path):
    srv = servers(SERVER)
    offsets = probed_offsets(srv.pid)
    load = srv.sysbench("oltp_read_write", 30, "--threads=2")
    try:
        with small_tmpfs(tmp_path / "small", "256k") as small:
            result = innostall("record", "--pid", str(srv.pid), "--interval", "0.05",
                               "--duration", "30", "-o", str(small / "rec"), timeout=90)
            assert result.returncode == 1
            assert "disk full (No space left on device)" in one_line(result)
            assert not (small / "rec" / "meta.json.tmp").exists()
            report = innostall("report", str(small / "rec"))
            assert report.returncode == 0, report.stderr
            assert "ended by disk full" in report.stdout and "recorded  20" in report.stdout
            assert "purge" in report.stdout.lower()
    finally:
        stop_load(load)
    assert_no_probe_left(srv.pid, offsets)


def test_a_stalled_recorder_gives_one_long_interval_not_empty_ones(servers, tmp_path):
    """SIGSTOP the recorder: the loader blocks on the full pipe; once the recorder goes on,
    the next snapshot covers the stall and no zero-length intervals follow it."""
    srv = servers(SERVER)
    load = srv.sysbench("oltp_read_write", 20, "--threads=2")
    try:
        # 20 snapshots a second, some 2 KB each: the 64 KiB pipe fills within the stall
        recorder, _ = start_recording(srv.pid, tmp_path / "rec", "--duration", "9",
                                      "--interval", "0.05")
        time.sleep(1)
        recorder.send_signal(signal.SIGSTOP)
        time.sleep(5)
        recorder.send_signal(signal.SIGCONT)
        recorder.communicate(timeout=60)
    finally:
        stop_load(load)
    assert recorder.returncode == 0
    snapshots = [json.loads(line) for line in (tmp_path / "rec" / "journal.jsonl").open()]
    times = [s["mono_ns"] for s in snapshots if s["type"] in ("interval", "final")]
    gaps = [(b - a) / 1e9 for a, b in zip(times, times[1:])]
    assert max(gaps) > 2  # the stall, in one interval
    assert sum(gap < 0.005 for gap in gaps[:-1]) == 0, gaps  # none empty (the final may be)
    report = innostall("report", str(tmp_path / "rec"))
    assert "the recorder fell behind" in report.stdout


def test_the_server_dying_ends_the_recording_truthfully(servers, tmp_path):
    srv = servers(SERVER)
    recorder, _ = start_recording(srv.pid, tmp_path / "rec", "--duration", "30")
    try:
        time.sleep(1.5)
        os.kill(srv.pid, signal.SIGKILL)
        out, err = recorder.communicate(timeout=60)
    finally:
        fixture(SERVER, "start")  # InnoDB recovers; the other tests go on with it
    assert recorder.returncode == 0, err
    meta = json.loads((tmp_path / "rec" / "meta.json").read_text())
    assert meta["end_reason"] == "target-exited" and meta["complete"]
    report = innostall("report", str(tmp_path / "rec"), "--json")
    assert json.loads(report.stdout)["ended_by"] == "target-exited"
    assert srv.serves()
