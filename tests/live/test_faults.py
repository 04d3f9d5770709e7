"""Faults and bad input, as an adversarial user would cause them: each gives one line and
the right exit code, never a traceback; leaves no probe in the server (the probed
instruction is back, read in /proc/PID/mem); and keeps what was recorded readable, with a
truthful end in meta.json and the report."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

from cli_output import one_line
from conftest import INNOSTALL, fixture, innostall, stop_load
from innostall.collector.discovery import discover, target
from procmem import code_byte, file_byte, loaders_of


SERVER = "mariadb-11.4.5"


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


def start_recording(pid: int, out: Path, *extra: str, env: dict | None = None) -> tuple[subprocess.Popen, int]:
    """A recorder and, once it has attached, its loader's pid."""
    recorder = subprocess.Popen(INNOSTALL + ["record", "--pid", str(pid), "-o", str(out), *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
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
    # its last interval and final snapshot are lost: the command fails and says so
    assert recorder.returncode == 1, err
    assert "the recording ended early" in err and "loader killed by SIGKILL" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    meta = json.loads((tmp_path / "rec" / "meta.json").read_text())
    assert meta["end_reason"] == "loader killed by SIGKILL" and meta["complete"] is False
    report = innostall("report", str(tmp_path / "rec"))
    assert report.returncode == 0 and "ended by loader killed by SIGKILL" in report.stdout
    assert_no_probe_left(srv.pid, offsets)


def test_a_full_disk_ends_the_recording_and_keeps_the_journal(servers, tmp_path):
    srv = servers(SERVER)
    offsets = probed_offsets(srv.pid)
    load = srv.sysbench("oltp_read_write", 30, "--threads=2")
    try:
        with small_tmpfs(tmp_path / "small", "256k") as small:
            # a size limit above the disk's room: by default it would be half of it
            result = innostall("record", "--pid", str(srv.pid), "--interval", "0.05", "--max-size", "1G",
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


def test_the_size_limit_ends_the_recording_before_the_disk_fills(servers, tmp_path):
    """--max-size 1M at 100 snapshots a second under load: the recording ends as Ctrl-C would
    (its last snapshot kept, its tables written), says why in one line and in meta.json,
    and the journal is over the limit by no more than the lines that ended it."""
    srv = servers(SERVER)
    load = srv.sysbench("oltp_read_write", 60, "--threads=2")
    try:
        result = innostall("record", "--pid", str(srv.pid), "--interval", "0.01", "--max-size", "1M",
                           "--duration", "60", "-o", str(tmp_path / "rec"), timeout=90)
    finally:
        stop_load(load)
    assert result.returncode == 0, result.stderr
    assert "size limit reached (1.0 MiB of journal, --max-size) after" in result.stderr
    meta = json.loads((tmp_path / "rec" / "meta.json").read_text())
    assert meta["end_reason"].startswith("size limit reached") and meta["complete"]
    assert meta["stop_real_ns"] - meta["start_real_ns"] < 50e9  # well before its duration
    # Past the limit come only the lines that ended it: those already on their way when the
    # recorder stopped the loader (at most a pipe's 64 KiB and the loader's 4 KiB output
    # buffer, and the rest of the snapshot it was printing), then its last snapshot: a
    # snapshot's lines of each kind at most twice, whose latch tables alone can be 150 KB
    # under this load (measured: 145,512 bytes).
    past, offset = [], 0
    for line in (tmp_path / "rec" / "journal.jsonl").open("rb"):
        if offset >= 2**20:
            past.append((json.loads(line)["type"], len(line)))
        offset += len(line)
    assert offset >= 2**20
    last = {"latch_tables", "latches", "read_views", "final", "end"}
    kinds = [kind for kind, _ in past if kind in last]
    assert all(kinds.count(kind) <= 2 for kind in kinds), past
    assert sum(size for kind, size in past if kind not in last) <= (64 + 4) * 1024, past
    report = innostall("report", str(tmp_path / "rec"))
    assert report.returncode == 0 and "ended by size limit reached" in report.stdout


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


def test_a_recording_in_progress_is_said_to_be_and_private_and_holds_no_password(servers, tmp_path):
    """A report made while the recorder runs says so (not 'cut short'); the directory is
    root's alone, 0700 with 0600 files, under the lax umask 022; MYSQL_PWD reaches neither
    the loader's environment nor any file of the recording."""
    srv = servers(SERVER)
    secret = "innostall-test-secret-7f3a"
    out = tmp_path / "rec"
    umask = os.umask(0o022)
    try:
        recorder, loader_pid = start_recording(srv.pid, out, "--duration", "30",
                                               env={**os.environ, "MYSQL_PWD": secret})
    finally:
        os.umask(umask)
    try:
        assert secret.encode() not in Path(f"/proc/{loader_pid}/environ").read_bytes()
        wait_for_intervals(out, 2)
        report = innostall("report", str(out))
        assert report.returncode == 0, report.stderr
        assert "still recording (this report reads it up to its last interval)" in report.stdout
    finally:
        recorder.send_signal(signal.SIGINT)
        recorder.communicate(timeout=60)
    assert recorder.returncode == 0
    assert not json.loads(innostall("report", str(out), "--json").stdout)["ended_by"].startswith("still")
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    files = list(out.iterdir())
    assert files and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files), \
        {f.name: oct(f.stat().st_mode) for f in files}
    assert not any(secret.encode() in f.read_bytes() for f in files)


def wait_for_intervals(out: Path, n: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (out / "journal.jsonl").read_text(errors="replace").count('"type":"interval"') >= n:
            return
        time.sleep(0.1)
    raise AssertionError(f"no {n} intervals in {timeout_s} s")


def test_a_second_ctrl_c_skips_the_tables_and_ends_at_once(servers, tmp_path):
    """Ctrl-C under load: the tables are written on idle CPU, which the load leaves little
    of, and the recorder says so; a second Ctrl-C then skips them, the command ends within
    a second or two, and the recording says how it ended, whole, read from its journal."""
    srv = servers(SERVER)
    out = tmp_path / "rec"
    load = srv.sysbench("oltp_read_write", 40, "--threads=4")
    try:
        recorder, _ = start_recording(srv.pid, out, "--duration", "60")
        wait_for_intervals(out, 3)
        recorder.send_signal(signal.SIGINT)
        said = [recorder.stderr.readline() for _ in range(1)]
        while said[-1] and "writing the recording's tables" not in said[-1]:
            said.append(recorder.stderr.readline())
        assert "writing the recording's tables on idle CPU (Ctrl-C skips them" in said[-1], said
        recorder.send_signal(signal.SIGINT)
        second = time.monotonic()
        _, err = recorder.communicate(timeout=30)
        ended_s = time.monotonic() - second
    finally:
        stop_load(load)
    assert recorder.returncode == 0, err
    assert ended_s < 3, ended_s  # a new process's exit, not the tables' seconds
    meta = json.loads((out / "meta.json").read_text())
    assert meta["end_reason"] and meta["complete"] and meta["tables"].startswith("skipped (SIGINT)")
    assert not list(out.glob("*.parquet"))
    report = innostall("report", str(out), "--json")
    assert report.returncode == 0 and json.loads(report.stdout)["ended_by"] == meta["end_reason"]
