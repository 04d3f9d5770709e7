"""innostall watch: stay attached for hours within the budget, keep the last minutes of the
journal in memory, and save a recording of the time around a trigger, as pt-stalk saves
its collections: the history above N, a latch wait above T ms, or SIGUSR1.

A saved recording is a recording like any other (its own directory, journal, tables and
meta.json), whose journal begins with the snapshot before the kept minutes: the loader's
figures are cumulative from the watch's attach, so that snapshot is the base the first
kept interval's growth is taken from. meta.json's "watch" says what triggered it and where
its window begins (from_s); the report shows that window (analysis/window.py), as
`report --from` would. Tables the recorder keeps for the whole recording only (contended
pages, stacks, latches by name) cover the watch from its attach to the saved recording's
end, and the window's report says they are the whole recording's.

After a save, triggers are ignored for the cool-down; after `keep` saves the watch ends.

A save is a recording from its first byte: its meta.json is written before its journal,
saying the save was cut short, and replaced when it ends by what ended it (its time, the
watch's end, a full disk). A watch killed while saving leaves that first meta.json, which
the report reads with the journal written so far. A save the disk refuses ends the watch,
and the watch's last line and exit status say so."""
from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from innostall.format import journal_files
from innostall.format.latch_table_rows import MergedTables
from innostall.format.tables import tables_of

from innostall.errors import UserError

from . import idle, store
from .directory import release_room, reserve_room

SNAPSHOTS = ("interval", "final")
# what a save's first meta.json says, until its end replaces it
CUT_SHORT = ("cut short: the watch stopped before it finished this save (killed, or the host went down); "
             "the journal keeps what was written before")


@dataclass(frozen=True)
class Triggers:
    """What `innostall watch` saves a recording for, and how much of it."""
    history_above: int | None = None
    latch_wait_above_ms: float | None = None
    verdict: str | None = None  # purge's verdict on the kept minutes (analysis/phases.py VERDICTS)
    verdict_every_s: float = 60.0  # how often it is asked: a report of the kept minutes each time
    before_s: float = 120.0  # kept in memory, saved before the trigger
    after_s: float = 60.0  # recorded after it
    cooldown_s: float = 300.0  # after a save's end, no trigger
    keep: int = 5  # saves, after which the watch ends

    def words(self) -> str:
        said = ([f"history above {self.history_above:,}"] if self.history_above is not None else []) + (
            [f"a latch wait above {self.latch_wait_above_ms:g} ms"] if self.latch_wait_above_ms is not None else []) + (
            [f"purge {self.verdict.replace('_', ' ')}"] if self.verdict else [])
        return ", ".join(said + ["SIGUSR1"])


@dataclass
class Saving:
    """A saved recording being written: from the base snapshot to `until_ns`."""
    directory: str
    writer: journal_files.JournalWriter | None  # None until its meta.json is written
    trigger: dict
    until_ns: int
    trigger_ns: int


@dataclass
class Watched:
    """What the watch saw and saved, for the watch directory's meta.json."""
    saved: list[dict] = field(default_factory=list)
    ignored: int = 0  # triggers inside a save or its cool-down


