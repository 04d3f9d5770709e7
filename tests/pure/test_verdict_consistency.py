"""The verdict never contradicts the recording it summarizes : short events keep
their words, every figure holds over its phase's whole span, the text, JSON and HTML say
the same sentences, and a latch is named whole and alike everywhere. The checker
(analysis/checks/verdict_check.py) is run on every stored recording and on synthetic ones written
the way the recorder writes them (tests/recordings.py); and shown to catch the
contradictions a user found."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from markupsafe import escape

import recording_check
import recordings
from conftest import REPO
from innostall.analysis import purge_history, recording, summary, views
from innostall.analysis.checks import verdict_check
from innostall.analysis.wording import numbers
from innostall.analysis.wording.numbers import shorten
from innostall.analysis.wording.phases import flush_bound_words
from recordings import purge_journal, view

STORED = recording_check.STORED
STORED_CATCH_UP = REPO / "tests" / "data" / "catch-up-server-reading"  # the server's history read at snapshots
# MariaDB 11.4.5: a snapshot held 18 s while 4 threads updated 20,000 rows for 10 s; at its
# commit purge cleared the 41,477 transactions of history within one interval
CATCH_UP = REPO / "tests" / "data" / "pin-catch-up"


def with_peaks(records: list[dict], peaks: list[int]) -> list[dict]:
    """The history's peak in each interval, as the recorder keeps it (a gauge, per interval)."""
    for snapshot, peak in zip((r for r in records if r["type"] in ("interval", "final")), peaks):
        snapshot["counters"]["history_length_peak"] = peak
    return records


def issue_steps() -> tuple[list[dict], list[int]]:
    """The case a user met on MariaDB 11.4.5: a snapshot opened at 6 s pins purge while updates add
    64,267 transactions of history (then stop: the history holds still); it commits, and
    within the next interval purge clears the whole backlog in 520 batches. That interval's
    level is still the backlog (the peak, read before the drain); its end is 0."""
    snapshot = view(14306, 6.0, 0, connection_id=9, user="app", statement="SELECT COUNT(*) FROM sbtest1")
    steps, peaks = [{"history": 0} for _ in range(6)], [0] * 6
    for i in range(1, 24):
        level = min(64267, 6427 * i)
        steps.append({"history": level, "purge_batches": 1, "purge_empty_batches": 1, "views": [snapshot]})
        peaks.append(level)
    steps.append({"history": 0, "purge_batches": 520, "purge_pages": 65916})
    peaks.append(64267)
    return steps + [{} for _ in range(6)], peaks + [0] * 6


def write(tmp_path, records, name="rec") -> Path:
    return recordings.write(tmp_path / name, records)


def told(directory: Path) -> dict:
    return summary.summary(recording.load(str(directory)))


def checked(directory: Path) -> dict:
    """The summary of a recording whose report the checker holds (verdict_check.check), read
    once for both."""
    read = verdict_check.read(str(directory))
    assert verdict_check.contradictions(read) == []
    return read.summed


# --- short events keep their words ---------------------------------------------------

def test_a_one_interval_catch_up_after_a_pin_reads_pinned_then_caught_up(tmp_path):
    directory = write(tmp_path, with_peaks(purge_journal(issue_steps()[0]), issue_steps()[1]))
    phases = checked(directory)["purge"]["phases"]
    assert [p["verdict"] for p in phases] == ["idle", "pinned", "catching_up", "idle"]
    pinned, catch_up = phases[1:3]
    assert (pinned["from_s"], pinned["to_s"], catch_up["to_s"]) == (6.0, 29.0, 30.0)
    # what happened over the phase, and true at its end: no rate of its last seconds
    assert pinned["detail"].endswith("history 0 → 64,267 over 23.0 s (+2,794/s); at its end the view "
                                     "held 64,267 of 64,267 transactions of history")
    assert "growing" not in pinned["detail"]
    # the interval's level is the backlog it cleared, its end what was left
    assert catch_up["detail"] == "catching up: history 64,267 → 0 over 1.0 s (-64,267/s), 127 pages per batch"


