"""A probe found by its function's plain name where the catalog's symbols miss
(collector/discovery/plain_name.py), attached and counting on a real server: on MariaDB
10.4.6 buf_page_get_gen takes a page_id_t by value and a zip size, not the references the
catalog's 10.2-10.4 symbol names, so purge_undo_fetch is found under that other signature
(its program reads no register, so the parameter list does not matter to it).

Ground truth, the server's own counters over a window inside the recording's (read after the
attach, before the detach), with purge idle (no batch for 2 s) at both ends:
 - every undo page a purge batch handled (INNODB_METRICS purge_undo_log_pages) was fetched
   by buf_page_get_gen inside that batch, which the purge_batch probe spans: a lower bound;
 - every buf_page_get_gen call adds one to the pool's page gets (buffer_pool_read_requests,
   which the few other page-get paths add to as well): an upper bound."""
from __future__ import annotations

import threading
import time

from procmem import stop_own_recording
from innostall.analysis import recording
from innostall.collector.discovery import discover, target
from innostall.collector.recorder import recorder

SERVER = "mariadb-10.4.6"
PROBES = ["purge_batch", "purge_worker", "purge_undo_fetch"]


def wait_for_idle_purge(srv, conn, timeout_s: float = 120) -> None:
    """Until no purge batch ran for 2 s and the history stayed put. MariaDB 10.4 leaves a few
    dozen logs in the history when idle (37 on the fixture), so not until it is empty."""
    deadline = time.monotonic() + timeout_s
    last, still = None, 0
    while still < 2:
        assert time.monotonic() < deadline, "purge did not go idle"
        now = (srv.metric(conn, "purge_invoked"), srv.metric(conn, "trx_rseg_history_len"))
        still, last = (still + 1 if now == last else 0), now
        time.sleep(1)


def test_purge_undo_fetch_found_under_another_signature_counts_purges_page_gets(servers, tmp_path):
    srv = servers(SERVER)
    tgt = target.from_pid(srv.pid)
    probes = discover.resolve(tgt, PROBES)
    assert all(p.ok for p in probes), [p.reason for p in probes if not p.ok]
    fetch = probes[-1]
    assert fetch.found_by == "by its name under another signature"
    assert fetch.symbol.name == "_Z16buf_page_get_gen9page_id_tmmP11buf_block_tmPKcjP5mtr_tP7dberr_t"
    seen = {}

    def counts(conn) -> tuple[int, int]:
        return srv.metric(conn, "purge_undo_log_pages"), srv.metric(conn, "buffer_pool_read_requests")

    def load_then_stop():
        try:
            with srv.connect() as conn:
                wait_for_idle_purge(srv, conn)
                seen["start"] = counts(conn)
                load = srv.sysbench("oltp_update_non_index", 6, "--threads=4", "--rand-type=uniform")
                assert load.wait(timeout=60) == 0, load.stderr.read()
                wait_for_idle_purge(srv, conn)
                seen["end"] = counts(conn)
        finally:
            stop_own_recording()

    def on_event(snap):
        if snap["type"] == "attached":
            seen["load"] = threading.Thread(target=load_then_stop)
            seen["load"].start()

    with srv.connect() as conn:
        wait_for_idle_purge(srv, conn)  # no batch runs across the attach
    recorder.record(tgt, probes, str(tmp_path / "rec"), duration_s=180, on_event=on_event, budget_pct=None)
    seen["load"].join()
    pages, gets = (end - start for start, end in zip(seen["start"], seen["end"]))
    ours = recording.load(str(tmp_path / "rec")).counter_total("undo_fetches_purge")
    print(f"{SERVER}: purge's page gets {ours}; server: undo pages purged {pages}, page gets {gets}")
    assert pages > 10
    assert pages <= ours <= gets