class WatchJournal:
    """The recorder's journal in watch mode (directory.Journal's interface): the lines kept
    for `before_s` in memory, saved into a recording of its own when a trigger fires."""

    def __init__(self, out_dir: str, triggers: Triggers, meta: dict):
        self.out_dir, self.triggers, self.meta = out_dir, triggers, meta
        self.header: list[str] = []  # calibration, attached: every saved recording begins with them
        self.attach_ns = None
        self.ring: collections.deque[tuple[int, list[str]]] = collections.deque()  # (snapshot ns, its lines)
        self.lines: list[str] = []  # since the last snapshot
        # since the attach, merged by the keys of the loader's tables: a saved recording's are whole
        self.latch_tables = MergedTables(tables_of(meta.get("schema", {})).merged_keys)
        self.latch_max: dict[tuple, int] = {}  # each latch's longest wait so far, ns
        self.latch_spike: tuple[float, str] | None = None  # (ms, latch) longer than the trigger's, not yet seen
        self.saving: Saving | None = None
        self.quiet_until_ns = 0
        self.watched = Watched()
        self.tables: list[threading.Thread] = []
        self.signalled = False
        self.failed: str | None = None
        self.done: str | None = None  # why the watch should end (its saves are all made)
        self.saved_bytes = 0
        self.last_snapshot: dict = {"mono_ns": 0}
        self.verdict = VerdictCheck(out_dir, triggers) if triggers.verdict else None
        signal.signal(signal.SIGUSR1, self.on_signal)

    def on_signal(self, signum, frame) -> None:
        self.signalled = True

    @property
    def written(self) -> int:
        """What the saved recordings' journals take, against the size limit."""
        return self.saved_bytes + (self.saving.writer.live_bytes if self.saving else 0)

    def write(self, line: str, rec: dict) -> bool:
        if self.failed:  # the disk refused a save: the watch is ending
            return False
        kind = rec["type"]
        try:
            if kind in ("calibration", "attached"):
                self.header.append(line)
                if kind == "attached":
                    self.attach_ns = rec["mono_ns"]
                    sys.stderr.write("innostall watch: attached, watching\n")
                return True
            if kind == "latch_tables":
                self.latch_tables.add(rec)
                return True
            if kind == "latches":
                self.note_latch_waits(rec)
            self.lines.append(line)
            if self.saving:
                self.saving.writer.write(line)
            if kind in SNAPSHOTS:
                self.at_snapshot(rec)
            return True
        except (OSError, UserError) as e:
            self.save_failed(e)
            return False

    def save_failed(self, error: OSError | UserError) -> None:
        """The disk refused a save's write: the save ends where its journal stops, its
        meta.json says so if it still fits (the room reserved for it), and the watch ends."""
        self.failed = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        saving, self.saving = self.saving, None
        if not saving:
            return
        with contextlib.suppress(OSError):
            if saving.writer:  # None when the disk was full before the journal began
                saving.writer.close()
        seconds = (self.last_snapshot["mono_ns"] - saving.trigger_ns) / 1e9
        reason = f"disk full ({self.failed}) {max(seconds, 0):.0f} s after its trigger"
        # the room kept for the last meta.json: the save's, and the watch's (it ends now, and
        # its meta.json is replaced by one of its size: the room freed holds both)
        release_room(saving.directory)
        release_room(self.out_dir)
        with contextlib.suppress(UserError):
            store.write_meta(saving.directory, self.save_meta(saving, reason))
        self.watched.saved.append({"directory": os.path.basename(saving.directory), **saving.trigger,
                                   "failed": reason})

    def save_meta(self, saving: "Saving", end_reason: str, stop_real_ns: int | None = None) -> dict:
        meta = {**self.meta, "watch": {**saving.trigger, "triggers": self.triggers.words()},
                "end_reason": end_reason, "complete": False}
        if stop_real_ns is not None:
            meta["stop_real_ns"] = stop_real_ns
        meta.pop("max_size", None)
        return meta

    def at_snapshot(self, rec: dict) -> None:
        now, self.last_snapshot = rec["mono_ns"], rec
        self.ring.append((now, self.lines))
        self.lines = []
        # the kept minutes, and the snapshot before them: the base of their first interval
        while len(self.ring) > 1 and self.ring[1][0] <= now - self.triggers.before_s * 1e9:
            self.ring.popleft()
        if self.saving:
            if now >= self.saving.until_ns or rec["type"] == "final":
                self.end_saving(rec, f"saved {self.triggers.after_s:g} s after its trigger"
                                if now >= self.saving.until_ns else self.ended_early(now))
            return
        if self.verdict and self.attach_ns is not None:
            self.verdict.ask(now, self.header, self.ring, {**self.meta, "watch": {
                "from_s": (self.ring[0][0] - self.attach_ns) / 1e9}})
        trigger = self.trigger(rec)
        if not trigger or self.done or rec["type"] == "final":  # nothing is saved after the watch's end
            return
        if now < self.quiet_until_ns:
            self.watched.ignored += 1
            return
        self.begin_saving(trigger, rec)

    def note_latch_waits(self, rec: dict) -> None:
        """A latch whose longest wait grew past the trigger's, from the cumulative rows
        [kind, id, mode, waits, ns, max_ns, address, slots, name, label]."""
        limit = self.triggers.latch_wait_above_ms
        for row in rec.get("latches", []):
            key, longest = tuple(row[:3]), row[5]
            if limit is not None and longest > self.latch_max.get(key, 0) and longest > limit * 1e6:
                if not self.latch_spike or longest / 1e6 > self.latch_spike[0]:
                    self.latch_spike = (longest / 1e6, row[8] if len(row) > 8 and row[8] else "a latch")
            self.latch_max[key] = max(longest, self.latch_max.get(key, 0))

    def trigger(self, rec: dict) -> dict | None:
        """What fired at this snapshot, if anything: {kind, words, value}."""
        fired = None
        history = rec.get("server", {}).get("history", rec.get("counters", {}).get("history_length"))
        limit = self.triggers.history_above
        if limit is not None and history is not None and history > limit:
            fired = {"kind": "history", "value": history, "words": f"history {history:,} above {limit:,}"}
        elif self.latch_spike:
            ms, latch = self.latch_spike
            fired = {"kind": "latch-wait", "value": round(ms, 3),
                     "words": f"a wait of {ms:,.1f} ms on {latch}, above {self.triggers.latch_wait_above_ms:g} ms"}
        elif self.verdict and (detail := self.verdict.found()):
            fired = {"kind": "verdict", "value": self.triggers.verdict, "words": f"purge {detail}"}
        elif self.signalled:
            fired = {"kind": "signal", "value": None, "words": "SIGUSR1"}
        self.latch_spike, self.signalled = None, False
        return fired

    def ended_early(self, now: int, why: str = "the watch ended") -> str:
        seconds = (now - self.saving.trigger_ns) / 1e9 if self.saving else 0.0
        return f"{why} {seconds:.0f} s after its trigger, before its {self.triggers.after_s:g} s after it"

    def begin_saving(self, trigger: dict, rec: dict) -> None:
        number = len(self.watched.saved) + 1
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(rec.get("real_ns", time.time_ns()) / 1e9))
        directory = os.path.join(self.out_dir, f"{number:03d}-{stamp}-{trigger['kind']}")
        base_ns, now = self.ring[0][0], rec["mono_ns"]
        start = self.attach_ns if self.attach_ns is not None else base_ns
        trigger = {**trigger, "at_s": round((now - start) / 1e9, 3),
                   "from_s": round((base_ns - start) / 1e9, 3) if len(self.ring) > 1 else 0.0}
        os.mkdir(directory, 0o700)
        self.saving = Saving(directory, None, trigger, now + round(self.triggers.after_s * 1e9), now)
        # a recording from its first byte: meta.json before the journal, and room for its last one
        store.write_meta(directory, self.save_meta(self.saving, CUT_SHORT))
        reserve_room(directory)
        self.saving.writer = kept_journal(directory, self.header, self.ring)
        sys.stderr.write(f"innostall watch: {trigger['words']} at {trigger['at_s']:,.0f} s: saving "
                         f"{(now - base_ns) / 1e9:,.0f} s before it and {self.triggers.after_s:g} s after "
                         f"into {directory}\n")

    def end_saving(self, rec: dict, end_reason: str, tables: bool = True) -> None:
        """The save ended: its latch tables, its meta.json saying why, and its Parquet
        tables written aside (unless the watch ends at once). OSError or UserError from
        the disk leave self.saving for save_failed."""
        saving = self.saving
        if latch_tables := self.latch_tables.record():
            saving.writer.write(json.dumps(latch_tables, separators=(",", ":")) + "\n")
        saving.writer.close()
        release_room(saving.directory)
        meta = self.save_meta(saving, end_reason, rec.get("real_ns"))
        store.write_meta(saving.directory, meta)
        self.saving = None
        self.saved_bytes += journal_files.disk_bytes(saving.directory)
        self.watched.saved.append({"directory": os.path.basename(saving.directory), **saving.trigger})
        self.quiet_until_ns = rec["mono_ns"] + round(self.triggers.cooldown_s * 1e9)
        if not tables:
            return
        thread = threading.Thread(target=write_tables, args=(saving.directory, meta), daemon=True)
        thread.start()
        self.tables.append(thread)
        if len(self.watched.saved) >= self.triggers.keep:
            self.done = f"{self.triggers.keep} recording(s) saved (watch --keep)"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
        if self.verdict:
            self.verdict.close()