def test_a_catch_up_too_short_to_be_a_phase_is_named_in_the_pinned_phase(tmp_path):
    """A pin of 4,000 transactions over a history of 20,000, and the recording ends one
    interval after the commit: that catch-up moved too little of the history to stand alone,
    so the pinned phase says it, and that the view closed."""
    snapshot = view(77, 6.5, 20000)
    steps = [{"history": 20000, "purge_batches": 20, "purge_pages": 2000} for _ in range(6)]
    steps += [{"history": 20000 + 500 * i, "purge_batches": 1, "purge_empty_batches": 1, "views": [snapshot]}
              for i in range(1, 9)]
    steps.append({"history": 20500, "purge_batches": 40, "purge_pages": 4000})
    directory = write(tmp_path, purge_journal(steps))
    pinned = checked(directory)["purge"]["phases"][-1]
    assert (pinned["verdict"], pinned["from_s"], pinned["to_s"]) == ("pinned", 6.0, 15.0)
    assert pinned["detail"].endswith("history 20,000 → 24,000 over 8.0 s (+500/s); at 14.0 s the view "
                                     "held 24,000 of 24,000 transactions of history; the view closed "
                                     "between 14.0 and 15.0 s; at 14.0–15.0 s purge caught up: "
                                     "4,000 undo pages in 40 batches, history 24,000 → 20,500 over "
                                     "1.0 s (-3,500/s)")
    assert [(e["verdict"], e["from_s"], e["to_s"]) for e in pinned["events"]] == [("catching_up", 14.0, 15.0)]


def test_a_brief_stall_and_a_burst_are_named_inside_the_phase_that_took_them_in(tmp_path):
    steady = {"history": 5000, "purge_batches": 30, "purge_pages": 3000}
    steps = [steady] * 6 + [{"history": 5000, "purge_batches": 1, "purge_empty_batches": 1}] + [steady] * 6
    steps += [{"history": 6000, "purge_batches": 30, "purge_pages": 3000}] + [steady] * 6
    directory = write(tmp_path, purge_journal(steps))
    [phase] = checked(directory)["purge"]["phases"]
    assert phase["verdict"] == "keeping_up"
    assert phase["detail"].endswith("; at 6.0–7.0 s every purge batch found nothing to purge; at 13.0–14.0 s "
                                    "the history rose: history 5,000 → 6,000 over 1.0 s (+1,000/s)")
    # the interval after the stall is no catch-up: the history did not fall in it
    assert [e["verdict"] for e in phase["events"]] == ["pinned", "falling_behind"]


def test_a_pinned_phase_that_took_in_working_intervals_does_not_say_every_batch_found_nothing(tmp_path):
    """Without the history length (format 1), a stretched hour of stall-then-catch-up: each
    catch-up is too small a share of all the work to be a phase of its own."""
    hour = recordings.stretched(REPO / "tests" / "data" / "purge-stall", tmp_path / "hour", 300)
    phases = checked(hour)["purge"]["phases"]
    pinned = [p for p in phases if p["verdict"] == "pinned"]
    assert pinned and all("every purge batch found nothing" not in p["detail"] for p in pinned if p["events"])
    assert pinned[0]["detail"].startswith("pinned: purge batches found nothing to purge in 18 of 19 intervals")
    assert pinned[0]["detail"].endswith("; at 18.0–19.0 s purge caught up: 146,149 undo pages in 1,152 batches")


