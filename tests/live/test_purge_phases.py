"""The verdict against what happened: while the long-snapshot scenario holds a consistent
snapshot, the report calls purge pinned and names the snapshot's OS thread (the one the
server gives for that connection) and how long its view stayed open; after the commit it
calls purge catching up, in batches that purged pages."""
from __future__ import annotations

import json
import re
import signal
import subprocess

import numpy as np
import pytest

from conftest import INNOSTALL
from innostall.analysis import load_frames
from innostall.analysis.phases import PINNED_SHARE
from innostall.analysis.pinning import BACKLOG_MIN
from scenario_runs import SCENARIOS, at, run_scenario
from test_record_purge import wait_for_line

SERVERS = ["mariadb-11.4.5", "mysql-8.0.15", "mariadb-10.2.11"]
OPEN_AT, COMMIT_AT, SECONDS = 3, 11, 18


@pytest.mark.parametrize("server_name", SERVERS)
def test_pinned_by_the_snapshot_then_catching_up(servers, server_name, tmp_path):
    srv = servers(server_name)
    out = tmp_path / "rec"
    # The recording ends with the scenario (a Ctrl-C once it has exited), not at a fixed
    # duration past it: it then holds the whole scenario, its pin and its catch-up, and
    # nothing after it that any assertion reads.
    record = subprocess.Popen(INNOSTALL + ["record", "--pid", str(srv.pid), "--duration",
                                           str(SECONDS + 60), "-o", str(out)],
                              stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(out / "journal.jsonl", "attached")
        markers = run_scenario([str(SCENARIOS / "long-snapshot.sh"), "--fixture", srv.name,
                                "--seconds", str(SECONDS), "--open-at", str(OPEN_AT),
                                "--commit-at", str(COMMIT_AT)], lambda t, text: None)
    finally:
        record.send_signal(signal.SIGINT)
    assert record.wait(timeout=60) == 0, record.stderr.read()
    opened = next(text for _, text in markers if text.startswith("snapshot opened"))
    tid = int(re.search(r"tid=(\d+)", opened)[1])
    held_s = at(markers, "snapshot committed") - at(markers, "snapshot opened")

    report = json.loads(subprocess.run(INNOSTALL + ["report", str(out), "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    phases = report["purge"]["phases"]
    print(f"{server_name}: snapshot tid {tid}, held {held_s:.1f} s; phases:")
    for p in phases:
        print(f"  {p['from_s']:5.1f}-{p['to_s']:5.1f} {p['verdict']}: {p['detail'][:110]}")
    pinned = [p for p in phases if p["verdict"] == "pinned"]
    assert pinned and f"thread {tid}" in pinned[0]["detail"]
    # The phase spans the pin as the recording saw it, not as the markers timed it: how soon
    # the snapshot's view holds most of the history (it opens over the load's own backlog)
    # depends on this host's commit rate. It began by the first interval in which the
    # oldest view held a backlog, and it lasts until the interval the view closed in: the
    # one whose peak is the highest (its peak was read before the commit).
    table = load_frames(str(out))["purge"]
    peak = int(np.nanargmax(table["history"].to_numpy()))
    held = (table["history"] > BACKLOG_MIN) & (table["pinned"] >= PINNED_SHARE * table["history"])
    first_held = held.iloc[:peak].idxmax() if held.iloc[:peak].any() else None
    print(f"  the view held a backlog from the interval ending {first_held} s; it closed in the one "
          f"ending {table.index[peak]:.1f} s")
    assert first_held is not None and pinned[0]["from_s"] <= first_held
    assert pinned[0]["to_s"] >= table.index[peak - 1] - 0.01
    view = report["purge"]["pinned_by"][0]
    assert view["tid"] == tid and abs(view["age_s"] - held_s) <= 1.5
    catch_up = [p for p in phases if p["verdict"] == "catching_up" and p["from_s"] >= pinned[0]["from_s"]]
    assert catch_up, "no catch-up after the commit"
    rows = table.loc[catch_up[0]["from_s"] + 0.5:catch_up[0]["to_s"] + 0.5]
    working = rows["purge_batches"].sum() - rows["purge_empty_batches"].sum()
    assert working and rows["purge_pages"].sum() / working > 0
