"""Live Prometheus metrics while recording: the HTTP endpoint scraped during a real recording
and the node_exporter textfile after it, both parsed with prometheus_client's own text
parser, and their values checked against the recording they came from."""
from __future__ import annotations

import subprocess

import pytest

import recordings
from conftest import INNOSTALL
from innostall.collector.loader import loader
from innostall.collector.recorder.live_metrics import LiveMetrics
from prometheus_text import parse, value


@pytest.mark.heavy  # runs `innostall record` as its own process, three times
def test_bad_metrics_options_are_one_line(tmp_path):
    for args, message in [(["--metrics-textfile", str(tmp_path / "x.txt")], "must end in .prom"),
                          (["--metrics-textfile", str(tmp_path / "no" / "x.prom")], "no such directory"),
                          (["--metrics-port", "70000"], "not a port number")]:
        done = subprocess.run(INNOSTALL + ["record", "--pid", "1", *args, "-o", str(tmp_path / "rec")],
                              capture_output=True, text=True)
        assert done.returncode != 0 and message in done.stderr and "Traceback" not in done.stderr
        assert not (tmp_path / "rec").exists()


def test_exposition_of_a_journal_parses_and_matches_it():
    """Root-free: the synthetic journal fed line by line, as the recorder does."""
    records = recordings.synthetic_journal(6, walks=True, latches=True)
    exporter = LiveMetrics(loader.schema(), {"host": "h", "server": "mariadb", "version": "11.4.5", "pid": "1"})
    for line in records:
        exporter.update(line)
    from prometheus_client import generate_latest
    families = parse(generate_latest(exporter.registry).decode())
    last = records[-1]
    assert value(families, "innostall_innodb_purge_batches", "innostall_innodb_purge_batches_total") \
        == last["counters"]["purge_batches"]
    assert value(families, "innostall_innodb_block_wait_seconds", "innostall_innodb_block_wait_seconds_total") \
        == pytest.approx(last["counters"]["block_wait_ns"] / 1e9)
    depth = families["innostall_innodb_version_walk_depth"]  # versions, not a time: le in versions
    assert depth[("innostall_innodb_version_walk_depth_bucket", (("le", "+Inf"),))] \
        == sum(last["hists"]["version_walk_depth"])
    assert ("innostall_innodb_version_walk_depth_bucket", (("le", "255"),)) in depth


def test_the_servers_state_is_exposed_as_gauges():
    records = recordings.synthetic_journal(3, walks=False)
    records[-1]["server"] = {"lsn": 5000, "checkpoint_lsn": 3000, "dirty_pages": 7, "history": 12}
    exporter = LiveMetrics(loader.schema(), {"host": "h", "server": "mariadb", "version": "11.4.5", "pid": "1"})
    for line in records:
        exporter.update(line)
    from prometheus_client import generate_latest
    families = parse(generate_latest(exporter.registry).decode())
    assert value(families, "innostall_innodb_lsn_bytes") == 5000
    assert value(families, "innostall_innodb_checkpoint_age_bytes") == 2000
    assert value(families, "innostall_innodb_buffer_pool_dirty_pages") == 7
    assert value(families, "innostall_innodb_history_length_read") == 12