def test_purge_not_recorded_is_said_so_never_that_no_batch_ran(tmp_path):
    """A recording made with the latch probes alone (the hot-rows test's): nothing can be
    said of purge, least of all that it was idle or that no batch ran."""
    delayed = {"history": None, "dml_delays": 40, "dml_delay_us": 80000}
    records = purge_journal([{"history": None} for _ in range(6)] + [delayed] * 3)
    directory = write(tmp_path, records)
    meta = json.loads((directory / "meta.json").read_text())
    for probe in meta["probes"]:
        probe["attached"] = probe["attached"] and probe["name"] != "purge_batch"
    (directory / "meta.json").write_text(json.dumps(meta))
    read = verdict_check.read(str(directory))
    told = read.summed
    phase, throttled = told["purge"]["phases"]  # the DML delay, measured, is still told
    assert (phase["verdict"], phase["from_s"], throttled["verdict"]) == ("not_recorded", 0.0, "throttled")
    assert "purge_batch" in phase["detail"] and "2,000 µs × 120 row operations" in throttled["detail"]
    assert not any("no purge batch" in f.lower() for f in told["findings"])
    assert "Purge: not recorded (probe purge_batch)" in read.text and "no purge batch ran" not in read.text
    assert verdict_check.contradictions(read) == []


# --- every figure checked against the tables -----------------------------------------

@pytest.mark.parametrize("directory", STORED, ids=[p.name for p in STORED])
def test_no_stored_recording_is_contradicted_by_its_report(directory):
    assert verdict_check.check(str(directory)) == []


@pytest.mark.parametrize("make", ["pinned_then_catch_up", "synthetic", "throttled", "no_history"])
def test_no_synthetic_recording_is_contradicted_by_its_report(tmp_path, make):
    if make == "synthetic":
        directory = recordings.synthetic(tmp_path / "rec")
    elif make == "pinned_then_catch_up":
        directory = write(tmp_path, recordings.pinned_then_catch_up())
    elif make == "throttled":
        snapshot = view(555, 1.0, 2000)
        steps = [{"history": 2000, "purge_batches": 5, "purge_pages": 600} for _ in range(4)]
        steps += [{"history": 2100 + 100 * i, "purge_batches": 1, "purge_empty_batches": 1, "dml_delays": 2063,
                   "dml_delay_us": 2000 * 2063, "views": [snapshot]} for i in range(5)]
        directory = write(tmp_path, purge_journal(steps))
    else:
        directory = write(tmp_path, purge_journal([{"purge_batches": 1, "purge_empty_batches": 1}] * 6))
    assert verdict_check.check(str(directory)) == []


def swallowed(tmp_path) -> tuple[dict, object]:
    """The report the user met: the pinned phase runs on through the catch-up, in the old words."""
    directory = write(tmp_path, with_peaks(purge_journal(issue_steps()[0]), issue_steps()[1]))
    table = purge_history.purge_table(recording.load(str(directory)))
    pinned = told(directory)["purge"]["phases"][1]
    return {**pinned, "to_s": 30.0}, table


def test_the_checker_finds_the_contradictions_a_user_met(tmp_path):
    phase, table = swallowed(tmp_path)
    old = {**phase, "detail": phase["detail"].split("): ")[0] + "): holds 64,267 of 64,267 transactions "
                                                                   "of history, growing +0/s"}
    problems = verdict_check.phase_problems(old, table)
    assert "pages is 0, its intervals say 65916" in problems  # the figures of the pin alone
    assert any(p.startswith("says +0 that no claim accounts for") for p in problems), problems
    # the words of the pin, over a span that runs on past it: 'at its end' is no longer true
    problems = verdict_check.phase_problems(phase, table)
    assert ("says 'at its end the view held 64,267 of 64,267 transactions of history': its intervals "
            "say otherwise") in problems


def test_a_level_over_intervals_whose_history_was_unknown_says_so(tmp_path):
    """The governor detached the history's probes for 3 of an idle phase's 7 intervals:
    'no history' is said of the 4 it was read in, and the checker insists on it."""
    whole, none = {"governor.attached_ns.history": 10**9}, {"governor.attached_ns.history": 0}
    steps = [{"history": 0, **whole} for _ in range(3)] + [{"history": None, **none} for _ in range(3)]
    steps.append({"history": 0, **whole})
    directory = write(tmp_path, purge_journal(steps))
    [phase] = checked(directory)["purge"]["phases"]
    assert phase["detail"] == "idle: no purge batch ran, no history (read in 4 of 7 intervals)"
    table = purge_history.purge_table(recording.load(str(directory)))
    unsaid = {**phase, "detail": "idle: no purge batch ran, no history"}
    assert any("not saying it was unknown in 3 of its 7 intervals" in p
               for p in verdict_check.phase_problems(unsaid, table))


