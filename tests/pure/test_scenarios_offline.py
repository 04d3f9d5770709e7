"""The load scenarios of scripts/scenarios/ given bad input: one line, and the usage or
failure exit status (tests/live/test_scenarios.py runs them under a server)."""
from __future__ import annotations

import subprocess

import pytest

from scenario_runs import SCENARIOS

SCRIPTS = ["long-snapshot.sh", "hot-rows-scan.sh", "purge-lag-throttle.sh", "cold-restart.sh", "redo-room.sh", "purge-behind.sh"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_bad_input_is_one_line(script):
    for args, status in [(["--seconds", "x"], 2), (["--fixture", "no-such-server"], 1),
                         (["--socket", "/nonexistent.sock", "--user", "u"], 1 if script != "cold-restart.sh" else 2),
                         (["--no-such-option", "1"], 2), ([], 2)]:
        result = subprocess.run([str(SCENARIOS / script), *args], capture_output=True, text=True, timeout=30)
        assert result.returncode == status, (args, result.stderr)
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(script[:-3] + ": "), (args, result.stderr)
        assert result.stdout == ""
