"""The recorder under real signals (issue 49), on MariaDB 11.4.5: a Ctrl-C at any point of the
start leaves no directory it made and no loader alive; a second Ctrl-C just after the first
ends the recording at once, the loader first, and says so; inside a watch's save, two
Ctrl-Cs end the watch with its line and a truthful end in every meta.json. No probe is left
in the server (the probed instructions read back from /proc/PID/mem)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from conftest import INNOSTALL, innostall
from procmem import loaders_of
from test_faults import assert_no_probe_left, probed_offsets, small_tmpfs, start_recording, wait_for_intervals

SERVER = "mariadb-11.4.5"


def ended(proc: subprocess.Popen) -> tuple[str, float]:
    """Its error output, and how long it took to end from now. One that has not ended in
    30 s is killed before the test fails, so that its probes (the kernel detaches them as it
    exits) are not taken for the next test's: a fresh root's recorder, sent SIGINT 0.2 s
    after its start, ran on, and the two tests after it found its probe in the server."""
    began = time.monotonic()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"not ended 30 s after the signal; killed. Its error output: {err}") from None
    return err, time.monotonic() - began


def recorder(pid: int, out, *extra: str, sigint=signal.SIG_DFL) -> subprocess.Popen:
    """A recorder started with SIGINT's disposition given, not the suite's own: a suite run as
    a script's background command (`make test &`) has SIGINT ignored, which its children
    inherit, where a terminal's Ctrl-C finds it at its default."""
    return subprocess.Popen(INNOSTALL + ["record", "--pid", str(pid), "-o", str(out), "--duration", "60", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, sigint))


