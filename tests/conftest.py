"""Real servers for the tests: fixture servers from scripts/fixture.sh (through
scripts/fixture_servers.py, which the benchmark shares), started once per session on a fresh
datadir with sysbench tables, stopped at the end.

The folder is the marker: tests/live/ starts or attaches to a real server, or otherwise needs
root, and is marked `live`; tests/pure/ needs neither (`pytest tests/pure`, or `-m "not live"`,
runs it as any user can). Helpers both use stay here, beside this file (recordings.py,
polling.py, procmem.py, recording_check.py, data/): this folder is on sys.path."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))  # for fixture_servers, and the bench package's maths

# Tests import these from here: keep every name.
from fixture_servers import FIXTURE, REPO, Server, fixture, stop_load  # noqa: E402,F401

INNOSTALL = [str(REPO / "build" / "venv" / "bin" / "innostall")]
REPORT_SIDE = ("report", "export", "diff", "query", "redact")  # commands that only read recordings


def innostall(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """innostall ARGS as a user runs it: what it printed and its exit status. The commands
    that only read recordings run in this process, through the same main() the console
    script calls (tests/test_html.py runs the script itself): a new Python importing pandas
    and pyarrow cost about 0.7 s a call, most of make check's time. The others (record,
    probes) start, stop and trace processes, and run as their own process."""
    args = [str(a) for a in args]
    if not args or args[0] not in REPORT_SIDE or kwargs:
        return subprocess.run(INNOSTALL + args, capture_output=True, text=True, **kwargs)
    from innostall.cli import main  # when first needed: it imports every stage
    out, err = io.StringIO(), io.StringIO()
    umask = os.umask(0o022)  # main() sets 077 for what it writes: this process's own is kept
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as e:  # argparse's usage errors
            code = e.code if isinstance(e.code, int) else 1
        finally:
            os.umask(umask)
    return subprocess.CompletedProcess(INNOSTALL + args, code, out.getvalue(), err.getvalue())


TESTS = Path(__file__).resolve().parent
LIVE = "live: under tests/live/: starts or attaches to a real server, or otherwise needs root"


def is_live(item) -> bool:
    return TESTS / "live" in item.path.parents


# Recordings written after this are the session's own (tests/live/test_suite_recordings.py).
SESSION_START = time.time()
AFTER_RECORDINGS = "after_recordings: runs after every other test, over the recordings they made"
HEAVY = "heavy: needs a browser or Go, or takes many seconds without a server: make test, not make check"


@pytest.fixture(scope="session", autouse=True)
def recordings_hold_their_reports(tmp_path_factory, pytestconfig):
    """At the session's end, the checker over every real recording its tests made of the
    fixture servers (tests/recording_check.py): a sentence its recording contradicts fails
    the run, whichever tests made it. Those the whole-suite test checked are not read again;
    a run that made none costs a directory walk."""
    yield
    import recording_check  # imports the analysis: only now, in the process that runs the tests
    checked = recording_check.check_all(recording_check.made_under(tmp_path_factory.getbasetemp()))
    found = recording_check.problems_of(checked)
    pytestconfig.recordings_checked = (len(checked), len(found))  # said in the summary
    if found:
        pytest.fail("reports contradicted by their recordings:\n" + "\n".join(found), pytrace=False)


def pytest_terminal_summary(terminalreporter, config):
    """How many real recordings the run's last line vouches for (recordings_hold_their_reports)."""
    checked, found = getattr(config, "recordings_checked", (0, 0))
    if checked:
        terminalreporter.write_line(f"checker: {checked} recordings of the fixture servers read back, "
                                    f"{found} problems")


def pytest_configure(config):
    config.addinivalue_line("markers", LIVE)
    config.addinivalue_line("markers", AFTER_RECORDINGS)
    config.addinivalue_line("markers", HEAVY)
    # the whole live suite, as `make test` runs it: no live test left out by name, marker or path
    config.whole_suite = (not config.option.keyword and config.option.markexpr in ("", "live")
                          and all(Path(a).resolve() in (TESTS, TESTS / "live") for a in config.args))


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if is_live(item):
            item.add_marker(pytest.mark.live)
        if "browser" in item.fixturenames:  # headless Chromium
            item.add_marker(pytest.mark.heavy)
    items.sort(key=lambda item: item.get_closest_marker("after_recordings") is not None)  # stable


