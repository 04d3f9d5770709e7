"""A watch's save under faults (issue 49): a recording from its first byte (meta.json before
its journal), a full disk that ends the save and the watch and says so, and a watch ended
at once by a second signal. Fed a journal as the recorder's follow() feeds it, as in
test_watch.py; the signals themselves are tried in test_stopping.py."""
from __future__ import annotations

import errno
import json
import os

from innostall.analysis import recording, window
from innostall.collector.recorder import watch
from innostall.format import journal_files

from recordings import meta
from test_watch import story

TRIGGERS = watch.Triggers(history_above=3000, before_s=10, after_s=8)


def feed(directory, records, triggers=TRIGGERS, stop=lambda record, journal: False):
    """The records through a WatchJournal until one is refused or stop() says so: (the
    journal, its meta, whether every line was taken)."""
    described = meta(walks=False)
    directory.mkdir(exist_ok=True)
    with watch.WatchJournal(str(directory), triggers, described) as journal:
        for record in records:
            if stop(record, journal):
                return journal, described, True
            if not journal.write(json.dumps(record) + "\n", record):
                return journal, described, False
    return journal, described, True


def test_a_save_killed_as_it_is_written_is_a_recording_saying_it_was_cut_short(tmp_path):
    # the recorder killed (kill -9) a few intervals into the save: nothing runs after
    journal, _, _ = feed(tmp_path, story(), stop=lambda record, journal: bool(
        journal.saving and record["mono_ns"] >= journal.saving.trigger_ns + 3 * 10**9))
    save = tmp_path / os.listdir(tmp_path)[0]
    rec = recording.load(str(save))
    assert rec.meta["complete"] is False and rec.meta["end_reason"] == watch.CUT_SHORT
    cut = window.saved_window(rec)
    assert cut.duration_s >= 3 and cut.counters["interval"].nunique() >= 3


def test_a_full_disk_ends_the_save_and_the_watch_and_the_watch_says_so(tmp_path, monkeypatch):
    write = journal_files.JournalWriter.write
    written = []

    def filling(self, line):
        if self.directory != str(tmp_path) and len(written) > 30:  # a save's journal, once it has 30 lines
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written.append(line)
        write(self, line)

    monkeypatch.setattr(journal_files.JournalWriter, "write", filling)
    journal, described, took_all = feed(tmp_path, story())
    assert not took_all and journal.failed == os.strerror(errno.ENOSPC)  # follow() then stops the loader
    said = watch.finish_watch(journal, {**described, "end_reason": "signal"})
    assert watch.save_failed(said) and said["complete"] is False
    failed = said["watch"]["saved"][0]
    assert failed["failed"].startswith("disk full (No space left on device)")
    words = watch.saved_words(said, str(tmp_path))
    assert f"FAILED to save {failed['directory']}" in words and "saved 0 recording(s)" in words
    assert said["end_reason"].startswith(f"{failed['directory']}: disk full")
    rec = recording.load(str(tmp_path / failed["directory"]))  # what it holds reads
    assert rec.meta["end_reason"] == failed["failed"] and not rec.meta["complete"]
    assert not os.path.exists(tmp_path / failed["directory"] / ".reserve")


def test_a_watch_ended_at_once_inside_a_save_ends_the_save_saying_why(tmp_path):
    journal, described, _ = feed(tmp_path, story(), stop=lambda record, journal: bool(
        journal.saving and record["mono_ns"] >= journal.saving.trigger_ns + 2 * 10**9))
    seconds = (journal.last_snapshot["mono_ns"] - journal.saving.trigger_ns) / 1e9  # to its last interval
    said = watch.finish_watch(journal, {**described, "end_reason": "ended at once by a second SIGINT"},
                              at_once=True)
    saved = said["watch"]["saved"][0]
    assert said["complete"] is False and not journal.tables  # no tables waited for
    rec = recording.load(str(tmp_path / saved["directory"]))
    assert rec.meta["end_reason"] == (f"the watch ended (ended at once by a second SIGINT) {seconds:.0f} s "
                                      "after its trigger, before its 8 s after it")
    assert not watch.save_failed(said)


def test_a_disk_full_as_a_save_begins_is_said_as_a_failed_save(tmp_path, monkeypatch):
    def no_room(directory):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(watch, "reserve_room", no_room)  # its meta.json fitted, the room kept for the last did not
    journal, described, took_all = feed(tmp_path, story())
    said = watch.finish_watch(journal, {**described, "end_reason": "disk full"})
    failed = said["watch"]["saved"][0]
    assert not took_all and failed["failed"].startswith("disk full (No space left on device) 0 s after its trigger")
    assert "FAILED to save" in watch.saved_words(said, str(tmp_path))
    saved_meta = json.loads((tmp_path / failed["directory"] / "meta.json").read_text())
    assert saved_meta["end_reason"] == failed["failed"] and saved_meta["complete"] is False