def watching(pid: int, out, before_s: int, after_s: int) -> subprocess.Popen:
    """A watch of the server, once it said it is attached and watching."""
    proc = subprocess.Popen(INNOSTALL + ["watch", "--pid", str(pid), "--before", str(before_s), "--after",
                                         str(after_s), "--duration", "60", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said(proc, "attached, watching")
    return proc


def said(proc: subprocess.Popen, words: str) -> None:
    """Reads its error output up to a line holding words (or its end)."""
    for line in proc.stderr:
        if words in line:
            return


def test_a_ctrl_c_at_any_point_of_the_start_leaves_nothing_behind(servers, tmp_path):
    srv = servers(SERVER)
    offsets = probed_offsets(srv.pid)
    # before the directory, as it is made, as the loader starts and while it attaches
    for i, after_s in enumerate((0.2, 0.6, 1.0, 1.5, 2.5)):
        out = tmp_path / f"rec{i}"
        proc = recorder(srv.pid, out)
        time.sleep(after_s)
        if (out / "journal.jsonl").exists() and '"attached"' in (out / "journal.jsonl").read_text():
            proc.send_signal(signal.SIGINT)  # attached already: a recording, ended as usual
            proc.communicate(timeout=60)
            continue
        loaders, began = loaders_of(proc.pid), out.exists()
        proc.send_signal(signal.SIGINT)
        err, took = ended(proc)
        assert "Traceback" not in err, err
        if proc.returncode == 0:  # it attached between the check and the signal
            continue
        said = err.strip().splitlines()
        assert proc.returncode == 130 and len(said) <= 1 and not out.exists(), (after_s, err)
        if began or loaders:  # once it had made something: what it took back, said
            assert said and said[0].startswith("innostall: SIGINT while starting"), (after_s, err)
        assert all(line.startswith("innostall: ") for line in said), (after_s, err)
        for loader in loaders:  # ended and waited for before the recorder's exit
            assert not os.path.exists(f"/proc/{loader}"), (after_s, loader)
    assert_no_probe_left(srv.pid, offsets)


def test_a_recorder_started_with_sigint_ignored_still_ends_at_one_during_its_start(servers, tmp_path):
    """As a script's background command: SIGINT inherited ignored. A fresh root's suite run
    so sent its recorder SIGINT during discovery, before the recording's own handler, and the
    recorder went on to the end of its 60 s. Now innostall heeds SIGINT from main's first
    line (cli.heed_interrupts); 1 s is past that line on any machine that runs the suite
    (the CLI's imports take about 0.1 s), and within discovery or the attach."""
    srv = servers(SERVER)
    offsets = probed_offsets(srv.pid)
    out = tmp_path / "rec"
    proc = recorder(srv.pid, out, sigint=signal.SIG_IGN)
    time.sleep(1.0)
    loaders = loaders_of(proc.pid)
    proc.send_signal(signal.SIGINT)
    err, took = ended(proc)
    assert "Traceback" not in err and proc.returncode in (0, 130), (proc.returncode, err)
    for loader in loaders:
        assert not os.path.exists(f"/proc/{loader}"), loader
    assert_no_probe_left(srv.pid, offsets)


@pytest.mark.parametrize("gap_s", [0.1, 0.3])
def test_a_quick_second_ctrl_c_ends_the_recording_at_once(servers, tmp_path, gap_s):
    srv = servers(SERVER)
    offsets = probed_offsets(srv.pid)
    out = tmp_path / "rec"
    proc, _ = start_recording(srv.pid, out, "--duration", "60")
    wait_for_intervals(out, 2)
    proc.send_signal(signal.SIGINT)
    time.sleep(gap_s)
    proc.send_signal(signal.SIGINT)
    err, took = ended(proc)
    assert "Traceback" not in err and took < 3, (took, err)
    meta = json.loads((out / "meta.json").read_text())
    if proc.returncode == 0:  # the first one's end came before the second: its tables skipped
        assert meta["complete"] and meta["tables"].startswith("skipped (SIGINT)"), meta
    else:
        assert proc.returncode == 130 and "ended at once by a second SIGINT" in err.strip().splitlines()[-1], err
        assert meta["end_reason"] == "ended at once by a second SIGINT" and meta["complete"] is False
    report = innostall("report", str(out))
    assert report.returncode == 0, report.stderr
    assert_no_probe_left(srv.pid, offsets)


def test_two_ctrl_cs_inside_a_watchs_save_end_it_truthfully(servers, tmp_path):
    srv = servers(SERVER)
    out = tmp_path / "watch"
    proc = watching(srv.pid, out, 5, 20)
    time.sleep(2)
    proc.send_signal(signal.SIGUSR1)
    said(proc, "saving")
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    err, took = ended(proc)
    assert "Traceback" not in err and took < 5, (took, err)
    lines = err.strip().splitlines()
    watch_meta = json.loads((out / "meta.json").read_text())
    assert watch_meta["end_reason"] and len(watch_meta["watch"]["saved"]) == 1, watch_meta
    save = out / watch_meta["watch"]["saved"][0]["directory"]
    save_meta = json.loads((save / "meta.json").read_text())
    assert save_meta["end_reason"].startswith("the watch ended"), save_meta["end_reason"]
    if proc.returncode == 130:
        assert "watch ended at once by a second SIGINT" in lines[-1], err
    else:  # the first one's end came before the second
        assert proc.returncode == 0 and lines[-1].startswith("watched "), err
    assert innostall("report", str(save)).returncode == 0


def test_a_watch_whose_disk_fills_as_it_saves_says_so_and_fails(servers, tmp_path):
    """Issue 49's first case: DIR on a small tmpfs, SIGUSR1. The save fails for room, the
    watch ends by itself, its line says what it failed to save and it exits 1; every
    meta.json says how it ended. The issue's 150 KB no longer holds the watch's own start: its
    meta.json (52 KB now, the tables' schema in it) and the 64 KB kept for its last one; 256 KB
    leaves the save a meta.json and a little of its journal before the disk fills."""
    srv = servers(SERVER)
    offsets = probed_offsets(srv.pid)
    with small_tmpfs(tmp_path / "small", "256k") as small:
        out = small / "watch"
        proc = watching(srv.pid, out, 20, 10)
        time.sleep(2)
        proc.send_signal(signal.SIGUSR1)
        err, took = ended(proc)
        assert "Traceback" not in err and took < 30, (took, err)
        assert proc.returncode == 1 and "FAILED to save" in err.strip().splitlines()[-1], err
        watch_meta = json.loads((out / "meta.json").read_text())
        failed = watch_meta["watch"]["saved"][0]
        assert watch_meta["complete"] is False and failed["failed"].startswith("disk full"), watch_meta
        save_meta = json.loads((out / failed["directory"] / "meta.json").read_text())
        assert save_meta["end_reason"] == failed["failed"] and save_meta["complete"] is False
        report = innostall("report", str(out / failed["directory"]))
        assert "Traceback" not in report.stderr and (report.returncode == 0 or
                                                     len(report.stderr.strip().splitlines()) == 1)
    assert_no_probe_left(srv.pid, offsets)


@pytest.mark.parametrize("after_s", [0.2, 3])
def test_a_watch_killed_while_it_saves_leaves_a_save_that_reports(servers, tmp_path, after_s):
    """Issue 49's second case: kill -9 of the watch 0.2 s or 3 s after SIGUSR1. The save's
    meta.json was written before its journal: the save reads, saying it was cut short; the
    loader dies with the watch (PR_SET_PDEATHSIG) and leaves no probe."""
    srv = servers(SERVER)
    offsets = probed_offsets(srv.pid)
    out = tmp_path / "watch"
    proc = watching(srv.pid, out, 5, 20)
    loaders = loaders_of(proc.pid)
    time.sleep(3)
    proc.send_signal(signal.SIGUSR1)
    said(proc, "saving")
    time.sleep(after_s)
    proc.kill()
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while any(os.path.exists(f"/proc/{pid}") for pid in loaders) and time.monotonic() < deadline:
        time.sleep(0.1)
    saves = [p for p in out.iterdir() if p.is_dir()]
    assert len(saves) == 1, list(out.iterdir())
    meta = json.loads((saves[0] / "meta.json").read_text())
    assert meta["complete"] is False and meta["end_reason"].startswith("cut short"), meta
    report = innostall("report", str(saves[0]))
    assert report.returncode == 0 and "cut short" in report.stdout, report.stderr
    assert_no_probe_left(srv.pid, offsets)


def snapshot_times(out) -> list[tuple[str, int]]:
    with open(out / "journal.jsonl") as journal:
        return [(r["type"], r["mono_ns"]) for r in map(json.loads, journal)
                if r.get("type") in ("interval", "final")]


def test_a_ctrl_c_just_after_a_snapshot_leaves_no_sliver_of_an_interval(servers, tmp_path):
    """The loader takes its final snapshot at least 5 ms after the last interval's: a report
    prints times to the millisecond, and a final interval of a fraction of one would print
    the end of the interval before it. Intervals of 10 ms and a Ctrl-C aimed 1 ms after a
    snapshot: without the wait, most of these finals came within a few ms."""
    srv = servers(SERVER)
    gaps = []
    for attempt in range(3):
        out = tmp_path / f"rec{attempt}"
        proc, _ = start_recording(srv.pid, out, "--duration", "60", "--interval", "0.01")
        wait_for_intervals(out, 5)
        last = snapshot_times(out)[-1][1]
        time.sleep(max(0.0, (last + 1_000_000 - time.monotonic_ns()) % 10_000_000 / 1e9))
        proc.send_signal(signal.SIGINT)
        err, _ = ended(proc)
        assert proc.returncode == 0, err
        times = snapshot_times(out)
        assert times[-1][0] == "final" and times[-2][0] == "interval", times[-3:]
        gaps.append((times[-1][1] - times[-2][1]) / 1e6)
    print(f"final snapshot after the last interval's: {gaps} ms")
    assert min(gaps) >= 5, gaps
