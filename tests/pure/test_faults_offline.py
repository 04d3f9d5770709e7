"""Faults and bad input, as an adversarial user would cause them: each gives one line and
the right exit code, never a traceback; leaves no probe in the server (the probed
instruction is back, read in /proc/PID/mem); and keeps what was recorded readable, with a
truthful end in meta.json and the report."""
from __future__ import annotations

import json
import os

import pytest

import recordings
from cli_output import one_line
from conftest import innostall


@pytest.mark.parametrize("args", [
    ["--duration", "nan"], ["--duration", "inf"], ["--duration", "1e-9"],
    ["--interval", "nan"], ["--interval", "0.001"], ["--duration", "-1"],
    ["--max-size", ""], ["--max-size", "1k"], ["--max-size", "lots"], ["--max-size", "infG"],
])
def test_bad_numbers_are_refused_before_anything_is_created(tmp_path, args):
    out = tmp_path / "rec"
    result = innostall("record", "--pid", str(os.getpid()), *args, "-o", str(out))
    assert result.returncode == 2 and "usage:" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


@pytest.mark.heavy  # runs `innostall record` as its own process, twice a case: ~0.65 s of CPU a case
@pytest.mark.parametrize("addr", ["0.0.0.0", "::", "192.0.2.7"])
def test_metrics_on_an_address_other_hosts_reach_must_be_asked_for(tmp_path, addr):
    """The endpoint has no authentication: only loopback unless --metrics-expose says so."""
    args = ["record", "--pid", "999999999", "--metrics-port", "9599", "--metrics-addr", addr,
            "-o", str(tmp_path / "rec")]
    refused = innostall(*args)
    assert refused.returncode == 1 and "add --metrics-expose if that is meant" in one_line(refused)
    asked = innostall(*args, "--metrics-expose")  # then on to the next check: no such process
    assert asked.returncode == 1 and "metrics" not in one_line(asked)
    assert not (tmp_path / "rec").exists()


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
