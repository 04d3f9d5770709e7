"""innostall watch against a real pinning snapshot: the long-snapshot scenario pins purge on
MariaDB 11.4.5 under update load; the history passing the watch's threshold saves a
recording, and that recording's verdict names the snapshot's thread as pinning purge."""
from __future__ import annotations

import json
import re
import subprocess

from conftest import INNOSTALL
from test_scenarios import SCENARIOS, run_scenario

# The scenario: updates from 0 s, the snapshot open from 4 s to 30 s. The threshold is far
# above what purge leaves behind while it keeps up (checked below, from the scenario's own
# samples before the snapshot opened), and below what 26 s of pinned updates add even on a
# slow host (at 800 updates a second, 20,000).
OPEN_AT, COMMIT_AT, SECONDS, THRESHOLD = 4, 30, 34, 10_000


def test_a_pinning_snapshot_triggers_a_saved_recording_whose_verdict_names_it(servers, tmp_path):
    srv = servers("mariadb-11.4.5")
    out = tmp_path / "watch"
    watching = subprocess.Popen(INNOSTALL + ["watch", "--pid", str(srv.pid), "--history-above", str(THRESHOLD),
                                             "--before", "20", "--after", "3", "--keep", "1",
                                             "--duration", str(SECONDS + 30), "-o", str(out)],
                                stderr=subprocess.PIPE, text=True)
    said = []
    for line in watching.stderr:  # until the probes are attached
        said.append(line)
        if "attached, watching" in line:
            break
    else:
        raise AssertionError(f"the watch never attached: {''.join(said)}")
    markers = run_scenario([str(SCENARIOS / "long-snapshot.sh"), "--fixture", srv.name, "--seconds", str(SECONDS),
                            "--open-at", str(OPEN_AT), "--commit-at", str(COMMIT_AT)], lambda t, text: None)
    said += watching.stderr.readlines()
    assert watching.wait(timeout=60) == 0, "".join(said)
    print("".join(said))
    opened = next(text for _, text in markers if text.startswith("snapshot opened"))
    tid = int(re.search(r"tid=(\d+)", opened)[1])
    before_open = [int(re.search(r"history=(\d+)", text)[1]) for t, text in markers
                   if text.startswith("sample") and t < OPEN_AT]
    assert before_open and max(before_open) < THRESHOLD / 2, before_open  # purge kept up until then

    meta = json.loads((out / "meta.json").read_text())
    saved = meta["watch"]["saved"]
    assert [s["kind"] for s in saved] == ["history"] and saved[0]["value"] > THRESHOLD, saved
    assert meta["end_reason"] == "1 recording(s) saved (watch --keep)"
    report = json.loads(subprocess.run(INNOSTALL + ["report", str(out / saved[0]["directory"]), "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    assert report["trigger"].startswith(f"saved by innostall watch: history {saved[0]['value']:,} above 10,000")
    assert report["window"]["from_s"] == saved[0]["from_s"]
    phases = report["purge"]["phases"]
    for p in phases:
        print(f"  {p['from_s']:5.1f}-{p['to_s']:5.1f} {p['verdict']}: {p['detail'][:110]}")
    pinned = [p for p in phases if p["verdict"] == "pinned"]
    assert pinned and f"thread {tid}" in pinned[0]["detail"]
    assert report["purge"]["pinned_by"][0]["tid"] == tid
