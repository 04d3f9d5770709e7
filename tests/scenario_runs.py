"""The load scenarios of scripts/scenarios/, run as the demo runs them: each prints a marker
line at each phase change, which the tests time their reads and assertions by. Shared by
tests/pure/ (bad input) and tests/live/ (the scenarios under real servers)."""
from __future__ import annotations

import re
import subprocess

from conftest import REPO

SCENARIOS = REPO / "scripts" / "scenarios"
MARKER = re.compile(r"^scenario: t=(\d+\.\d) (.*)$")


ENDED_BY_TERM = 143  # the scenarios' exit on SIGTERM, after their cleanup (lib.sh's traps)


def run_scenario(command: list[str], on_marker, until=None) -> list[tuple[float, str]]:
    """Run a scenario, calling on_marker(t, text) at each marker line as it comes. until():
    checked at each marker (a sample comes every second); once it is true, what the test
    observes is over, and the scenario is ended early by SIGTERM (its cleanup stops the load
    and rolls back its snapshot)."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    markers, ended = [], False
    try:
        for line in proc.stdout:
            m = MARKER.match(line)
            if m:
                markers.append((float(m[1]), m[2]))
                on_marker(float(m[1]), m[2])
            if until is not None and until():
                ended = True
                proc.terminate()
                break
    finally:
        if proc.poll() is None and not ended:
            proc.terminate()
        stderr = proc.stderr.read()
        # ended early: 143, or 0 where it was ending on its own as until() came true
        assert proc.wait(timeout=30) in ((0, ENDED_BY_TERM) if ended else (0,)), stderr
    return markers


def at(markers, prefix: str) -> float:
    """The time of the first marker whose text starts with prefix."""
    return next(t for t, text in markers if text.startswith(prefix))
