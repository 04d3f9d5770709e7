"""Live Prometheus metrics while recording: the HTTP endpoint scraped during a real recording
and the node_exporter textfile after it, both parsed with prometheus_client's own text
parser, and their values checked against the recording they came from."""
from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

from conftest import INNOSTALL, stop_load
from innostall.analysis import recording, summary
from innostall.analysis.histogram import slot_bounds
from innostall.collector.discovery import discover, target
from prometheus_text import parse, value
from recordings import record_at_once


SERVER = "mariadb-11.4.5"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_against(families: dict, rec, upto_interval: int) -> None:
    """Every value the exporter gave at one snapshot is the recording's own, summed to it."""
    counters = rec.counters[rec.counters["interval"] <= upto_interval]
    totals = counters.groupby("name", observed=True)["value"].sum()
    now = counters[counters["interval"] == upto_interval].set_index("name")["value"]
    assert value(families, "innostall_innodb_purge_batches", "innostall_innodb_purge_batches_total") \
        == totals["purge_batches"]
    assert value(families, "innostall_innodb_purge_pages", "innostall_innodb_purge_pages_total") \
        == totals["purge_pages"]
    assert value(families, "innostall_innodb_purge_batch_seconds", "innostall_innodb_purge_batch_seconds_total") \
        == pytest.approx(totals["purge_batch_ns"] / 1e9)
    assert value(families, "innostall_innodb_history_length") == now["history_length"]  # gauges
    assert value(families, "innostall_innodb_history_length_peak") == now["history_length_peak"]
    hists = rec.hists[(rec.hists["interval"] <= upto_interval) & (rec.hists["name"] == "purge_batch_latency")]
    slots = hists.groupby("slot")["count"].sum()
    buckets = {float(dict(labels)["le"]): v for (name, labels), v in
               families["innostall_innodb_purge_batch_latency_seconds"].items() if name.endswith("_bucket")}
    assert buckets[float("inf")] == slots.sum()
    # A batch goes into the histogram just before its count (purge.bpf.c), and the loader
    # reads the counters just before the histograms: a batch that ended between the two
    # reads is in this snapshot's histogram and the next one's count, never the other way.
    # The final snapshot is read after the probes are detached, so there they are equal.
    batches = rec.counters[rec.counters["name"] == "purge_batches"]
    counted_by_next = batches[batches["interval"] <= upto_interval + 1]["value"].sum()
    assert totals["purge_batches"] <= slots.sum() <= counted_by_next
    if upto_interval == rec.counters["interval"].max():
        assert slots.sum() == totals["purge_batches"]
    for slot in slots.index:  # cumulative: all slots up to this one, at its upper bound in seconds
        bound = slot_bounds(int(slot))[1] * 1e-6
        le = min(b for b in buckets if b >= bound * (1 - 1e-9))
        assert buckets[le] == slots[slots.index <= slot].sum()
    assert value(families, "innostall_innodb_purge_batch_latency_seconds",
                 "innostall_innodb_purge_batch_latency_seconds_count") == slots.sum()


def test_endpoint_and_textfile_carry_the_recordings_numbers(servers, tmp_path):
    srv = servers(SERVER)
    tgt = target.from_pid(srv.pid)
    probes = discover.resolve(tgt, discover.select("default"))
    port, textfile = free_port(), tmp_path / "innostall.prom"
    scrapes, done = [], threading.Event()

    def scrape():
        while not done.is_set():
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    scrapes.append(r.read().decode())
            time.sleep(0.4)

    load = srv.sysbench("oltp_update_non_index", 10, "--threads=2")
    scraper = threading.Thread(target=scrape, daemon=True)
    try:
        time.sleep(1)
        scraper.start()
        record_at_once(tgt, probes, str(tmp_path / "rec"), duration_s=5,
                       metrics={"port": port, "addr": "127.0.0.1", "textfile": str(textfile)})
    finally:
        done.set()
        stop_load(load)
    scraper.join(timeout=5)
    rec = recording.load(str(tmp_path / "rec"))
    t_s = rec.counters.groupby("interval")["t_s"].first()

    live = [parse(text) for text in scrapes]
    live = [f for f in live if "innostall_recording_elapsed_seconds" in f]
    elapsed = sorted({value(f, "innostall_recording_elapsed_seconds") for f in live})
    print(f"{len(scrapes)} scrapes, snapshots seen at {elapsed} s; "
          f"{rec.counter_total('purge_batches')} batches in {rec.duration_s:.1f} s")
    assert len(elapsed) >= 3  # it moved with the recording
    for families in live:
        at = value(families, "innostall_recording_elapsed_seconds")
        interval, = t_s.index[abs(t_s - at) < 1e-6]
        check_against(families, rec, interval)
        assert value(families, "innostall_recording_info", host=rec.meta["host"], server="mariadb",
                     version="11.4.5", pid=str(srv.pid)) == 1
    final = parse(textfile.read_text())  # the final snapshot: the whole recording
    assert value(final, "innostall_recording_elapsed_seconds") == pytest.approx(rec.duration_s)
    check_against(final, rec, int(t_s.index.max()))
    told = summary.summary(rec)["purge"]  # what the report says of the whole recording
    assert value(final, "innostall_innodb_purge_batches", "innostall_innodb_purge_batches_total") == told["batches"] > 0
    assert value(final, "innostall_innodb_purge_pages", "innostall_innodb_purge_pages_total") == told["pages"]
    hits = final["innostall_probe_hits"]
    assert hits[("innostall_probe_hits_total", (("probe", "purge_batch"),))] \
        == rec.counter_total("hits.purge_batch") > 0
    assert not list(tmp_path.glob("*.tmp"))  # written by rename only


def test_an_exporter_that_cannot_serve_or_write_is_a_warning(servers, tmp_path):
    srv = servers(SERVER)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    gone = tmp_path / "gone"
    gone.mkdir()
    textfile = gone / "innostall.prom"
    try:
        run = subprocess.Popen(INNOSTALL + ["record", "--pid", str(srv.pid), "--duration", "4", "--no-sql",
                                            "--metrics-port", str(port),
                                            "--metrics-textfile", str(textfile), "-o", str(tmp_path / "rec")],
                               stderr=subprocess.PIPE, text=True)
        for _ in range(200):  # the first interval written: the exporter works until now
            if textfile.exists():
                break
            time.sleep(0.1)
        assert textfile.exists()
        # root may write anywhere: take the directory away instead
        subprocess.run(["rm", "-rf", str(gone)], check=True)
        _, stderr = run.communicate(timeout=60)
    finally:
        busy.close()
    assert run.returncode == 0, stderr
    warnings = [line for line in stderr.splitlines() if line.startswith("innostall: metrics:")]
    assert any(f"cannot serve on 127.0.0.1:{port} (Address already in use)" in w for w in warnings)
    assert any(f"cannot write {textfile}" in w for w in warnings)
    assert len(warnings) == 2  # each said once, not every interval
    assert recording.load(str(tmp_path / "rec")).counter_total("purge_batches") >= 0
