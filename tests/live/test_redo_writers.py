"""Who writes the redo (probes/redo.bpf.c, `record --probes default,redo_write,purge_task`),
against what the server says and what the test makes happen:

- the mini-transactions' bytes over the recording are the LSN's growth the server printed
  around it (SHOW ENGINE INNODB STATUS), once the log blocks' framing is counted: the LSN
  grows 512/496 times as fast where the log is cut into 512-byte blocks with 16 bytes of
  header and trailer (MySQL, MariaDB before 10.8), as fast in MariaDB 10.8's format; within
  2%, the load being inside the recording and the server otherwise idle;
- while a snapshot pins purge under a write load, purge writes none of it (at most 1%: its
  batches find nothing to purge);
- once the load has stopped and the snapshot commits, purge writes nearly all of it (at
  least 90%; what else runs then, the master thread, the statistics and the one row update
  that wakes purge, writes a few KB). MySQL's purge coordinator, its batches having found
  nothing to purge while pinned, sleeps up to 10 s unless woken: by a commit that adds to a
  history longer than its threads times its batch size, or by the master thread's round
  after a second of activity. The snapshot's rollback is neither (it wrote no undo), and on
  a slow machine the recording once ended with purge still asleep; one single-row update
  wakes it, as the load would on a live server. The catch-up is over when purge has
  purged that update: the server's "Purge done for trx's n:o < N" passes the trx id
  counter read just before it (each commit's number is drawn from that counter after its
  id, and purge goes in their order), and purge is idle again, and the LSN has then held
  still for 2 s: that number is how far purge has read, and purge frees the undo logs it
  purged at a later wake (10.2.11's 481 KB came a second after both, and a fresh root's
  catch-up window held none of it without the LSN's wait). The history list length is no
  measure of it: MySQL, and MariaDB before MDEV-32050 (10.6.16, 10.11.6), shorten it only
  when purge truncates its rollback segments, every innodb_purge_rseg_truncate_frequency
  (128) batches, so a purged history of 4,721 stays 4,721 for 3 s on 8.0.15, and a CI run
  read 3,160 of 4,059 left 25 s after the commit;
- where the server's LSN is read from its memory, the report's redo is its growth, within 2%;
- the redo the report gives user connections (each thread's role from the stack of its
  first write), with the I/O completion threads', is the LSN's growth while the load ran,
  within 5% (the master thread and the statistics write a few KB meanwhile, and the wake-up
  update a few hundred bytes). The I/O threads' part is the load's too: MariaDB 10.2 and
  MySQL buffer changes to secondary-index pages not in the pool and merge them when a read
  brings the page in, in the thread that completes the read (in a fresh root, 180,707 of
  10.2.11's 3.6 MB, with cold pages; next to nothing on a warm machine).

The load updates an indexed column (oltp_update_index), so that purge has index entries to
remove, not only undo logs to free."""
from __future__ import annotations

import re
import signal
import subprocess
import time

import pytest

from conftest import INNOSTALL, stop_load
from innostall.analysis import recording, summary
from innostall.analysis.timeline import per_interval
from polling import settled
from test_record_purge import wait_for_line

SERVERS = ["mariadb-11.4.5", "mariadb-10.2.11", "mysql-8.0.15", "mysql-9.7.4"]
BLOCK_FRAMED = {"mariadb-10.2.11", "mysql-8.0.15", "mysql-9.7.4"}  # 512-byte blocks, 496 of data
PROBES = "default,redo_write,purge_task"
WAKE_S = 12  # MySQL's purge coordinator, finding nothing, sleeps up to 10 s


def innodb_status(conn) -> tuple[int, int, int, bool]:
    """(LSN, trx id counter, purged below, purge idle) as the server prints them."""
    with conn.cursor() as cur:
        cur.execute("SHOW ENGINE INNODB STATUS")
        text = cur.fetchone()[2]
    return (int(re.search(r"Log sequence number\s+(\d+)", text)[1]),
            int(re.search(r"Trx id counter\s+(\d+)", text)[1]),
            int(re.search(r"Purge done for trx's n:o < (\d+)", text)[1]),
            bool(re.search(r"Purge done for .* state: running but idle", text)))


