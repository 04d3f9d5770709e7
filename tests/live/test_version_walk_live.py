"""MVCC version walks against ground truth: a REPEATABLE READ snapshot is opened, then another
connection updates one row exactly N times. When the snapshot reads that row, InnoDB must
build exactly N older versions to reach the one its view sees, so the walk depth is known
in advance. The open snapshot also keeps purge away from those N versions."""
from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from conftest import INNOSTALL, REPO, innostall
from innostall.analysis import recording, summary
from innostall.collector.discovery import discover, target
from innostall.collector.recorder import recorder
from innostall.format import journal as fmt
from procmem import INT3, code_byte, file_byte
from test_record_purge import wait_until_purge_idle


SERVERS = ["mariadb-11.4.5", "mysql-8.0.15", "mariadb-10.2.11", "mysql-9.7.4", "mariadb-10.11.5",
           "mariadb-10.4.6"]
DEEP_ROW, DEEP = 7, 300  # updated DEEP times after the snapshot: one deep walk
SHALLOW_ROW, SHALLOW = 8, 5  # a walk below the deep-walk threshold
READ_K = "SELECT k FROM sbtest1 FORCE INDEX (PRIMARY) WHERE id = %s"


def query_one(conn, sql, *args):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchone()[0]


def open_snapshot(conn) -> dict[int, int]:
    with conn.cursor() as cur:
        cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
    query_one(conn, "SELECT c FROM sbtest1 WHERE id = %s", DEEP_ROW)  # the view is in use
    return {row: query_one(conn, READ_K, row) for row in (DEEP_ROW, SHALLOW_ROW)}


def update_rows(conn) -> None:
    with conn.cursor() as cur:
        for row, times in ((DEEP_ROW, DEEP), (SHALLOW_ROW, SHALLOW)):
            for _ in range(times):
                cur.execute("UPDATE sbtest1 SET k = k + 1 WHERE id = %s", (row,))


def walk_probes(pid: int):
    tgt = target.from_pid(pid)
    probes = discover.resolve(tgt, ["version_walk", "version_step"])
    assert all(p.ok for p in probes), [p.reason for p in probes]
    return tgt, probes


@pytest.mark.parametrize("server_name", SERVERS)
def test_walk_depth_is_the_number_of_updates_since_the_snapshot(servers, server_name, tmp_path):
    srv = servers(server_name)
    tgt, probes = walk_probes(srv.pid)
    originals = [file_byte(tgt.path, p.offset) for p in probes]
    reader, writer, plain = srv.connect(), srv.connect(), srv.connect()
    before = open_snapshot(reader)
    update_rows(writer)
    seen = {}

    def on_event(snapshot):
        if snapshot["type"] != "attached":
            return
        seen["code"] = [code_byte(srv.pid, p.offset) for p in probes]
        seen["snapshot"] = {row: query_one(reader, READ_K, row) for row in before}
        seen["latest"] = [query_one(plain, READ_K, DEEP_ROW) for _ in range(3)]  # no snapshot

    try:
        recorder.record(tgt, probes, str(tmp_path / "rec"), duration_s=6, on_event=on_event)
    finally:
        reader.rollback()
    rec = recording.load(str(tmp_path / "rec"))
    walks = summary.summary(rec)["version_walk"]
    print(f"{server_name}: {walks}\n{rec.walks.to_string()}")

    # the snapshot saw the old values, so the versions were there to build
    assert seen["snapshot"] == before
    assert seen["latest"] == [before[DEEP_ROW] + DEEP] * 3
    # exactly the two snapshot reads built versions; the plain reads built none
    assert walks["reads"] == 2 and walks["versions"] == DEEP + SHALLOW
    assert walks["max_depth"] == DEEP
    assert walks["reads_without_versions"] == 0  # the walk always builds one: none went unseen
    depth = rec.hist("version_walk_depth")
    assert depth[depth > 0].to_dict() == {DEEP.bit_length() - 1: 1, SHALLOW.bit_length() - 1: 1}
    assert rec.hist("version_walk_latency").sum() == 2
    # one deep walk, with the stack of the read that made it
    assert walks["deep_walks"] == 1 and rec.counter_total("drops") == 0
    walk, = rec.walks.itertuples()
    assert walk.depth == DEEP and 0 < walk.latency_us < 6e6
    frames = walk.stack.split(";")
    assert any(f.startswith(("row_search_mvcc", "row_search_for_mysql")) for f in frames)
    assert any(f.startswith("ha_innobase::") for f in frames)
    # the probes were in the code while recording and are gone now
    assert seen["code"] == [INT3, INT3] and originals != [INT3, INT3]
    assert [code_byte(srv.pid, p.offset) for p in probes] == originals
    assert srv.serves()


def wait_for(path, kind, count, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if sum(json.loads(l)["type"] == kind for l in lines if l.endswith("}")) >= count:
            return
        time.sleep(0.1)
    raise TimeoutError(f"fewer than {count} '{kind}' lines in {path}")


def test_killed_recording_keeps_its_deep_walks(servers, tmp_path):
    """The CLI's --deep-walk-threshold reaches the kernel (both walks are deep at 4), and the
    journal keeps the symbolized walks when the recorder dies by SIGKILL. The reads come after
    the second interval, under the default budget of an idle server: its floor keeps them whole."""
    srv = servers("mariadb-11.4.5")
    tgt, probes = walk_probes(srv.pid)
    reader, writer = srv.connect(), srv.connect()
    before = open_snapshot(reader)
    update_rows(writer)
    wait_until_purge_idle(srv, writer)  # idle means idle: no purge left from earlier tests
    out = tmp_path / "rec"
    cli = subprocess.Popen(INNOSTALL + ["record", "--pid", str(srv.pid), "-o", str(out),
                                        "--deep-walk-threshold", "4"], stderr=subprocess.DEVNULL)
    try:
        wait_for(out / fmt.JOURNAL, "interval", 2)
        assert {row: query_one(reader, READ_K, row) for row in before} == before
        wait_for(out / fmt.JOURNAL, "deep_walk", 2)
    finally:
        cli.send_signal(signal.SIGKILL)
        cli.wait()
        reader.rollback()
    deadline = time.monotonic() + 10
    while any(code_byte(srv.pid, p.offset) == INT3 for p in probes) and time.monotonic() < deadline:
        time.sleep(0.1)  # the loader goes by PR_SET_PDEATHSIG
    assert [code_byte(srv.pid, p.offset) for p in probes] == \
        [file_byte(tgt.path, p.offset) for p in probes]
    rec = recording.load(str(out))
    assert not rec.meta["complete"] and rec.meta["settings"]["deep_walk_threshold"] == 4
    assert sorted(rec.walks["depth"]) == [SHALLOW, DEEP]
    assert all("row_search_mvcc" in stack for stack in rec.walks["stack"])
    text = innostall("report", out).stdout
    assert "2 read(s) walked >= 4 row versions; the deepest walked 300" in text
    assert "reckoned on a quarter of a CPU: the server used less" in text


def test_bad_threshold_is_one_line(tmp_path):
    binary = REPO / "build" / "fixtures" / "mariadb-11.4.5" / "dist" / "bin" / "mariadbd"
    if not binary.exists():
        pytest.skip("fixture server not fetched")
    result = subprocess.run(INNOSTALL + ["record", "--binary", str(binary), "-o", str(tmp_path / "r"),
                                         "--deep-walk-threshold", "0"], capture_output=True, text=True)
    assert result.returncode == 1 and result.stderr == \
        "innostall: --deep-walk-threshold must be at least 1 (versions)\n"
    assert not (tmp_path / "r").exists()
