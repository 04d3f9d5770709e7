"""Write a recording directory: meta.json, replaced atomically, and the Parquet tables
built from the journal once tracing is over (in a process of its own: pandas would double
the recorder's memory; started ahead of a known end, TablesAhead). The format itself is
innostall/format/journal.py."""
from __future__ import annotations

import contextlib
import glob
import json
import os
import signal
import subprocess
import sys
import time
from typing import Callable

from innostall.format import journal as fmt, table_builders
from innostall.errors import UserError

from . import idle

from innostall.format.journal import COUNTERS, FORMAT, FORMAT_VERSION, HISTS, META, schema_of


def write_meta(directory: str, meta: dict) -> None:
    """Replace meta.json atomically: a crash leaves the old or the new one, never half;
    a full disk leaves the old one and no temporary file, and is one line."""
    tmp = os.path.join(directory, META + ".tmp")
    try:
        # the same bytes as json.dump's, in one write (dump writes each of its thousands of pieces)
        text = json.dumps({"format": FORMAT, "version": FORMAT_VERSION, **meta}, indent=2)
        with open(tmp, "w") as f:
            f.write(text + "\n")
        os.replace(tmp, os.path.join(directory, META))
    except OSError as e:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise UserError(f"cannot write {os.path.join(directory, META)}: {e.strerror}")


def write_tables(directory: str) -> None:
    """Every table of the recording's schema (meta.json), each NAME.parquet."""
    with open(os.path.join(directory, META)) as f:
        schema = schema_of(json.load(f))
    records, counters, hists = fmt.streamed(directory, schema.gauges, tables=schema.tables)
    counters.to_parquet(os.path.join(directory, COUNTERS), index=False)
    hists.to_parquet(os.path.join(directory, HISTS), index=False)
    kinds = {r["type"] for r in records}
    for name in table_builders.table_names(schema):
        # a table none of whose lines are in the journal is empty: built once a process, as
        # the reader's rebuild does (a build costs a few ms, and most recordings lack half of them)
        where = os.path.join(directory, schema.tables.recording[name].file)
        if set(table_builders.source_lines(schema, name)) & kinds:
            table_builders.build(name, records, schema).to_parquet(where, index=False)
        else:
            write_empty(where, name, schema)


EMPTY_BYTES: dict[tuple, bytes] = {}  # an empty table's file, by table_builders.empty_key


def write_empty(where: str, name: str, schema) -> None:
    """An empty table's Parquet file: written by pandas once a process, then its bytes (the
    same: pyarrow writes no time or path in a file), as the tables most recordings lack
    cost 3 ms each to write."""
    key = table_builders.empty_key(name, schema)
    if key not in EMPTY_BYTES:
        table_builders.empty(name, schema).to_parquet(where, index=False)
        with open(where, "rb") as f:
            EMPTY_BYTES[key] = f.read()
        return
    with open(where, "wb") as f:
        f.write(EMPTY_BYTES[key])


SAY_AFTER_S = 1.0  # tables that take longer than this are said to be written, and how to skip them
ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
WRITER = [sys.executable, "-m", "innostall.collector.recorder.store"]  # + [--when-told] DIR
WHEN_TOLD = "--when-told"
WRITE_WORD = "write\n"
# A --duration's writer begins this long before its end: its imports take
# 0.5-0.8 s of CPU on a 2-core machine, more where the server leaves less, and it holds
# ~110 MB meanwhile (its peak writing, 125 MB; 54 MB of it its own, the rest shared
# libraries), so not for the whole of a long recording.
AHEAD_S = 5.0
# A recording with no --duration (ended by a signal) starts its writer at the attach, its
# Ctrl-C then returning a second sooner, and ends it if it is still parked at this age (the
# one started at the end writes). One with a --duration keeps its imports out of what it
# measures until AHEAD_S before its end (the bench's windows end by SIGINT well before it).
PARKED_AT_MOST_S = 600.0


