"""The load scenarios of scripts/scenarios/ do what they say, by the server's own counters:
long-snapshot's snapshot pins purge (the history grows while it is open) and its commit lets
purge catch up (the history falls), at the times its markers give (bad input:
tests/pure/test_scenarios_offline.py)."""
from __future__ import annotations

import re
import time

from scenario_runs import SCENARIOS, at, run_scenario

THREADS = 4  # the scenario's update threads


def history(srv, conn) -> int:
    return srv.metric(conn, "trx_rseg_history_len")


def test_long_snapshot_pins_purge_and_its_commit_lets_it_catch_up(servers):
    srv = servers("mariadb-11.4.5")
    conn = srv.connect()
    seen: dict[str, int] = {}
    scans: list[tuple[float, int, int]] = []  # (t, history, updates) as each scan ended

    def on_marker(t, text):
        # Our own reads of the server's history length and updates, at the phase changes.
        for phase in ("opened", "committed"):
            if text.startswith(f"snapshot {phase}"):
                seen[phase], seen[f"updates_{phase}"] = history(srv, conn), srv.status(conn, "Handler_update")
        if re.match(r"scan \d+ ended", text):
            scans.append((t, history(srv, conn), srv.status(conn, "Handler_update")))

    markers = run_scenario([str(SCENARIOS / "long-snapshot.sh"), "--fixture", srv.name, "--seconds", "14",
                            "--open-at", "2", "--commit-at", "8", "--threads", str(THREADS)], on_marker)
    samples = [(t, int(m[1])) for t, text in markers if (m := re.match(r"sample history=(\d+)", text))]
    after = [h for t, h in samples if t > at(markers, "snapshot committed")]
    made = seen["updates_committed"] - seen["updates_opened"]
    print(f"history: {seen['opened']} at the open, {seen['committed']} at the commit ({made} updates "
          f"between), {min(after)}-{max(after)} after it; samples {samples}")
    # The markers keep the timeline the options asked for (the demo relies on it).
    assert abs(at(markers, "snapshot opened") - 2) < 1
    assert abs(at(markers, "snapshot committed") - 8) < 1
    # Under the snapshot, purge removed none of the updates made meanwhile: each is one
    # transaction of history (all but those in flight), however many this host's commit
    # rate allowed. Read while the view was surely open: at a scan's end half a second or
    # more before the commit (the marker is read within milliseconds; after the commit,
    # purge starts at once and the history it removes is no longer there to count) ...
    assert made > 100
    t, pinned_history, pinned_updates = [s for s in scans if s[0] <= at(markers, "snapshot committed") - 0.5][-1]
    assert pinned_history >= pinned_updates - seen["updates_opened"] - THREADS
    pinned = [h for t, h in samples if at(markers, "snapshot opened") + 1 < t < at(markers, "snapshot committed")]
    assert pinned == sorted(pinned) and len(pinned) >= 3, "the history must only grow while pinned"
    # ... and once committed, purge caught up: the history fell while the updates went on,
    # and, once they stopped, to a small part of its peak (waited for: how fast depends on
    # this host).
    assert min(after) < seen["committed"]
    assert wait_for(lambda: history(srv, conn) < seen["committed"] / 5, timeout_s=30)


def wait_for(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True
