"""The checker (analysis/checks/verdict_check.py) over the recordings a test session made of the
fixture servers: which they are, and what it finds in each. conftest.py runs it on every
one at the session's end, test_verdict_consistency.py on the whole suite's at once; a
recording is checked once (CHECKED)."""
from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import recordings
from conftest import REPO, SESSION_START
from innostall.analysis.checks import verdict_check
from innostall.errors import UserError

STORED = sorted(p for p in (REPO / "tests" / "data").iterdir() if (p / "meta.json").exists())
# read once: per meta.json found, reading them again cost 3 ms, seconds at a session's end
STORED_PIDS = frozenset(json.loads((d / "meta.json").read_text())["target"]["pid"] for d in STORED)
CHECKED: dict[str, list[str] | None] = {}  # directory: its problems (None: refused), this session's


def recorded_by_this_session(meta: Path) -> bool:
    """A recording the recorder wrote during this session, of a real server: not one written
    by tests/recordings.py (its made-up pid) nor a copy of a stored one (a stored pid)."""
    if meta.is_symlink() or not meta.is_file():  # a hostile recording's (test_hostile_recordings.py)
        return False
    if not (meta.parent / "loader.log").is_file() or not (meta.parent / "journal.jsonl").exists():
        return False  # the recorder's log, which no stored or mutated copy has: asked before meta.json is read
    try:
        pid = json.loads(meta.read_text())["target"]["pid"]
    except (ValueError, KeyError, TypeError, OSError):
        return False
    return meta.stat().st_mtime >= SESSION_START and pid not in STORED_PIDS | {recordings.PID}


def made_under(base: Path) -> list[Path]:
    """The session's real recordings under a directory (resolved: pytest links each test's
    last directory)."""
    return sorted({meta.parent.resolve() for meta in base.rglob("meta.json") if recorded_by_this_session(meta)})


def contradictions(directory: Path) -> tuple[str, list[str] | None]:
    """The checker's findings for one recording; None for one the tests damaged on purpose
    (reading it is one line, tested where it is made)."""
    try:
        return str(directory), verdict_check.check(str(directory))
    except UserError:
        return str(directory), None


def check_all(directories: list[Path]) -> dict[str, list[str] | None]:
    """Each recording not checked yet, two at a time (about 1.5 s each, most of it the HTML's
    charts), added to CHECKED; returns every one asked for."""
    todo = [d for d in directories if str(d) not in CHECKED]
    if todo:
        with ProcessPoolExecutor(2) as pool:
            CHECKED.update(pool.map(contradictions, todo))
    return {str(d): CHECKED[str(d)] for d in directories}


def problems_of(checked: dict[str, list[str] | None]) -> list[str]:
    return [f"{d}: {problem}" for d, found in checked.items() if found for problem in found]
