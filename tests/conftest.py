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


def innostall(*args: str, in_process: bool = False, **kwargs) -> subprocess.CompletedProcess:
    """innostall ARGS as a user runs it: what it printed and its exit status. The commands
    that only read recordings run in this process, through the same main() the console
    script calls (tests/pure/test_html.py runs the script itself): a new Python importing pandas
    and pyarrow cost about 0.7 s a call, most of make check's time. The others (record,
    probes) start, stop and trace processes, and run as their own process, unless in_process:
    a command refused before it touches any process (probes of a file that is no server)."""
    args = [str(a) for a in args]
    if not args or (args[0] not in REPORT_SIDE and not in_process) or kwargs:
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


# A pure test's call phase is held to PURE_LIMIT_S of CPU, its own process's and that of the
# children it waited for (a CLI it ran): CPU, not the wall clock, because the wall time of the
# same test was 4-7 times its CPU on a 2-core machine beside other loads (load average 9-11),
# and a limit that flaps is no limit. A test that waits (sleeps, polls) without spending CPU
# is held to PURE_WALL_S, loose for the same reason. Heavy tests (a browser, Go, the fuzz's
# long run, a fixture's binary decoded, the host's libc read, xz over many lines, a CLI run as
# its own process on purpose: each marked with its reason) are make test's, not held.
PURE_LIMIT_S, PURE_WALL_S = 1.0, 30.0
# Those over the limit, as file::test under tests/pure/, each with its reason: measured with
# the call phase's CPU over 0.75 s in one of three runs beside other loads (which add up to a
# third). Most are over it because the whole analysis of a recording (summary, text, HTML,
# the checker) costs about a second of CPU: the list is to shrink as the analysis gets
# faster, never one to add to lightly.
ANALYSIS = "the whole analysis of a synthetic recording, often twice (the report, then the checker)"
STORED = "reads a stored real recording (tests/data) whole and holds every figure to it"
HOSTILE = "a case reports a mutated recording through several commands (text, JSON, HTML, export)"
WATCH = "watch runs the analysis over its kept minutes, its verdict through report --json as a process"
LAYERING = "parses every module of the package for the imports it makes, inside functions too"
DEBUGINFO = ("matches a fixture's separate debug file to its build (debuglink CRC, build id): on a fresh "
             "machine, where nothing is cached yet, 1.6 s and 10.9 s of CPU (fresh-check, 2026-11-29)")
