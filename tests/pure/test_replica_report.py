"""Why the replica lags, as the report tells it (analysis/replica.py): the summary's figures,
the phases' verdicts and words, the text section and the finding, on synthetic recordings
written the way the recorder writes them (tests/recordings.py); the checker
(analysis/checks/replica_check.py, in verdict_check.check) holding them, and catching them
tampered with; and the replica's Prometheus metrics."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import recordings
from innostall.analysis import applier_counts, recording, replica, replica_time, summary, views, window
from innostall.analysis.checks import replica_check, verdict_check
from innostall.analysis.sections.replica import WHY
from innostall.collector.recorder import replica_metrics
from recordings import purge_journal

S = 10**9
ATTACHED = {"attached": True, "fallback": False, "offset": 0, "reason": None}
APPLIER_PROBES = [{"name": "applier_event",
                   "symbol": "_ZL32apply_event_and_update_pos_applyP9Log_eventP3THDP14rpl_group_infoi", **ATTACHED},
                  {"name": "row_lock_wait", "symbol": "_Z9lock_waitP9que_thr_t", **ATTACHED},
                  {"name": "commit_order_wait", "symbol": "_ZN15wait_for_commit22wait_for_prior_commit2EP3THDb",
                   **ATTACHED}]
SQL_THREAD = [[4001, "mariadbd", 1233, 9 * S]]


def applied(events: int, row_lock=0.0, cpu=0.0, io=0.0, latch=0.0, commit=0.0, other=0.0, unwatched=0.0,
            redo=0.0) -> dict:
    """One interval's applier counters: each part in seconds; unwatched, seconds of events
    the scheduler tracepoint did not watch whole (outside the split)."""
    watched = row_lock + cpu + io + latch + commit + other + redo
    return {"applier_events": events, "applier_ns": round((watched + unwatched) * S),
            "applier_split_ns": round(watched * S), "applier_cpu_ns": round(cpu * S),
            "applier_io_ns": round(io * S), "applier_latch_ns": round(latch * S),
            "applier_row_lock_ns": round(row_lock * S), "applier_commit_wait_ns": round(commit * S),
            "applier_redo_ns": round(redo * S)}


IDLE = applied(0)


def write(tmp_path: Path, steps: list[dict], appliers=SQL_THREAD, probes=APPLIER_PROBES, name="rec",
          lags: list[int] | None = None) -> Path:
    records = purge_journal(steps)
    snapshots = [r for r in records if r["type"] in ("interval", "final")]
    for snapshot, lag in zip(snapshots, lags or []):  # the replica's own lag, as the recorder reads it
        snapshot["server"] = {"replica_lag_s": lag}
    if appliers is not None:  # the appliers table, from the last snapshot's latch_tables line
        records.insert(-1, {"type": "latch_tables", "mono_ns": records[-1]["mono_ns"], "appliers": appliers})
    return recordings.write(tmp_path / name, records, probes=[*recordings.meta(False)["probes"], *probes])


def row_lock_story() -> list[dict]:
    """5 s idle, 9 s of an applier waiting on row locks (a report on the replica holding
    them), 6 s idle."""
    return [IDLE] * 5 + [applied(137, row_lock=0.6, cpu=0.2, io=0.1, other=0.1)] * 9 + [IDLE] * 6


def told(directory: Path) -> dict:
    return summary.summary(recording.load(str(directory)))


@pytest.fixture(scope="module")
def row_lock_recording(tmp_path_factory) -> Path:
    """row_lock_story() written once for the tests that only read it (each wrote its own)."""
    return write(tmp_path_factory.mktemp("row-lock"), row_lock_story())


# --- the summary -------------------------------------------------------------------------

def test_the_summary_gives_the_appliers_events_busy_time_and_split(row_lock_recording):
    said = told(row_lock_recording)["replica"]
    a = said["applier"]
    assert a["tids"] == [4001]
    assert a["threads"] == [{"tid": 4001, "thread": "mariadbd", "events": 1233, "apply_s": 9.0}]
    assert (a["events"], a["events_per_s"], a["busy_s"]) == (1233, 61.65, 9.0)
    assert a["split_ms"] == {"on_cpu": 1800.0, "latch": 0.0, "row_lock": 5400.0, "io": 900.0, "redo": 0.0,
                             "commit_order": 0.0, "other": 900.0}
    assert a["split_watched_pct"] is None and a["coverage"] == 1.0
    assert (said["lag_s_max"], said["lag_s_last"]) == (None, None)
    assert said["lag_note"].startswith("not read: innostall reads it over SQL")


def test_the_lag_is_the_replicas_own_at_each_snapshot(tmp_path):
    lags = [0] * 5 + list(range(1, 10)) + [6, 3, 0, 0, 0, 0]
    read = verdict_check.read(str(write(tmp_path, row_lock_story(), lags=lags)))
    said = read.summed["replica"]
    assert (said["lag_s_max"], said["lag_s_max_at_s"], said["lag_s_last"], said["lag_note"]) == (9, 14.0, 0, None)
    assert "  replication lag, as the replica reported it at each snapshot: at most 9 s (at 14.0 s), 0 s at the end" \
        in read.text.splitlines()


def test_nothing_is_said_of_a_replica_without_its_probe_or_its_events(tmp_path):
    unprobed = write(tmp_path, row_lock_story(), probes=[], name="unprobed")
    quiet = write(tmp_path, [IDLE] * 6, name="quiet")
    for directory in (unprobed, quiet):
        read = verdict_check.read(str(directory))
        assert read.summed["replica"] is None
        assert "Replica applier" not in read.text
        assert verdict_check.contradictions(read) == []


# --- the phases --------------------------------------------------------------------------

def test_a_row_lock_bound_stretch_between_idle_ones(row_lock_recording):
    phases = told(row_lock_recording)["replica"]["phases"]
    assert [(p["from_s"], p["to_s"], p["verdict"]) for p in phases] == [
        (0.0, 5.0, "idle"), (5.0, 14.0, "row-lock-bound"), (14.0, 20.0, "idle")]
    assert phases[0]["detail"] == "idle: no event applied"
    assert phases[1]["detail"] == (
        "row-lock-bound: the applier applied 1,233 events (137/s), busy 9.0 s of 9.0 s (100%: saturated, it "
        "cannot apply faster): 60% of it waiting on row locks (5.4 s), 20% on CPU (1.8 s), 10% reading pages "
        "(900 ms), 10% asleep for anything else (900 ms)")
    f = phases[1]["figures"]
    assert (f["events"], f["busy_s"], f["capacity_s"], f["saturated"]) == (1233, 9.0, 9.0, True)
    assert f["split_s"]["row_lock"] == 5.4 and f["shares"]["row_lock"] == 0.6


def test_a_short_spike_joins_its_phase_which_is_named_by_its_whole_split(tmp_path):
    """Two I/O-bound intervals inside a row-lock-bound stretch: too short for a phase, they
    join it, and the phase's split (row locks still the most) names it."""
    lock, reads = applied(100, row_lock=0.7, cpu=0.2), applied(40, io=0.8, cpu=0.1)
    read = verdict_check.read(str(write(tmp_path, [IDLE] * 3 + [lock] * 4 + [reads] * 2 + [lock] * 4 + [IDLE] * 3)))
    phases = read.summed["replica"]["phases"]
    assert [p["verdict"] for p in phases] == ["idle", "row-lock-bound", "idle"]
    assert phases[1]["detail"].endswith(
        "62% of it waiting on row locks (5.6 s), 20% on CPU (1.8 s), 18% reading pages (1.6 s)")
    assert verdict_check.contradictions(read) == []