# The fixture servers in the order the suite first uses them: fetched in that order in the
# background, so that one downloads while another starts and loads (on a fresh machine the
# downloads are minutes).
PREFETCH = ("mariadb-11.4.5", "mysql-8.0.15", "mariadb-10.2.11", "mysql-9.7.4", "mariadb-10.11.5",
            "mariadb-10.4.6")


class Prefetch(threading.Thread):
    """Fetches the fixture servers one after another (Maven's local repository is not made
    for two writers); wait(name) returns once that one's fetch is over, failed or not (its
    init fetches again, and says why it failed)."""

    def __init__(self, names):
        super().__init__(daemon=True)
        self.done = {name: threading.Event() for name in names}

    def run(self):
        for name, done in self.done.items():
            fixture(name, "fetch", check=False)
            done.set()

    def wait(self, name: str) -> None:
        if name in self.done:
            self.done[name].wait()


PREFETCHING: list[Prefetch] = []  # the session's, once the servers fixture has begun it


def fetched(name: str) -> None:
    """A fixture server's files, fetched if need be, never beside the prefetch's own fetch."""
    for prefetch in PREFETCHING:
        prefetch.wait(name)
    fixture(name, "fetch")


@pytest.fixture(scope="session")
def servers():
    """servers(name) -> a running, loaded Server; each is started once per session."""
    if os.geteuid() != 0:
        pytest.skip("real-server tests need root")
    started: dict[str, Server] = {}
    prefetch = Prefetch(PREFETCH)
    PREFETCHING.append(prefetch)
    prefetch.start()

    def get(name: str) -> Server:
        if name not in started:
            prefetch.wait(name)  # never two fetches of one server at once
            fixture(name, "init")
            fixture(name, "start")
            fixture(name, "load", "2", "10000")
            started[name] = Server(name)
        return started[name]

    yield get
    for name in started:
        fixture(name, "stop", check=False)


@pytest.fixture
def small_pool_server(servers, request):
    """The server the test's parameter names, restarted with an 8 MB buffer pool for the
    test (so that its working set does not fit), then as the other tests expect it."""
    srv = servers(request.param)
    fixture(srv.name, "stop")
    fixture(srv.name, "start", "--innodb-buffer-pool-size=8M")
    yield srv
    fixture(srv.name, "stop")
    fixture(srv.name, "start")


# The latch probes, pthread mutex waits included (MariaDB 10.6+; elsewhere unresolved).
LATCH_PROBES = ["block_lock_s", "block_lock_x", "block_lock_sx", "latch_sleep", "mutex_wait"]


@pytest.fixture(scope="session")
def hot_rows(servers, tmp_path_factory):
    """hot_rows(name) -> (recording, probes): 16 threads updating 20 hot rows, recorded 8 s
    with the latch probes, once per server per session. The block-latch, latch-name and
    holder tests each check their part of the same recording (each one takes ~20 s)."""
    from innostall.analysis import recording
    from innostall.collector.discovery import discover, target
    from innostall.collector.recorder import recorder
    from procmem import code_byte, file_byte

    made: dict[str, tuple] = {}

    def get(name: str):
        if name not in made:
            srv = servers(name)
            tgt = target.from_pid(srv.pid)
            probes = [p for p in discover.resolve(tgt, LATCH_PROBES) if p.ok]
            out = str(tmp_path_factory.mktemp(f"hot-{name}"))
            load = srv.sysbench("oltp_update_index", 30, "--threads=16", "--table-size=20")
            try:
                recorder.record(tgt, probes, out, duration_s=8, holders=True)
            finally:
                stop_load(load)
            for p in probes:  # nothing left behind in the server's code or its libc
                assert code_byte(srv.pid, p.offset, p.path) == file_byte(p.path or tgt.path, p.offset)
                # the file a library probe's /proc/PID/map_files link maps, named while the
                # server runs (a later test may restart it, and the link goes with it)
                p.library = mapped_file(srv.pid, p.path) if p.path else None
            made[name] = recording.load(out), probes
        return made[name]

    return get


def mapped_file(pid: int, path: str) -> str:
    """The file a /proc/PID/map_files/START-END link maps, as /proc/PID/maps names it
    (reading the link itself may be refused, in a container)."""
    span = os.path.basename(path)
    with open(f"/proc/{pid}/maps") as maps:
        return next((line.split(maxsplit=5)[-1].strip() for line in maps if line.startswith(span + " ")),
                    os.path.realpath(path))
