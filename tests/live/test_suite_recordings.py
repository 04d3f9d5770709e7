"""The whole live suite's own recordings of the fixture servers under their loads: none is
contradicted by its report (analysis/checks/verdict_check.py through tests/recording_check.py),
and there are enough of them, of enough server versions, for that to mean something. It
runs after every other test of the session (conftest.py sorts `after_recordings` last)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import recording_check


# After every other test: the recordings they made of the fixture servers under their loads.
@pytest.mark.after_recordings
def test_no_recording_the_suite_made_is_contradicted_by_its_report(request, tmp_path_factory):
    made = recording_check.made_under(tmp_path_factory.getbasetemp())
    if not request.config.whole_suite and len(made) < 30:
        pytest.skip(f"{len(made)} real recordings made by this run; the whole suite (make test) makes 30 or more "
                    "(each is checked at the session's end all the same: conftest.py)")
    checked = recording_check.check_all(made)
    readable = {d: problems for d, problems in checked.items() if problems is not None}
    servers = {json.loads((Path(d) / "meta.json").read_text())["target"]["version"] for d in readable}
    assert len(readable) >= 30 and len(servers) >= 4, (len(readable), servers)
    contradicted = recording_check.problems_of(readable)
    assert not contradicted, "\n".join(contradicted)