SLOW_PURE = {
    "test_diff.py::test_cli_diff_of_recordings_with_three_times_the_activity": ANALYSIS,
    "test_diff_windows.py::test_a_windowed_diff_leaves_out_the_figures_of_the_tables_kept_whole": ANALYSIS,
    "test_diff_windows.py::test_the_second_half_against_the_first_doubles_the_purge_counters_and_nothing_else":
        ANALYSIS,
    "test_debuginfo.py::test_without_build_id_the_debuglink_crc_decides": DEBUGINFO,
    "test_debuginfo.py::test_a_debug_file_of_another_build_is_refused": DEBUGINFO,
    "test_export.py::test_export_of_a_recording_with_walks": ANALYSIS,
    "test_hostile_recordings.py::test_case": HOSTILE,
    "test_hostile_saves.py::test_a_counters_table_of_0_rows_is_damage_not_a_traceback": HOSTILE,
    "test_hostile_saves.py::test_case": HOSTILE,
    "test_layering.py::test_no_module_imports_a_later_stage": LAYERING,
    "test_long_recordings.py::test_a_long_recordings_latch_table_has_a_bounded_number_of_rows": ANALYSIS,
    "test_long_recordings.py::test_the_heap_debounce_merges_as_the_passes_did": ANALYSIS,
    "test_purge_watched.py::test_the_checker_catches_a_bound_named_from_unwatched_time": ANALYSIS,
    "test_sampled_batches.py::test_the_checker_catches_a_count_said_as_the_whole": ANALYSIS,
    "test_replica_report.py::test_a_split_of_part_of_the_time_and_sampled_probes_say_so": ANALYSIS,
    "test_replica_report.py::test_an_event_stalled_on_a_row_lock_is_told_in_the_intervals_it_lasted": ANALYSIS,
    "test_replica_report.py::test_a_burst_in_an_idle_stretch_stays_idle_but_a_busy_flapping_one_is_named_by_its_split":
        ANALYSIS,
    "test_replica_report.py::test_a_waiting_part_of_a_tenth_names_the_phase_and_the_finding_names_its_latch":
        ANALYSIS,
    "test_replica_report.py::test_nothing_is_said_of_a_replica_without_its_probe_or_its_events": ANALYSIS,
    "test_replica_watched.py::test_a_quiet_phase_that_took_in_a_short_watched_busy_run_is_unwatched_and_reads_true":
        STORED,
    "test_replica_watched.py::test_a_lag_that_rose_with_no_finding_is_caught": ANALYSIS,
    "test_replica_watched.py::test_an_unwatched_phase_still_tells_the_row_lock_waits_their_probe_saw_whole": ANALYSIS,
    "test_replica_watched.py::test_on_a_replica_its_story_leads_the_timeline_the_findings_and_the_sections": ANALYSIS,
    "test_replica_watched.py::test_the_checker_catches_a_lag_finding_the_counters_deny": ANALYSIS,
    "test_replica_watched.py::test_the_finding_starts_from_the_lag_and_where_it_grew": ANALYSIS,
    "test_replica_watched.py::test_the_lag_finding_tells_the_waits_seen_whole_in_a_span_too_little_watched": ANALYSIS,
    "test_server_reading.py::test_how_to_learn_more_is_a_note_under_the_verdict_never_in_its_sentence": ANALYSIS,
    "test_server_reading.py::test_the_checker_holds_the_words_to_the_servers_column_not_the_tables": ANALYSIS,
    "test_server_state_offline.py::test_the_age_is_said_read_as_often_as_the_recording_read_it": ANALYSIS,
    "test_server_state_offline.py::test_the_html_report_draws_redo_and_flushing": ANALYSIS,
    "test_server_state_offline.py::test_the_flush_finding_and_its_check": ANALYSIS,
    "test_unstacked_waits.py::test_every_view_tells_the_waits_without_a_stack": ANALYSIS,
    "test_verdict_consistency.py::test_a_long_statement_is_cut_between_words_and_whole_in_json_and_the_html_title":
        ANALYSIS,
    "test_verdict_consistency.py::test_a_real_catch_up_after_a_pin_reads_as_one": STORED,
    "test_verdict_consistency.py::test_a_pinned_phase_that_took_in_working_intervals_does_not_say_every_batch_found_nothing":
        ANALYSIS,
    "test_verdict_consistency.py::test_an_event_in_the_last_two_milliseconds_is_read_against_its_own_snapshot":
        ANALYSIS,
    "test_verdict_consistency.py::test_block_waits_on_pages_being_written_are_the_disks_not_a_hot_spot": ANALYSIS,
    "test_verdict_consistency.py::test_names_are_shortened_only_at_word_boundaries_and_whole_in_json_and_html":
        ANALYSIS,
    "test_verdict_consistency.py::test_no_stored_recording_is_contradicted_by_its_report": STORED,
    "test_verdict_consistency.py::test_text_and_html_say_the_same_sentences_as_json": ANALYSIS,
    "test_verdict_consistency.py::test_the_finding_names_the_hot_block_as_the_latch_table_does": ANALYSIS,
    "test_verdict_consistency.py::test_the_sessions_own_recordings_are_found_and_checked": ANALYSIS,
    "test_watch.py::test_purge_pinned_by_the_verdict_of_the_kept_minutes": WATCH,
}


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def held_to_the_limit(item) -> bool:
    return (TESTS / "pure" in item.path.parents and item.get_closest_marker("heavy") is None
            and f"{item.path.name}::{getattr(item, 'originalname', item.name)}" not in SLOW_PURE)


@pytest.fixture(scope="session", autouse=True)
def analysis_warmed_up(request):
    """The analysis imported and run over a stored recording once in each process, in the
    first test's setup, before any test's own time is measured (pytest_runtest_call): in a
    fresh root each module's bytecode is compiled at its first import, and the first report
    fills caches (templates, plotly's script), which the limit would charge to whichever pure
    test came first (fresh-check at bd30c65: two failed so, 1.6 s and 10.9 s of CPU)."""
    if any(held_to_the_limit(item) for item in request.session.items):
        from innostall.analysis.checks import verdict_check
        verdict_check.check(str(TESTS / "data" / "seed-load"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if not held_to_the_limit(item):
        yield
        return
    cpu, wall = cpu_seconds(), time.perf_counter()
    outcome = yield
    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    if outcome.excinfo is None and (cpu > PURE_LIMIT_S or wall > PURE_WALL_S):
        # the test's own failure, as pytest.fail gives it (raising here is a hook's error)
        outcome.force_exception(pytest.fail.Exception(
            f"a pure test took {cpu:.2f} s of CPU and {wall:.2f} s in all, over the limit of "
            f"{PURE_LIMIT_S:.0f} s of CPU or {PURE_WALL_S:.0f} s in all (tests/conftest.py): "
            "make it faster, mark it heavy, or name it in SLOW_PURE with the reason", pytrace=False))


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
    from recordings import record_at_once
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
                # at once (recordings.record_at_once): this load never leaves idle CPU
                record_at_once(tgt, probes, out, duration_s=8, holders=True)
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
