"""What innostall printed, as the tests read it: shared by tests/pure/ and tests/live/."""
from __future__ import annotations

import subprocess

from conftest import innostall


def one_line(result: subprocess.CompletedProcess) -> str:
    """The error output, asserted to be one line and no traceback."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def run_diff(a, b, *extra) -> str:
    """innostall diff A B's report, asserted to have exited 0."""
    done = innostall("diff", a, b, *extra)
    assert done.returncode == 0, done.stderr
    return done.stdout
