"""The children innostall watch starts (collector/recorder/watch.py), run in the test's own
process: a child Python imports pandas and pyarrow, ~0.8 s of CPU each, and a watch over a
story starts one per save and per verdict asked. Tests patch watch.idle.run_idle with
children_in_this_process; the children as processes are tested once each
(test_watch_verdict_phases.py, and the history trigger's test in test_watch.py)."""
from __future__ import annotations

import json
import sys

from innostall.analysis.purge_phases import purge_phases
from innostall.collector.recorder import store, watch
from innostall.errors import UserError

RUN_IDLE = watch.idle.run_idle
PHASES_CHILD = [sys.executable, "-m", "innostall.analysis.purge_phases"]
TABLES_CHILD = [sys.executable, "-m", "innostall.collector.recorder.store"]


def children_in_this_process(cmd: list[str]) -> tuple[int, str]:
    """What the watch's children print and exit with, computed here: the verdict's (python -m
    innostall.analysis.purge_phases DIR: a child per verdict asked, ten in this story, spent
    ~12 s of CPU starting Python and importing pandas) and a save's tables' (python -m
    innostall.collector.recorder.store DIR: ~0.8 s of CPU a save). That the phases' child
    prints exactly this, and one line for a bad directory, is test_watch_verdict_phases.py's;
    the tables' child runs as a process in the history trigger's test."""
    if cmd[:3] == TABLES_CHILD:
        assert len(cmd) == 4
        try:
            store.write_tables(cmd[3])
        except Exception:  # the child's traceback and its exit status
            return 1, ""
        return 0, ""
    if cmd[:3] != PHASES_CHILD:
        return RUN_IDLE(cmd)
    assert len(cmd) == 4
    try:
        return 0, json.dumps(purge_phases(cmd[3]))
    except UserError:
        return 1, ""