def test_the_checker_reads_each_claim_against_its_own_span(tmp_path):
    _, table = swallowed(tmp_path)
    phases = summary.summary(recording.load(str(tmp_path / "rec")))["purge"]["phases"]
    idle = {**phases[3], "from_s": 29.0}  # now spans the catch-up: 'no purge batch ran' is false
    assert any("says 'no purge batch ran'" in p for p in verdict_check.phase_problems(idle, table))
    catch_up = {**phases[2], "detail": phases[2]["detail"].replace("1.0 s (-64,267/s)", "1.0 s (-64,000/s)")}
    assert any("says 'history 64,267 → 0 over 1.0 s (-64,000/s)'" in p
               for p in verdict_check.phase_problems(catch_up, table))
    padded = {**phases[2], "detail": phases[2]["detail"] + "; in 7 seconds"}
    assert any("says 7 that no claim accounts for" in p for p in verdict_check.phase_problems(padded, table))


def test_text_and_html_say_the_same_sentences_as_json(tmp_path):
    read = verdict_check.read(str(recordings.synthetic(tmp_path / "rec")))
    said, page, report = read.summed, read.html, read.text
    # the checker's one reading is what the CLI's report prints: the tests that take it do too
    assert report == views.text_report(read.rec) and said == summary.summary(read.rec)
    assert verdict_check.view_problems(said, report, page) == []
    assert said["findings"] and all(f"  finding: {f}" in report.splitlines() for f in said["findings"])
    altered = report.replace("every purge batch found nothing", "every purge batch found little")
    assert verdict_check.view_problems(said, altered, page)
    assert verdict_check.view_problems(said, report, page.replace(str(escape(said["findings"][-1])), ""))


# --- names whole, true and the same everywhere ----------------------------------------

LONG_LATCH = "condition's mutex retaken in net_real_write ← net_flush ← net_write_command"


def named_recording(tmp_path) -> Path:
    """The synthetic stall with latches, one of them named by where it was taken (long)."""
    records = recordings.synthetic_journal(6, walks=True, latches=True)
    for r in records:
        if r["type"] == "latches":
            r["latches"][1][8] = LONG_LATCH
    return write(tmp_path, records)


def test_the_finding_names_the_hot_block_as_the_latch_table_does(tmp_path):
    read = verdict_check.read(str(named_recording(tmp_path)))
    rec, said = read.rec, read.summed
    block = "block 5:3 sbtest/sbtest1 PRIMARY"
    assert block in list(rec.latches["name"])
    assert said["block_lock"]["top_pages"][0]["name"] == block
    [latches] = [f for f in said["findings"] if f.startswith("Threads waited")]
    assert f"% of that time was on one page, {block}: a hot spot" in latches
    assert "space 5 page 3" not in json.dumps(said)
    assert re.search(r"^\s+5\s+3\s+\d+\s+[\d.]+\s+block 5:3 sbtest/sbtest1 PRIMARY$", read.text, re.M)
    assert verdict_check.contradictions(read) == []


def test_names_are_shortened_only_at_word_boundaries_and_whole_in_json_and_html(tmp_path):
    read = verdict_check.read(str(named_recording(tmp_path)))
    report = read.text
    assert LONG_LATCH not in report  # too long for its column ...
    cut = shorten(LONG_LATCH, 48)
    assert cut == "condition's mutex retaken in net_real_write…"
    assert f"  {cut}" in report and "net_real_write ← ne " not in report  # ... cut between words
    assert all(LONG_LATCH.startswith(c.rstrip("…")) for c in re.findall(r"condition's[^…]*…", report))
    assert LONG_LATCH in [t["name"] for t in read.told["latches"]["top"]]  # whole in JSON
    assert f'title="{escape(LONG_LATCH)}"' in read.html  # and in the HTML title