class VerdictCheck:
    """Purge's verdict on the kept minutes, asked every verdict_every_s: they are written
    out as a recording (the base snapshot first, as a save would) and their purge phases read
    by a process of their own on idle CPU (analysis/purge_phases.py), for the recorder keeps
    pandas out of its memory. Two minutes' phases take about a second of CPU: asked every
    minute, 2% of a core the server does not want. The answer comes at a later snapshot: the verdict of the kept minutes'
    last phase, when it is the one asked for."""

    def __init__(self, out_dir: str, triggers: Triggers):
        self.directory = os.path.join(out_dir, ".verdict")
        self.wanted, self.every_ns = triggers.verdict, round(triggers.verdict_every_s * 1e9)
        self.asked_ns, self.thread, self.answer = None, None, None

    def ask(self, now: int, header: list[str], ring, meta: dict) -> None:
        """The kept minutes reported, if it is time and no report is running; meta is the
        recording's, with where its window begins (watch.from_s)."""
        if (self.thread and self.thread.is_alive()) or len(ring) < 3 or (
                self.asked_ns is not None and now - self.asked_ns < self.every_ns):
            return
        self.asked_ns = now
        shutil.rmtree(self.directory, ignore_errors=True)
        os.mkdir(self.directory, 0o700)
        kept_journal(self.directory, header, ring).close()
        store.write_meta(self.directory, {**meta, "complete": False})
        self.thread = threading.Thread(target=self.report, daemon=True)
        self.thread.start()

    def report(self) -> None:
        # the analysis's function in a child process (analysis/purge_phases.py): the recorder
        # imports no analysis, and pandas stays out of its memory
        status, out = idle.run_idle([sys.executable, "-m", "innostall.analysis.purge_phases", self.directory])
        try:
            phases = json.loads(out) if status == 0 else []
        except ValueError:
            phases = []
        if phases and phases[-1].get("verdict") == self.wanted:
            self.answer = phases[-1].get("detail")

    def found(self) -> str | None:
        """The last phase's words, once, when its verdict is the one asked for."""
        answer, self.answer = self.answer, None
        return answer

    def close(self) -> None:
        if self.thread:
            self.thread.join()
        shutil.rmtree(self.directory, ignore_errors=True)


