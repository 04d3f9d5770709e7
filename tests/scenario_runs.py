"""The load scenarios of scripts/scenarios/, run as the demo runs them: each prints a marker
line at each phase change, which the tests time their reads and assertions by. Shared by
tests/pure/ (bad input) and tests/live/ (the scenarios under real servers)."""
from __future__ import annotations

import re
import subprocess

from conftest import REPO

SCENARIOS = REPO / "scripts" / "scenarios"
MARKER = re.compile(r"^scenario: t=(\d+\.\d) (.*)$")


def run_scenario(command: list[str], on_marker) -> list[tuple[float, str]]:
    """Run a scenario, calling on_marker(t, text) at each marker line as it comes."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    markers = []
    try:
        for line in proc.stdout:
            m = MARKER.match(line)
            if m:
                markers.append((float(m[1]), m[2]))
                on_marker(float(m[1]), m[2])
    finally:
        if proc.poll() is None:
            proc.terminate()
        stderr = proc.stderr.read()
        assert proc.wait(timeout=30) == 0, stderr
    return markers


def at(markers, prefix: str) -> float:
    """The time of the first marker whose text starts with prefix."""
    return next(t for t, text in markers if text.startswith(prefix))