class TablesAhead:
    """The tables' writer, started before the recording ends (AHEAD_S before a --duration's
    end, at the attach without one), so that what it imports (pandas, pyarrow: most of a
    writer's time, its writing a tenth of a second) is loaded when the loader has ended; it
    then waits for the word on its stdin. Only where the idle cgroup is: until the tables
    are asked for it is parked there with no patience (idle.IdleGroup.park), so while the
    server is traced its imports take no CPU the server wants, however long that takes; once
    asked, its stay has the group's patience, as a writer started then has. A watch starts
    its writer at the end."""

    def __init__(self, directory: str, group: idle.IdleGroup | None, duration_s: float | None,
                 open_ended: bool = False):
        """open_ended: without a duration, the recording ends on a signal (not a watch's)."""
        self.directory, self.group, self.duration_s = directory, group, duration_s
        self.open_ended = open_ended
        self.due: float | None = None  # time.monotonic() from which the writer is started
        self.until: float | None = None  # ... and until which it may stay parked
        self.proc: subprocess.Popen | None = None

    def heed(self, kind: str) -> None:
        """A loader line of this kind has come: the attach sets when the writer is due."""
        now = time.monotonic()
        if kind == "attached" and self.group:
            if self.duration_s is not None:
                self.due = now + max(0.0, self.duration_s - AHEAD_S)
            elif self.open_ended:
                self.due, self.until = now, now + PARKED_AT_MOST_S
        if self.proc is None and self.due is not None and now >= self.due:
            self.due = None  # once: one that cannot be started is started at the end instead
            with contextlib.suppress(OSError):
                self.proc = subprocess.Popen(WRITER + [WHEN_TOLD, self.directory], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                             start_new_session=True)  # the terminal's Ctrl-C is ours
                self.group.park(self.proc.pid)
        if self.proc is not None and self.until is not None and now >= self.until:
            self.until = None
            self.close()  # its memory back: one started at the end writes the tables

    def take(self) -> tuple[subprocess.Popen, idle.Stay] | None:
        """The writer started ahead, now waited for (its patience from now), or None."""
        proc, self.proc = self.proc, None
        return (proc, self.group.stay_parked(proc.pid)) if proc else None

    def close(self) -> None:
        """A writer started ahead and not taken (the recording ended without its tables):
        ended and reaped; it had written nothing."""
        if self.proc:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            self.proc.communicate()
            self.proc = None


def write_tables_aside(directory: str, group: idle.IdleGroup | None,
                       skipped_before: Callable[[], str | None] = lambda: None,
                       ahead: TablesAhead | None = None) -> str | None:
    """Write the tables in a process of its own on idle CPU (under load they may wait
    seconds for it), saying so when they take a while: the one started ahead if there is
    one (told to write now), else one started now. A signal now (a second Ctrl-C)
    skips them at once: the journal is whole and the report reads it instead; so does one
    that came since the loader ended (skipped_before: its name, noted by the recorder's
    handler), asked once this function's handler is in place, so none falls between the
    two. Returns None when written, or the signal that skipped them."""
    skipped_by, proc = [], None

    def skip(signum, frame):
        skipped_by.append(signal.Signals(signum).name)
        with contextlib.suppress(ProcessLookupError, AttributeError):
            proc.kill()

    previous = {s: signal.signal(s, skip) for s in ENDING_SIGNALS}
    stay = None
    try:
        if earlier := skipped_before():
            skipped_by.append(earlier)
        else:
            taken = ahead.take() if ahead else None
            proc, stay = taken or idle.start_idle(WRITER + [directory], group,
                                                  start_new_session=True)  # the terminal's Ctrl-C is ours
            if skipped_by:  # came while it started
                proc.kill()
            try:
                _, err = proc.communicate(WRITE_WORD if taken else None, timeout=SAY_AFTER_S)
            except subprocess.TimeoutExpired:
                sys.stderr.write("innostall: writing the recording's tables on idle CPU "
                                 "(Ctrl-C skips them: the report reads the journal instead)\n")
                _, err = proc.communicate()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if stay:
            stay.end()
    if skipped_by:
        for table in glob.glob(os.path.join(directory, "*.parquet")):  # none half-written is read
            with contextlib.suppress(OSError):
                os.remove(table)
        return skipped_by[0]
    if proc.returncode:
        last = (err.strip().splitlines() or ["no message"])[-1]
        raise UserError(f"the recording's tables could not be written ({last}); "
                        f"its journal is complete and 'innostall report' reads it")
    return None


def write_when_told(directory: str) -> None:
    """The writer started ahead: what writing imports, loaded now; then the tables, once
    the recorder says so on stdin (end of file instead: the recording ended without them)."""
    import pandas  # noqa: F401  (the table builders' frames)
    import pyarrow.parquet  # noqa: F401  (their to_parquet)

    if sys.stdin.readline() == WRITE_WORD:
        write_tables(directory)


if __name__ == "__main__":  # the recorder writes the tables in a process of their own
    if sys.argv[1] == WHEN_TOLD:
        write_when_told(sys.argv[2])
    else:
        write_tables(sys.argv[1])