@pytest.mark.parametrize("server_name", SERVERS)
def test_redo_by_writer_against_the_lsn_and_the_load(servers, server_name, tmp_path):
    srv = servers(server_name)
    conn, out = srv.connect(), tmp_path / "rec"
    record = subprocess.Popen(INNOSTALL + ["record", "--pid", str(srv.pid), "--probes", PROBES, "--exact",
                                           "--duration", "120", "-o", str(out)], stderr=subprocess.PIPE, text=True)
    wait_for_line(out / "journal.jsonl", "interval")  # the first snapshot: the server's LSN read once
    start_lsn = innodb_status(conn)[0]
    snapshot = srv.connect()
    snapshot.autocommit(False)
    with snapshot.cursor() as cur:
        cur.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        cur.execute("SELECT COUNT(*) FROM sbtest1")
    pinned_from = time.time()
    load_start_lsn = innodb_status(conn)[0]
    load = srv.sysbench("oltp_update_index", 4, "--threads=4")
    try:
        load.wait(timeout=30)
    finally:
        stop_load(load)
    pinned_to = time.time()
    load_lsn = (innodb_status(conn)[0] - load_start_lsn) / (512 / 496 if server_name in BLOCK_FRAMED else 1)
    time.sleep(1.5)
    snapshot.rollback()
    committed = time.time()
    counter = innodb_status(conn)[1]
    with conn.cursor() as cur:
        cur.execute("UPDATE sbtest1 SET k = k + 1 WHERE id = 1")
    # purge may first finish its sleep of up to 10 s, then reads on past the update, then
    # purges what it read and sleeps again
    (_, _, purged_below, idle), _ = settled(lambda: innodb_status(conn), quiet_s=WAKE_S, timeout_s=25,
                                            done=lambda status: status[2] > counter and status[3])
    # and frees the undo logs it purged at a later wake (MariaDB 10.2.11: the master
    # thread's, a second on, the most of purge's redo there): over once the LSN holds still
    settled(lambda: innodb_status(conn)[0], quiet_s=2, timeout_s=10)
    drained = time.time()
    time.sleep(1.5)  # the interval that holds the end of the catch-up, written whole
    record.send_signal(signal.SIGINT)
    assert record.wait(timeout=60) == 0, record.stderr.read()
    assert purged_below > counter and idle, \
        f"purge read to trx n:o {purged_below} ({'idle' if idle else 'running'}), not past the update after {counter}"
    end_lsn = innodb_status(conn)[0]

    rec = recording.load(str(out))
    attach = rec.meta["start_real_ns"] / 1e9
    table = per_interval(rec, ["redo_bytes", "redo_bytes_purge_coordinator", "redo_bytes_purge_workers"])
    table["purge"] = table["redo_bytes_purge_coordinator"] + table["redo_bytes_purge_workers"]
    grown = (end_lsn - start_lsn) / (512 / 496 if server_name in BLOCK_FRAMED else 1)
    pinned = table[(table.index > pinned_from - attach + 1) & (table.index <= pinned_to - attach)]
    caught_up = table[(table.index > committed - attach) & (table.index <= drained - attach + 1)]
    print(f"{server_name}: {table['redo_bytes'].sum():,} bytes written by mini-transactions, the LSN's growth "
          f"unframed {grown:,.0f}; purge wrote {pinned['purge'].sum():,} of {pinned['redo_bytes'].sum():,} while "
          f"pinned, {caught_up['purge'].sum():,} of {caught_up['redo_bytes'].sum():,} catching up")
    assert grown > 1 << 20, "the load wrote too little redo to compare"
    assert abs(table["redo_bytes"].sum() - grown) <= 0.02 * grown
    assert len(pinned) >= 2 and pinned["purge"].sum() <= 0.01 * pinned["redo_bytes"].sum()
    assert caught_up["redo_bytes"].sum() > 0 and caught_up["purge"].sum() >= 0.9 * caught_up["redo_bytes"].sum()
    # where the LSN is read from the server's memory (builds with DWARF), the report's total
    # is its growth from the first snapshot on, which the idle start leaves unmoved
    told = summary.summary(rec)["redo"]
    users = told["by_role"].get("user connection", 0) + told["by_role"].get("I/O completion", 0)
    print(f"{server_name}: by role {told['by_role']}; the load's LSN growth unframed {load_lsn:,.0f}")
    assert abs(users - load_lsn) <= 0.05 * load_lsn
    if told["bytes"] is not None:
        assert abs(told["bytes"] - (end_lsn - start_lsn)) <= 0.02 * (end_lsn - start_lsn), told