def test_a_long_statement_is_cut_between_words_and_whole_in_json_and_the_html_title(tmp_path):
    statement = "SELECT " + ", ".join(f"SUM(column_number_{i})" for i in range(12)) + " FROM sbtest1"
    snapshot = view(4321, 0.5, 1000, connection_id=17, user="app", statement=statement)
    steps = [{"history": 1000 + 800 * i, "purge_batches": 1, "purge_empty_batches": 1, "views": [snapshot]}
             for i in range(1, 8)]
    read = verdict_check.read(str(write(tmp_path, purge_journal(steps))))
    [phase] = read.summed["purge"]["phases"]
    shown = re.search(r'now running "([^"]*)"', phase["detail"])[1]
    assert shown.endswith("…") and statement.startswith(shown[:-1]) and statement[len(shown) - 1] == " "
    assert phase["figures"]["views"][0]["statement"] == statement
    assert f'title="connection 17 running {escape(statement)}"' in read.html
    assert verdict_check.contradictions(read) == []


def test_shorten_keeps_words_whole():
    assert shorten("block 8:4 sbtest/sbtest1 PRIMARY", 40) == "block 8:4 sbtest/sbtest1 PRIMARY"
    assert shorten("block 8:4 sbtest/sbtest1 PRIMARY", 24) == "block 8:4…"
    assert shorten("SELECT  a,\n b FROM t WHERE x = 1", 20) == "SELECT a, b FROM t…"
    assert shorten("a_single_word_that_is_long tail", 10) == "a_single_word_that_is_long…"
    assert shorten("mutex locked in rw_pr_wrlock ← MDL_map::find_or_insert", 40) == "mutex locked in rw_pr_wrlock…"


# --- a real recording of the catch-up, when one is at hand ----------------------------

def test_a_real_catch_up_after_a_pin_reads_as_one():
    phases = checked(CATCH_UP)["purge"]["phases"]
    pins = [i for i, p in enumerate(phases) if p["verdict"] == "pinned"]
    assert pins, [p["detail"] for p in phases]
    caught_up = [phases[i + 1]["verdict"] == "catching_up" if i + 1 < len(phases) else False
                 for i in pins]
    said_inside = [any(e["verdict"] == "catching_up" for e in phases[i]["events"]) for i in pins]
    assert any(a or b for a, b in zip(caught_up, said_inside)), [p["detail"] for p in phases]


def test_two_moments_a_tenth_apart_are_told_apart():
    """A final snapshot taken 16 ms after the last interval's: 'between 9.0 and 9.0 s' said
    nothing, and the checker could not place it (a fresh root's MySQL 9.7.4 recording)."""
    assert numbers.between(28.0, 29.0) == "between 28.0 and 29.0 s"
    assert numbers.between(9.0, 9.016) == "between 9.000 and 9.016 s"


def test_a_figure_rounded_twice_is_still_said():
    """A rate of -26.5004/s is kept as -26.5 and printed '-26' (half to even): the words
    are true to the figure the JSON holds, and the checker allows for that rounding, as
    the last fresh root's CI showed it must (history 60 → 7 over 1.99997 s)."""
    real = (7 - 60) / 1.99997
    assert f"{round(real, 3):+,.0f}" == "-26"
    assert verdict_check.said("-26", real) and verdict_check.said("-27", real)
    assert not verdict_check.said("-25", real) and not verdict_check.said("-28", real)
    assert verdict_check.said("2.000", 2.0004) and not verdict_check.said("2.000", 2.0006)