def kept_journal(directory: str, header: list[str], ring) -> journal_files.JournalWriter:
    """A directory's journal holding the header lines and the kept minutes, the base
    snapshot's first: a saved recording's, or the kept minutes' copy the verdict is asked
    of. The writer is left open for what follows."""
    writer = journal_files.JournalWriter(directory)
    for line in header + [line for _, lines in ring for line in lines]:
        writer.write(line)
    return writer


def write_tables(directory: str, meta: dict) -> None:
    """A saved recording's tables, on idle CPU, then its meta.json says it is whole; if they
    cannot be written, its journal still is, and the report reads it."""
    if idle.run_idle([sys.executable, "-m", "innostall.collector.recorder.store", directory])[0] == 0:
        store.write_meta(directory, {**meta, "complete": True})


def finish_watch(journal: WatchJournal, meta: dict, at_once: bool = False,
                 give_up: Callable[[], str | None] = lambda: None) -> dict:
    """The watch's end: a save still being written is ended where the watch ended, the
    tables being written are waited for until a signal comes (give_up: its name) and not
    at all when a second signal ended the watch at once (a save's report reads its
    journal), and the watch directory's meta.json lists what was saved and what failed.
    Returns that meta."""
    if journal.saving:
        why = f"the watch ended ({meta['end_reason']})" if meta.get("end_reason") else "the watch ended"
        try:
            journal.end_saving(journal.last_snapshot, journal.ended_early(journal.last_snapshot["mono_ns"], why),
                               tables=not at_once)
        except (OSError, UserError) as e:
            journal.save_failed(e)
    for thread in journal.tables if not at_once else []:
        while thread.is_alive() and not give_up():
            thread.join(0.1)
    failed = [s for s in journal.watched.saved if "failed" in s]
    meta = {**meta, "watch": {"triggers": journal.triggers.words(), "before_s": journal.triggers.before_s,
                              "after_s": journal.triggers.after_s, "cooldown_s": journal.triggers.cooldown_s,
                              "keep": journal.triggers.keep, "saved": journal.watched.saved,
                              "ignored": journal.watched.ignored},
            "complete": not failed and not at_once, "tables": "none: a watch's recordings are in its subdirectories"}
    if failed:
        meta["end_reason"] = f"{failed[0]['directory']}: {failed[0]['failed']}"
    store.write_meta(journal.out_dir, meta)
    return meta


def saved_words(meta: dict, out_dir: str) -> str:
    """What the watch saved, and what it failed to save, for its last line."""
    saved = meta["watch"]["saved"]
    if not saved:
        return f"watched, nothing triggered ({meta['watch']['triggers']}); nothing saved in {out_dir}"
    whole = [s for s in saved if "failed" not in s]
    said = [f"saved {len(whole)} recording(s) in {out_dir}" + (": " if whole else "") + "; ".join(
        f"{s['directory']} ({s['words']})" for s in whole)]
    said += [f"FAILED to save {s['directory']} ({s['words']}): {s['failed']}; its journal keeps what "
             "was written before, and 'innostall report' reads it" for s in saved if "failed" in s]
    return "; ".join(said)


def save_failed(meta: dict) -> bool:
    """Whether a trigger's save failed: the watch then exits non-zero."""
    return any("failed" in s for s in meta["watch"]["saved"])