def test_a_burst_in_an_idle_stretch_stays_idle_but_a_busy_flapping_one_is_named_by_its_split(tmp_path):
    """Two busy seconds in 20 idle ones keep the applier busy 4% of the time: the stretch
    is idle and says what it applied. Busy every other second, it is busy half the time:
    named by its split, never idle."""
    burst = applied(60, row_lock=0.5, cpu=0.3)
    burst_at_9 = verdict_check.read(str(write(tmp_path, [IDLE] * 9 + [burst] * 2 + [IDLE] * 9, name="burst")))
    quiet = burst_at_9.summed["replica"]["phases"]
    assert [(p["verdict"], p["detail"]) for p in quiet] == [(
        "idle", "idle: the applier applied 120 events (6.0/s), busy 1.6 s of 20.0 s (8%): 62% of it waiting on "
                "row locks (1.0 s), 38% on CPU (600 ms)")]
    assert verdict_check.contradictions(burst_at_9) == []
    read = verdict_check.read(str(write(tmp_path, [burst, IDLE] * 6, name="flapping")))
    flapping = read.summed["replica"]["phases"]
    assert [p["verdict"] for p in flapping] == ["row-lock-bound"]
    assert "busy 4.8 s of 12.0 s (40%)" in flapping[0]["detail"]
    assert verdict_check.contradictions(read) == []


