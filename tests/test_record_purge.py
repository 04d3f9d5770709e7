"""End to end on real servers under real load: trx_purge batches seen by our uprobes agree
with the server's own purge_invoked counter, and nothing stays attached afterwards."""
from __future__ import annotations

import json
import math
import signal
import subprocess
import time

import pytest

from conftest import INNOSTALL, stop_load
from innostall.analysis import recording
from innostall.analysis.histogram import slot_bounds
from innostall.collector import discover, recorder, target
from procmem import INT3, code_byte, file_byte

SERVERS = ["mariadb-11.4.5", "mysql-8.0.15", "mysql-9.7.4"]


def batch_tolerance(batches: int, duration_s: float, edge_gaps_s: float) -> int:
    """purge_invoked is incremented as trx_purge's last statement, once per call, and our
    count is taken at its return, so both count the same events. They differ only at the
    window edges: batches ending between our snapshot and the server-counter read that
    follows it (at attach, and at the final snapshot), plus the batch in flight at each
    edge. Both gaps are measured on CLOCK_MONOTONIC; at the observed batch rate they admit
    rate x gaps batches, plus one in flight per edge."""
    return math.ceil(batches / duration_s * edge_gaps_s) + 2


def resolved_purge_probe(pid: int):
    tgt = target.from_pid(pid)
    probe, = discover.resolve(tgt, ["purge_batch"])
    assert probe.ok, probe.reason
    return tgt, probe


@pytest.mark.parametrize("server_name", SERVERS)
def test_purge_batches_agree_with_server_counter(servers, server_name, tmp_path):
    srv = servers(server_name)
    tgt, probe = resolved_purge_probe(srv.pid)
    original = file_byte(tgt.path, probe.offset)
    conn = srv.connect()
    seen = {}

    def on_event(snapshot):
        kind = snapshot["type"]
        seen[kind] = srv.metric(conn, "purge_invoked")
        seen[kind + "_pages"] = srv.metric(conn, "purge_undo_log_pages")
        seen[kind + "_gap_s"] = (time.monotonic_ns() - snapshot["mono_ns"]) / 1e9
        seen[kind + "_code"] = code_byte(srv.pid, probe.offset)

    load = srv.sysbench("oltp_update_non_index", 40, "--threads=4")
    try:
        time.sleep(3)  # let history accumulate so purge has work
        records, = discover.resolve(tgt, ["purge_record"])
        recorder.record(tgt, [probe, records], str(tmp_path / "rec"), duration_s=10,
                        on_event=on_event)
    finally:
        stop_load(load)

    rec = recording.load(str(tmp_path / "rec"))
    ours = rec.counter_total("purge_batches")
    theirs = seen["final"] - seen["attached"]
    gaps = seen["attached_gap_s"] + seen["final_gap_s"]
    tolerance = batch_tolerance(ours, rec.duration_s, gaps)
    print(f"{server_name}: innostall {ours} batches, purge_invoked {theirs}, "
          f"pages {rec.counter_total('purge_pages')} vs {seen['final_pages'] - seen['attached_pages']}, edge gaps {gaps * 1000:.1f} ms, "
          f"tolerance {tolerance}")
    assert ours > 0
    assert tolerance <= max(3, ours // 50), "edges too slow for a meaningful comparison"
    assert abs(ours - theirs) <= tolerance
    # purge_undo_log_pages adds trx_purge's return value, which is what we sum: each batch
    # outside the common window moves it by at most the largest batch seen
    their_pages = seen["final_pages"] - seen["attached_pages"]
    largest_batch = slot_bounds(int(rec.hist("purge_batch_pages").index.max()))[1]
    assert abs(rec.counter_total("purge_pages") - their_pages) <= tolerance * largest_batch
    assert rec.hist("purge_batch_latency").sum() == ours
    # records handed to purge: counted per record, and per batch in their own histogram
    assert rec.counter_total("purge_records") > 0
    assert rec.hist("purge_batch_records").sum() == ours
    # the probe was really in the code while recording, and is gone now
    assert seen["attached_code"] == INT3 != original
    assert code_byte(srv.pid, probe.offset) == original
    assert srv.serves()


def wait_for_line(path, kind, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and any(json.loads(l)["type"] == kind
                                 for l in path.read_text().splitlines() if l.endswith("}")):
            return
        time.sleep(0.1)
    raise TimeoutError(f"no '{kind}' line in {path}")


def loader_running(pid: int) -> bool:
    result = subprocess.run(["pgrep", "-f", f"innostall-loader.*--pid {pid}"], capture_output=True)
    return result.returncode == 0


def test_ctrl_c_ends_recording_and_detaches(servers, tmp_path):
    srv = servers("mariadb-11.4.5")
    tgt, probe = resolved_purge_probe(srv.pid)
    out = tmp_path / "rec"
    cli = subprocess.Popen(INNOSTALL + ["record", "--pid", str(srv.pid), "-o", str(out)],
                           stderr=subprocess.PIPE, text=True)
    wait_for_line(out / "journal.jsonl", "interval")
    assert code_byte(srv.pid, probe.offset) == INT3
    cli.send_signal(signal.SIGINT)
    assert cli.wait(timeout=30) == 0, cli.stderr.read()
    meta = json.loads((out / "meta.json").read_text())
    assert meta["complete"] and meta["end_reason"] == "signal"
    assert code_byte(srv.pid, probe.offset) == file_byte(tgt.path, probe.offset)
    report = subprocess.run(INNOSTALL + ["report", str(out)], capture_output=True, text=True)
    assert report.returncode == 0 and "Purge batch latency" in report.stdout
    assert srv.serves()


def test_killed_recorder_leaves_no_probe_and_a_readable_recording(servers, tmp_path):
    srv = servers("mariadb-11.4.5")
    tgt, probe = resolved_purge_probe(srv.pid)
    out = tmp_path / "rec"
    cli = subprocess.Popen(INNOSTALL + ["record", "--pid", str(srv.pid), "-o", str(out)],
                           stderr=subprocess.DEVNULL)
    wait_for_line(out / "journal.jsonl", "interval")
    cli.kill()  # SIGKILL: no chance to clean up; the loader must go by itself
    cli.wait()
    deadline = time.monotonic() + 10
    while loader_running(srv.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not loader_running(srv.pid)
    assert code_byte(srv.pid, probe.offset) == file_byte(tgt.path, probe.offset)
    rec = recording.load(str(out))
    assert not rec.meta["complete"] and len(rec.counters) > 0
    assert srv.serves()