def test_block_waits_on_pages_being_written_are_the_disks_not_a_hot_spot(tmp_path):
    records = recordings.synthetic_journal(6, walks=False, latches=True)
    for r in records:
        if r["type"] == "interval":  # four fifths of the block-latch time on pages being written
            r["counters"].update(block_write_waits=r["counters"]["block_waits_x"], block_read_wait_ns=0,
                                 block_write_wait_ns=r["counters"]["block_wait_ns"] * 4 // 5)
    read = verdict_check.read(str(write(tmp_path, records)))
    said = read.summed
    [latches] = [f for f in said["findings"] if f.startswith("Threads waited")]
    assert "was on pages being written to disk" in latches and "hot spot" not in latches
    assert said["block_lock"]["page_write_wait_s"] >= 0.5 * said["block_lock"]["total_wait_s"]
    assert verdict_check.contradictions(read) == []
    first = latches[:latches.index(").") + 2]
    said["findings"] = [first + " 85% of that time was on one page, block 5:3 sbtest/sbtest1 PRIMARY: a hot spot "
                        "(hot rows, a small table or an index root)."]
    assert verdict_check.finding_problems(said, read.rec) != []


def test_a_phase_is_flush_bound_for_waits_on_pages_being_written_from_a_tenth_of_its_time():
    quiet = {"waits": 0, "wait_s": 0.0, "open_at_end": 0, "open_s": 0.0}
    phase = {"seconds": 10.0, "log_room": quiet, "page_writes": {"waits": 8, "wait_s": 1.0}}
    assert flush_bound_words(phase) == "; flush-bound: threads waited 1.0 s in 8 waits on pages being written to disk"
    assert flush_bound_words({**phase, "page_writes": {"waits": 8, "wait_s": 0.9}}) == ""
    both = {**phase, "log_room": {**quiet, "waits": 3, "wait_s": 2.0, "open_at_end": 1, "open_s": 4.0}}
    assert flush_bound_words(both) == ("; flush-bound: writers waited 2.0 s in 3 waits for the log to make room, "
                                       "1 still waiting at its end (4.0 s so far), threads waited 1.0 s in 8 waits "
                                       "on pages being written to disk")
    waiting = {**phase, "page_writes": {"waits": 0, "wait_s": 0.0, "open_at_end": 2, "open_s": 3.0}}
    assert flush_bound_words(waiting) == ("; flush-bound: threads waiting on pages being written to disk, "
                                          "2 still waiting at its end (3.0 s so far)")


def test_waits_for_a_free_page_are_said_in_the_phase_and_a_finding_the_checker_holds(tmp_path):
    steps = [{"history": 100, "purge_batches": 5, "purge_pages": 50}] * 2 + \
        [{"history": 100, "purge_batches": 5, "purge_pages": 50, "free_page_waits": 6,
          "free_page_wait_ns": 4 * 10**9}] * 3
    probes = [*recordings.meta(False)["probes"], {"name": "free_page_wait", "attached": True, "fallback": False,
                                                   "symbol": "pthread_cond_timedwait", "offset": 4, "reason": None}]
    directory = recordings.write(tmp_path / "rec", purge_journal(steps), probes=probes)
    said = checked(directory)
    assert {k: said["flushing"]["free_page"][k] for k in ("waits", "wait_s")} == {"waits": 18, "wait_s": 12.0}
    [phase] = said["purge"]["phases"]
    assert phase["detail"].endswith("; flush-bound: threads waited 12.0 s in 18 waits for a free page")
    assert any(f.startswith("Threads waited 12.0 s for a free page in the buffer pool (18 waits)")
               for f in said["findings"])
    table = purge_history.purge_table(recording.load(str(directory)))
    tampered = {**phase, "detail": phase["detail"].replace("18 waits", "19 waits")}
    assert verdict_check.phase_problems(tampered, table) != []


def test_a_log_room_wait_split_between_the_page_cleaners_and_the_writers_own_checkpoint(tmp_path):
    steps = [{"history": 100, "purge_batches": 5, "purge_pages": 50}] * 2 + \
        [{"history": 100, "purge_batches": 5, "purge_pages": 50, "log_room_waits": 3, "log_room_wait_ns": 2 * 10**9,
          "log_room_cleaner_waits": 1, "log_room_cleaner_wait_ns": 5 * 10**8}] * 3
    attached = {"attached": True, "fallback": False, "offset": 0, "reason": None}
    probes = [*recordings.meta(False)["probes"],
              {"name": "log_room_wait", "symbol": "_Z22buf_flush_wait_flushedm", **attached},
              {"name": "log_room_cleaner", "symbol": "_ZL14buf_flush_waitm", **attached}]
    directory = recordings.write(tmp_path / "rec", purge_journal(steps), probes=probes)
    said = told(directory)
    assert said["flushing"]["log_room"]["cleaners"] == {"waits": 3, "wait_s": 1.5, "own_s": 4.5}
    [finding] = [f for f in said["findings"] if f.startswith("Writers waited 6.0 s for the log to make room (9 waits)")]
    assert "1.5 s of it in 3 waits for the page cleaners" in finding and "4.5 s writing the log" in finding
    rec = recording.load(str(directory))
    assert verdict_check.finding_problems(said, rec) == []
    tampered = {**said, "findings": [finding.replace("4.5 s writing", "1.5 s writing")]}
    assert verdict_check.finding_problems(tampered, rec) != []


def test_the_sessions_own_recordings_are_found_and_checked(tmp_path):
    """What conftest.py checks at every session's end: the recordings the recorder wrote
    during it (its journal and its loader's log beside them, a server's pid no stored one
    has), each checked once."""
    made = tmp_path / "test_x0" / "rec"
    shutil.copytree(STORED_CATCH_UP, made)
    meta = json.loads((made / "meta.json").read_text())
    meta["target"]["pid"] = max(json.loads((d / "meta.json").read_text())["target"]["pid"] for d in STORED) + 1
    (made / "meta.json").write_text(json.dumps(meta))
    (made / "journal.jsonl").write_text("")
    (made / "loader.log").write_text("")
    shutil.copytree(made, tmp_path / "copied", ignore=shutil.ignore_patterns("loader.log"))  # no recorder's log
    assert recording_check.made_under(tmp_path) == [made.resolve()]
    assert recording_check.check_all([made.resolve()]) == {str(made.resolve()): []}
    assert str(made.resolve()) in recording_check.CHECKED


def test_an_event_in_the_last_two_milliseconds_is_read_against_its_own_snapshot(tmp_path):
    """A size limit ends a recording of 10-ms intervals, and its final snapshot comes 2 ms
    after the last: the history rose within those 2 ms. The checker takes that snapshot as
    the span's, though the span is no longer than its rounding allowance (CI met this)."""
    steps = [{"history": 1165} for _ in range(60)] + [{"history": 1445}]
    records = purge_journal(steps, interval_ns=10**7)
    final = records[-1]
    final["mono_ns"] = records[-3]["mono_ns"] + 2 * 10**6
    records[-2]["mono_ns"] = final["mono_ns"] - 1000
    directory = write(tmp_path, records)
    events = [e for p in checked(directory)["purge"]["phases"] for e in p["events"]]
    assert [(e["verdict"], e["to_s"] - e["from_s"]) for e in events] == [("falling_behind", pytest.approx(0.002))]


def test_a_view_closed_by_the_final_snapshot_50_ms_on_is_told_apart_from_the_last_interval(tmp_path):
    """The recording stops 50 ms after its last whole interval, and the view pinning purge
    is gone by that final snapshot. 'between 9.0 and 9.1 s' printed 9.05 as 9.1, and its
    '9.0' matched both snapshots, 50 ms apart (a fresh root's MySQL 8.0.15 recording, which
    the checker refused): moments less than a tenth of a second apart are told to the
    millisecond."""
    snapshot = view(77, 0.5, 1000)
    steps = [{"history": 1000 + 500 * i, "purge_batches": 1, "purge_empty_batches": 1, "views": [snapshot]}
             for i in range(1, 10)]
    steps.append({"history": 5400, "purge_batches": 2, "purge_pages": 200})
    records = purge_journal(steps)
    final = records[-1]
    final["mono_ns"] = records[-3]["mono_ns"] + 50 * 10**6
    records[-2]["mono_ns"] = final["mono_ns"] - 1000
    pinned = checked(write(tmp_path, records))["purge"]["phases"][-1]
    assert pinned["verdict"] == "pinned" and "; the view closed between 9.000 and 9.050 s" in pinned["detail"]
