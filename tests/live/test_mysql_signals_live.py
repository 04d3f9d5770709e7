"""On a MySQL build without DWARF the history signal is read still (collector/server/signals.py
code_words): the history's word, through trx_sys at the offset the build's code confirms,
read by the loader ten times a second.

MySQL 8.0.15 under the long-snapshot scenario: updates at a fixed rate, a consistent
snapshot open from the 2nd second to the 10th pins purge, so the history climbs at every
read for longer than the signal's 3 s. The journal says the signal moved, and not before
the snapshot opened; the other signals, whose places only DWARF gives, are named missing.
Whether the groups it wants open is the budget's: in this recording none did, the
recording being in debt from the purge coordinator's empty batches, 759 a second while
the snapshot pinned purge, each a trap of the unsampled purge_batch probe (issue 44)."""
from __future__ import annotations

import json
import signal
import subprocess

from conftest import INNOSTALL, innostall
from scenario_runs import SCENARIOS
from test_record_purge import wait_for_line

SERVER = "mysql-8.0.15"
LOAD = [str(SCENARIOS / "long-snapshot.sh"), "--fixture", SERVER, "--seconds", "14", "--open-at", "2",
        "--commit-at", "10", "--rate", "300"]


def moved_at(journal) -> list[tuple[float, bool]]:
    """(seconds from the attach, whether the history signal wanted its groups) per snapshot."""
    lines = [json.loads(line) for line in journal.read_text().splitlines() if line.endswith("}")]
    attached = next(line for line in lines if line["type"] == "attached")
    return [((line["mono_ns"] - attached["mono_ns"]) / 1e9, bool(line["governor"]["signals"][0][3]))
            for line in lines if line["type"] in ("interval", "final") and line.get("governor")]


def test_the_history_climbing_moves_its_signal_on_a_stripped_mysql(servers, tmp_path):
    srv = servers(SERVER)
    out = tmp_path / "rec"
    record = subprocess.Popen(INNOSTALL + ["record", "--pid", str(srv.pid), "--duration", "60", "-o", str(out)],
                              stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(out / "journal.jsonl", "interval", timeout=120)
        scenario = subprocess.run(LOAD, capture_output=True, text=True, timeout=120)
        assert scenario.returncode == 0, scenario.stderr
    finally:
        record.send_signal(signal.SIGINT)
        assert record.wait(timeout=60) == 0, record.stderr.read()
    signals = json.loads(innostall("report", "--json", str(out)).stdout)["governor"]["signals"]
    moved = moved_at(out / "journal.jsonl")
    print(f"{SERVER}: {signals}; moved at {[t for t, m in moved if m]}")
    assert [s for s in signals["read"]] == ["history"]
    assert signals["read"]["history"]["groups"] == ["purge_record", "purge_sleeps", "purge_worker"]
    assert {"row_lock_waits", "free_page_waits", "log_room_waits"} <= set(signals["missing"])
    # the history climbs from the snapshot's opening on: the signal moves after its 3 s of
    # climbing and not before the snapshot opened (the recording's first seconds)
    assert any(m for _, m in moved) and not any(m for t, m in moved if t <= 2)