def test_parallel_appliers_waiting_for_the_commit_order_are_not_saturated(tmp_path):
    workers = [[5000 + i, "mariadbd", 300, 2 * S] for i in range(4)]
    read = verdict_check.read(str(write(tmp_path, [applied(400, commit=1.2, cpu=0.6, other=0.2)] * 6,
                                        appliers=workers)))
    said = read.summed
    [phase] = said["replica"]["phases"]
    assert phase["detail"] == (
        "commit-order-bound: the 4 applier threads applied 2,400 events (400/s), busy 12.0 s of their 24.0 s "
        "(50%): 60% of it waiting for the commit order (7.2 s), 30% on CPU (3.6 s), 10% asleep for anything "
        "else (1.2 s)")
    assert said["replica"]["applier"]["tids"] == [5000, 5001, 5002, 5003]
    [finding] = [f for f in said["findings"] if f.startswith("The replica's applier")]
    assert finding.startswith("The replica's applier spent 60% of its time waiting for the commit order "
                              "(7.2 s of 12.0 s busy, in 2,400 events): ")
    assert verdict_check.contradictions(read) == []


def test_a_split_of_part_of_the_time_and_sampled_probes_say_so(tmp_path):
    """The scheduler tracepoint watched 0.6 s of each 0.9 s busy; the cost governor had the
    applier's probes attached for half of the last 4 intervals, which saw no event."""
    steps = [{**applied(50, latch=0.4, cpu=0.2, unwatched=0.3), "governor.attached_ns.applier": S}] * 6
    steps += [{**IDLE, "governor.attached_ns.applier": S // 2}] * 4
    read = verdict_check.read(str(write(tmp_path, steps)))
    said = read.summed
    a = said["replica"]["applier"]
    assert a["split_watched_pct"] == 66.667 and a["coverage"] == 0.8
    busy, unwatched = said["replica"]["phases"]
    assert busy["verdict"] == "latch-bound" and unwatched["verdict"] == "unwatched"
    assert busy["detail"] == ("latch-bound: the applier applied 300 events (50.0/s), busy 5.4 s of 6.0 s (90%: "
                              "saturated, it cannot apply faster); of the 3.6 s watched whole, 67% waiting on "
                              "latches (2.4 s), 33% on CPU (1.2 s)")
    assert unwatched["detail"] == ("unwatched: no event seen (its probes were detached at times: an event begun "
                                   "then, a stall, may have gone on unseen); its probes were attached 50% of the phase (the "
                                   "cost governor sampled them: a floor)")
    assert "Replica applier (the replica's threads applying replicated events) [sampled: attached 80% of the time" \
        in read.text
    assert verdict_check.contradictions(read) == []


# --- the text, the finding, the checker --------------------------------------------------

def test_the_text_section_tells_the_threads_the_split_and_the_verdict_leads_with_its_phases(row_lock_recording):
    report = views.text_report(recording.load(str(row_lock_recording)))
    verdict = report[:report.index("\n\n")].splitlines()
    assert verdict[1].startswith("Verdict") and verdict[2].startswith("  Replica applier (lag not read: ")
    assert verdict.index("  Purge") > 3  # the replica's phases first, then purge's
    section = report[report.index("\nReplica applier"):].splitlines()
    assert section[1:4] == [
        "Replica applier (the replica's threads applying replicated events)",
        "  1,233 events applied (61.6/s), busy 9.0 s in all, by 1 applier thread",
        "    tid 4001     mariadbd                1,233 events      9.000 s"]
    assert section[4].startswith("  its time (9.0 s watched whole): on CPU 20% (1.8 s), latch waits 0% (0.0 s), "
                                 "row-lock waits 60% (5.4 s), page reads 10% (900 ms)")
    assert any(line.startswith("  replication lag: not read: ") for line in section)
    assert "      5.0 –    14.0 s  row-lock-bound: the applier applied 1,233 events (137/s), busy 9.0 s of 9.0 s " \
           "(100%: saturated, it cannot apply faster): 60% of it waiting on row locks (5.4 s), 20% on CPU (1.8 s), " \
           "10% reading pages (900 ms), 10% asleep for anything else (900 ms)" in verdict
    assert any(line.startswith("  finding: The replica's applier spent 60% of its time waiting on row locks "
                               "(5.4 s of 9.0 s busy, in 1,233 events): ") for line in section)


def test_the_finding_names_the_waiting_part_and_why(tmp_path, row_lock_recording):
    said = told(row_lock_recording)
    [finding] = [f for f in said["findings"] if f.startswith("The replica's applier")]
    assert finding.endswith(WHY["row_lock"])
    busy_on_cpu = told(write(tmp_path, [applied(10, cpu=0.95, io=0.05)] * 4, name="cpu"))
    assert not any(f.startswith("The replica's applier") for f in busy_on_cpu["findings"])
    assert [p["verdict"] for p in busy_on_cpu["replica"]["phases"]] == ["cpu-bound"]


BLOCK = 8 << 32 | 4  # block 8:4, the root of sbtest1's clustered index
LATCH_ROWS = [[1, BLOCK, 1, 1017, 1_019_100_000, 60_000_000, 0x7f0012340000, [0] * 24, "block 8:4 sbtest/sbtest1 PRIMARY",
               "block"],
              [0, 0x5600aa10, 2, 568, 26_400_000, 2_000_000, 0x5600aa10, [0] * 24, "log_sys.latch", "srw_lock"]]


def backup_story(tmp_path) -> Path:
    """An applier mostly on CPU and asleep in its commits' syncs, until a backup-like scan
    on the replica holds the root page of the table it changes: from 5 to 13 s its latch
    waits rise to 15% of its time and its events fall by half, on CPU and asleep still
    larger. Its latch waits are tabled by latch, with the scan's connection as the holder."""
    before, during = applied(20_000, cpu=0.45, latch=0.02, other=0.5), applied(10_000, cpu=0.33, latch=0.15, other=0.5)
    records = purge_journal([before] * 5 + [during] * 8 + [before] * 7)
    snapshots = [r for r in records if r["type"] in ("interval", "final")]
    records.insert(records.index(snapshots[-1]), {"type": "latches", "latches": LATCH_ROWS})
    for i in (4, 12, 19):  # the applier's waits, cumulative, before the snapshots ending at 5, 13 and 20 s
        done = {4: 0.02, 12: 0.9, 19: 1.0}[i]
        records.insert(records.index(snapshots[i]), {"type": "work_latches", "mono_ns": snapshots[i]["mono_ns"], "latches": [
            [2, 1, BLOCK, 1, round(1017 * done), round(1_019_100_000 * done)],
            [2, 0, 0x5600aa10, 2, round(568 * done), round(26_400_000 * done)], [1, 0, 0x5600aa10, 2, 398, 51_200_000]]})
    records.insert(-1, {"type": "latch_tables", "mono_ns": records[-1]["mono_ns"], "appliers": SQL_THREAD,
                        "holders": [[0x7f0012340000, 1, "mariadbd", 1000, 994_600_000, "handle_one_connection;do_command",
                                     "block 8:4 sbtest/sbtest1 PRIMARY"]]})
    return recordings.write(tmp_path / "backup", records, probes=[*recordings.meta(False)["probes"], *APPLIER_PROBES])


def test_a_waiting_part_of_a_tenth_names_the_phase_and_the_finding_names_its_latch(tmp_path):
    read = verdict_check.read(str(backup_story(tmp_path)))
    said = read.summed
    phases = said["replica"]["phases"]
    assert [(p["from_s"], p["to_s"], p["verdict"]) for p in phases] == [
        (0.0, 5.0, "off-cpu"), (5.0, 13.0, "latch-bound"), (13.0, 20.0, "off-cpu")]
    assert phases[1]["detail"] == (
        "latch-bound: the applier applied 80,000 events (10,000/s), busy 7.8 s of 8.0 s (98%: saturated, it cannot "
        "apply faster): 15% of it waiting on latches (1.2 s), 51% asleep for anything else (4.0 s), 34% on CPU (2.6 s); "
        "the latch it waited on most: block 8:4 sbtest/sbtest1 PRIMARY (897 ms)")
    assert phases[1]["figures"]["latch"] == {"name": "block 8:4 sbtest/sbtest1 PRIMARY", "wait_s": 0.896808}
    assert phases[0]["figures"]["latch"] is None
    latches = said["replica"]["applier"]["latches"]
    assert (latches["waits"], latches["wait_ms"]) == (1585, 1045.5)
    assert latches["latches"][0] == {"name": "block 8:4 sbtest/sbtest1 PRIMARY", "kind": "block", "waits": 1017,
                                     "wait_ms": 1019.1, "holders": [{"role": "user connection", "thread": "mariadbd",
                                                                     "waits": 1000, "wait_ms": 994.6}]}
    assert said["purge"]["latches"]["latches"][0]["name"] == "log_sys.latch"
    [finding] = [f for f in said["findings"] if f.startswith("The replica's applier")]
    assert finding.endswith(" The latch it waited on longest: block 8:4 sbtest/sbtest1 PRIMARY (1,019.1 ms of the "
                            "1,045.5 ms it waited on latches, released most by mariadbd (user connection)).")
    assert verdict_check.contradictions(read) == []
    assert "    block 8:4 sbtest/sbtest1 PRIMARY         block      1,019.1 ms    1,017 waits  released most by " \
           "mariadbd (user connection) 994.6 ms" in read.text


def test_the_checker_holds_the_cause_rule_and_the_latch_words(tmp_path):
    read = verdict_check.read(str(backup_story(tmp_path)))
    rec, said, report = read.rec, read.summed, read.text

    def renamed(verdict: str) -> dict:
        copied = copy.deepcopy(said)
        copied["replica"]["phases"][1].update(verdict=verdict, detail=copied["replica"]["phases"][1]["detail"]
                                              .replace("latch-bound", verdict))
        return copied
    assert any("nothing in its intervals makes it off-cpu" in p
               for p in replica_check.problems(rec, renamed("off-cpu"), report))

    def detail(old: str, new: str) -> list[str]:
        copied = copy.deepcopy(said)
        copied["replica"]["phases"][1]["detail"] = copied["replica"]["phases"][1]["detail"].replace(old, new)
        return replica_check.problems(rec, copied, report)
    assert any("says '; the latch it waited on most: log_sys.latch (897 ms)'" in p
               for p in detail("block 8:4 sbtest/sbtest1 PRIMARY (", "log_sys.latch ("))
    assert any("says '; the latch it waited on most: block 8:4 sbtest/sbtest1 PRIMARY (1.0 s)'" in p
               for p in detail("(897 ms)", "(1.0 s)"))
    assert any("names the latch it waited on most only" in p for p in detail("; the latch it waited on most", " —"))
    [finding] = [f for f in said["findings"] if f.startswith("The replica's applier")]
    for old, new in (("1,019.1 ms of", "1,119.1 ms of"), ("block 8:4 sbtest/sbtest1 PRIMARY (", "log_sys.latch ("),
                     ("mariadbd (user connection)", "mariadbd (purge worker)")):
        wrong = {**said, "findings": [finding.replace(old, new)]}
        assert verdict_check.finding_problems(wrong, rec), (old, new)
    without = {**said, "findings": []}
    assert replica_check.missing_finding(rec, without)


def test_commits_waiting_for_the_redo_log_name_the_phase_unless_someone_is_in_the_way(tmp_path):
    """A single applier whose commits wait for the redo log's sync: redo-bound, and a finding
    says why; a latch part of a tenth of its time still names the phase it is in."""
    syncing, hindered = applied(3000, cpu=0.3, redo=0.6, latch=0.02), applied(1500, cpu=0.25, redo=0.6, latch=0.12)
    read = verdict_check.read(str(write(tmp_path, [syncing] * 5 + [hindered] * 4 + [syncing] * 5)))
    said = read.summed
    assert [(p["from_s"], p["verdict"]) for p in said["replica"]["phases"]] == [
        (0.0, "redo-bound"), (5.0, "latch-bound"), (9.0, "redo-bound")]
    assert said["replica"]["phases"][0]["detail"].endswith(
        ": 65% of it waiting for the redo log at commit (3.0 s), 33% on CPU (1.5 s), 2% waiting on latches (100 ms)")
    [redo] = [f for f in said["findings"] if "waiting for the redo log at commit" in f.split(":")[0]]
    assert redo.startswith("The replica's applier spent 64% of its time waiting for the redo log at commit (8.4 s of "
                           "13.1 s busy, in 36,000 events): ") and redo.endswith(WHY["redo"])
    assert verdict_check.contradictions(read) == []
    without = {**said, "findings": [f for f in said["findings"] if f != redo]}
    assert any("waiting for the redo log at commit, and no finding" in p
               for p in replica_check.missing_finding(read.rec, without))


def test_the_checker_holds_the_report_and_catches_it_tampered_with(row_lock_recording):
    read = verdict_check.read(str(row_lock_recording))
    assert verdict_check.contradictions(read) == []
    rec, said, report = read.rec, read.summed, read.text
    assert replica_check.problems(rec, said, report) == []

    def tampered(change) -> list[str]:
        copied = copy.deepcopy(said)
        change(copied["replica"])
        return replica_check.problems(rec, copied, report)

    def detail(old: str, new: str):
        def change(r):
            r["phases"][1]["detail"] = r["phases"][1]["detail"].replace(old, new)
        return change
    assert any("says '60% of it waiting on row locks (4.4 s)'" in p for p in tampered(detail("(5.4 s)", "(4.4 s)")))
    assert any("says 'applied 1,233 events (173/s)'" in p for p in tampered(detail("(137/s)", "(173/s)")))
    assert any("busy 9.0 s of 9.0 s (100%)'" in p for p in tampered(detail(": saturated, it cannot apply faster", "")))
    assert any("does not name reading pages" in p for p in tampered(detail(", 10% reading pages (900 ms)", "")))
    assert any("says 3 that no claim accounts for" in p for p in tampered(detail("(900 ms)", "(900 ms) in 3 bursts")))
    assert any("nothing in its intervals makes it io-bound" in p
               for p in tampered(lambda r: r["phases"][1].update(verdict="io-bound", detail=r["phases"][1]["detail"]
                                                                 .replace("row-lock-bound", "io-bound"))))
    assert any("events is 1000" in p for p in tampered(lambda r: r["phases"][1]["figures"].update(events=1000)))
    assert any("busy_s is 8.0" in p for p in tampered(lambda r: r["applier"].update(busy_s=8.0)))
    assert any("do not follow one another" in p for p in tampered(lambda r: r["phases"][2].update(from_s=15.0)))
    assert any("the text report lacks the replica phase at 5.0 s" in p
               for p in replica_check.problems(rec, said, report.replace("(137/s)", "(138/s)")))


def test_the_checker_catches_a_finding_tampered_with_or_missing(row_lock_recording):
    directory = row_lock_recording
    rec = recording.load(str(directory))
    said = summary.summary(rec)
    assert verdict_check.finding_problems(said, rec) == []
    [finding] = [f for f in said["findings"] if f.startswith("The replica's applier")]
    for old, new in (("60%", "70%"), ("(5.4 s", "(4.4 s"), ("1,233 events", "1,234 events"),
                     ("waiting on row locks", "reading pages")):
        wrong = {**said, "findings": [finding.replace(old, new)]}
        assert verdict_check.finding_problems(wrong, rec), (old, new)
    without = {**said, "findings": [f for f in said["findings"] if f != finding]}
    assert replica_check.missing_finding(rec, without)


# --- Prometheus ---------------------------------------------------------------------------

def test_the_replica_metrics_carry_the_counters_split_by_part():
    counters = {name: 0 for name in replica_time.COUNTERS}
    counters.update(applied(1233, row_lock=5.4, cpu=1.8, io=0.9, other=0.9, unwatched=1.0))

    class Replica:
        def collect(self):
            yield from replica_metrics.replica_families(counters)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(Replica())
    samples = {(s.name, s.labels.get("part")): s.value for family in
               text_string_to_metric_families(generate_latest(registry).decode()) for s in family.samples}
    assert samples[("innostall_replica_applier_events_total", None)] == 1233
    assert samples[("innostall_replica_applier_busy_seconds_total", None)] == 10.0
    split = {part: v for (name, part), v in samples.items() if name == "innostall_replica_applier_split_seconds_total"}
    assert split == {"on_cpu": 1.8, "latch": 0.0, "row_lock": 5.4, "io": 0.9, "redo": 0.0, "commit_order": 0.0,
                     "other": split["other"]}
    assert abs(split["other"] - 0.9) < 1e-9
    assert list(replica_metrics.replica_families({"purge_batches": 3})) == []


def test_the_metrics_and_the_report_split_the_time_alike():
    assert replica_metrics.MEASURED == replica_time.MEASURED
    assert set(replica_metrics.split_seconds({})) == set(replica_time.PARTS)
    assert set(WHY) == {*replica_time.WAITS, "redo"}
    assert replica.LAG_NOTE.startswith("not read: ")


def test_the_html_shows_the_section_and_its_phases(row_lock_recording):
    page = views.html_report(recording.load(str(row_lock_recording)))
    verdict = page[page.index('<h2 id="verdict">'):page.index('<h2 id="findings">')]
    assert verdict.index('id="replica-phases"') < verdict.index('id="phases"')  # the replica's story first
    assert "row-lock-bound: the applier applied 1,233 events" in verdict
    assert page.index('<h2 id="replica">Replica applier</h2>') < page.index('<h2 id="purge">')


def with_open_event(records: list[dict], opens: dict[int, float]) -> list[dict]:
    """The loader's gauges of an event being applied: at snapshot k (1-based), opens[k]
    seconds so far, all of it waiting on a row lock but its first 0.1 s on CPU."""
    snapshots = [r for r in records if r["type"] in ("interval", "final")]
    for k, snapshot in enumerate(snapshots, start=1):
        so_far = opens.get(k, 0.0)
        snapshot["counters"].update({
            "applier_open_events": int(so_far > 0), "applier_open_ns": round(so_far * S),
            "applier_open_split_ns": round(so_far * S), "applier_open_cpu_ns": round(min(so_far, 0.1) * S),
            "applier_open_io_ns": 0, "applier_open_latch_ns": 0, "applier_open_commit_wait_ns": 0,
            "applier_open_row_lock_ns": round(max(so_far - 0.1, 0) * S)})
    return records


def test_an_event_stalled_on_a_row_lock_is_told_in_the_intervals_it_lasted(tmp_path):
    # 3 s idle; one event waits 3.8 s on a row lock, seen in progress at the 4th, 5th and 6th
    # snapshots and ending in the 7th interval (its whole time counted there); 3 s idle
    steps = [IDLE] * 6 + [applied(1, row_lock=3.8, cpu=0.2)] + [IDLE] * 3
    records = with_open_event(purge_journal(steps), {4: 1.0, 5: 2.0, 6: 3.0})
    records.insert(-1, {"type": "latch_tables", "mono_ns": records[-1]["mono_ns"], "appliers": SQL_THREAD})
    directory = recordings.write(tmp_path / "rec", records, probes=[*recordings.meta(False)["probes"], *APPLIER_PROBES])
    read = verdict_check.read(str(directory))
    rec = read.rec
    table = applier_counts.applier_deltas(rec)
    assert list(table["applier_ns"] / S) == [0, 0, 0, 1.0, 1.0, 1.0, 1.0, 0, 0, 0]
    assert list((table["applier_row_lock_ns"] / S).round(6)) == [0, 0, 0, 0.9, 1.0, 1.0, 0.9, 0, 0, 0]
    said = read.summed["replica"]
    assert (said["applier"]["busy_s"], said["applier"]["split_ms"]["row_lock"]) == (4.0, 3800.0)
    assert [(p["from_s"], p["to_s"], p["verdict"]) for p in said["phases"]] == \
        [(0.0, 3.0, "idle"), (3.0, 7.0, "row-lock-bound"), (7.0, 10.0, "idle")]
    assert verdict_check.contradictions(read) == []
    # a window from 5 s counts the stall from there: its level then is no growth of the window's
    windowed = applier_counts.applier_deltas(window.window(rec, "5", None))
    assert list(windowed["applier_ns"] / S) == [1.0, 1.0, 0, 0, 0]
    assert list((windowed["applier_row_lock_ns"] / S).round(6)) == [1.0, 0.9, 0, 0, 0]


def test_an_event_still_stalled_at_the_end_is_counted_so_far(tmp_path):
    steps = [IDLE] * 6
    records = with_open_event(purge_journal(steps), {4: 1.0, 5: 2.0, 6: 3.0})
    directory = recordings.write(tmp_path / "rec", records, probes=[*recordings.meta(False)["probes"], *APPLIER_PROBES])
    read = verdict_check.read(str(directory))
    said = read.summed["replica"]
    assert (said["applier"]["events"], said["applier"]["busy_s"], said["applier"]["split_ms"]["row_lock"]) == \
        (0, 3.0, 2900.0)
    assert said["phases"][-1]["verdict"] == "row-lock-bound"
    assert verdict_check.contradictions(read) == []
