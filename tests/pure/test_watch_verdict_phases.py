"""The watch's verdict trigger reads the kept minutes' purge phases through the analysis's
function in a child process (analysis/purge_phases.py), not through the CLI: the phases must
be report --json's, and a directory it cannot read one line and a non-zero exit."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO
from innostall.analysis import recording, summary, window
from innostall.analysis.purge_phases import purge_phases

PIN_CATCH_UP = REPO / "tests" / "data" / "pin-catch-up"


def test_the_phases_are_the_reports():
    rec = window.saved_window(recording.load(str(PIN_CATCH_UP)))
    told = json.loads(json.dumps(summary.summary(rec)))["purge"]["phases"]
    assert purge_phases(str(PIN_CATCH_UP)) == told
    assert [p["verdict"] for p in told].count("pinned") == 1  # the stored story: one pin


@pytest.mark.heavy  # runs the child process on purpose (watch's), twice: Python's start and the analysis's imports, ~1.8 s of CPU
def test_the_child_process_prints_them_as_json_and_says_a_bad_directory_in_one_line(tmp_path):
    ran = subprocess.run([sys.executable, "-m", "innostall.analysis.purge_phases", str(PIN_CATCH_UP)],
                         capture_output=True, text=True, check=True)
    assert json.loads(ran.stdout) == purge_phases(str(PIN_CATCH_UP))
    bad = subprocess.run([sys.executable, "-m", "innostall.analysis.purge_phases", str(tmp_path / "none")],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and bad.stdout == ""
    assert len(bad.stderr.splitlines()) == 1 and "Traceback" not in bad.stderr
