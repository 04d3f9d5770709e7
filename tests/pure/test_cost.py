"""The cost governor's accounts in a recording: the journal's hits and governor figures
become per-interval counters, and the report turns them into coverage and overhead."""
from __future__ import annotations

import json

from innostall.analysis import cost, recording, views
from innostall.format import journal as fmt
from innostall.collector.recorder import store
from recordings import meta

GROUPS = ["version_walk", "version_step"]
PROGRAMS = [{"prog": "purge_batch_enter", "offset": 1, "retprobe": False, "group": 0,
             "probes": ["purge_batch"], "group_name": ""},
            {"prog": "version_walk_enter", "offset": 2, "retprobe": False, "group": 1,
             "probes": ["version_walk"], "group_name": "version_walk"},
            {"prog": "version_walk_exit", "offset": 2, "retprobe": True, "group": 1,
             "probes": ["version_walk"], "group_name": "version_walk"},
            {"prog": "version_step_enter", "offset": 3, "retprobe": False, "group": 2,
             "probes": ["version_step"], "group_name": "version_step"}]


def snapshot(kind: str, second: int) -> dict:
    """After `second` s: the walk group always attached, the steps 1/4 of each second."""
    return {"type": kind, "mono_ns": second * 10**9, "real_ns": 0, "counters": {"drops": 0},
            "hists": {}, "hits": [10 * second, 2000 * second, 2000 * second, 500 * second],
            "governor": {"server_cpu_ns": 2 * 10**9 * second, "budget_ns": 2 * 10**7 * second,
                         "overhead_ns": 1.6 * 10**7 * second,
                         "groups": [[1, 10**9 * second, 1, 10**7 * second],
                                    [2, 25 * 10**7 * second, second, 6 * 10**6 * second]]}}


def write_recording(directory) -> recording.Recording:
    records = [{"type": "calibration", "entry_ns": 900, "return_ns": 700, "measured": True},
               {"type": "attached", "mono_ns": 0, "real_ns": 0, "programs": PROGRAMS,
                "groups": GROUPS}]
    records += [snapshot("interval", s) for s in (1, 2, 3)] + [snapshot("final", 4)]
    attachments = [{"spec": f"{p['prog']}=0x{p['offset']:x}", "probes": p["probes"],
                    "group": p["group_name"]} for p in PROGRAMS]
    store.write_meta(str(directory), meta(walks=True, governor={
        "budget_pct": 1.0, "groups": GROUPS, "attachments": attachments,
        "hit_cost_ns": {"entry": 900, "return": 700}}))
    (directory / fmt.JOURNAL).write_text("".join(json.dumps(r) + "\n" for r in records))
    store.write_tables(str(directory))
    return recording.load(str(directory))


def test_hits_and_governor_accounts_become_counters(tmp_path):
    rec = write_recording(tmp_path)
    assert rec.counter_total("hits.version_walk") == 4 * 4000  # entry and return, 4 s
    assert rec.counter_total("hits.version_step") == 4 * 500
    assert rec.counter_total("governor.attached_ns.version_step") == 10**9
    assert rec.counter_total("governor.server_cpu_ns") == 8 * 10**9


def test_coverage_and_overhead(tmp_path):
    rec = write_recording(tmp_path)
    summary = cost.cost_summary(rec)
    assert summary["overhead_pct"] == 0.8  # 64 ms of 8 s
    assert summary["sampled"] == ["version_step"]
    assert summary["groups"]["version_step"]["coverage"] == 0.25
    assert summary["groups"]["version_walk"]["coverage"] == 1.0
    assert summary["hits_per_s"]["version_step"] == 500
    assert cost.coverage(rec, "purge_batch") == 1.0  # never sampled
    assert cost.sampled_note(rec, "version_walk") == ""
    assert cost.sampled_note(rec, "version_step") == " [sampled: attached 25% of the time, least when busiest: a floor]"
    report = views.text_report(rec)
    assert "overhead 0.80% of 8.0 s server CPU; budget 1%" in report
    assert "sampled: version_step attached 25% of the time (4 windows" in report


def test_recordings_from_before_the_governor_still_report(tmp_path):
    rec = write_recording(tmp_path)
    rec.meta.pop("governor")
    rec.counters = rec.counters[~rec.counters["name"].astype(str).str.contains(r"\.")]
    assert cost.cost_summary(rec)["overhead_pct"] is None
    assert "Probe cost: not recorded" in views.text_report(rec)


def test_the_report_says_how_many_times_over_a_uprobe_hit_is_counted(tmp_path):
    """The loader counts each uprobe hit at its calibrated cost times what the server pays
    around it (calibrate.h); the report says so, and says nothing where the loader did not."""
    rec = write_recording(tmp_path)
    assert "counted" not in views.text_report(rec)
    rec.meta["governor"]["hit_cost_ns"]["indirect_factor"] = 2.0
    assert ("a uprobe hit and its program counted 2 times over, for what the server pays "
            "around them") in views.text_report(rec)


def test_the_stall_bank_is_counted_and_said_where_signals_were_read():
    """The loader's bank_ns [in it now, put in, paid out] becomes two counters, and the
    report's signal line says what the calm saved for stalls and what they spent."""
    line = snapshot("final", 3)
    line["governor"]["bank_ns"] = [1.5e6, 7.6e6, 6.1e6]
    flat = fmt.governor_counters(line, {"groups": GROUPS})
    assert (flat["governor.bank_put_in_ns"], flat["governor.bank_paid_out_ns"]) == (7_600_000, 6_100_000)
    found = {"read": {"row_lock_waits_begun": {"groups": ["latch"], "held_s": 9.0, "windows": 49}},
             "missing": {}, "bank_ms": {"put_in": 7.6, "paid_out": 6.1}}
    said, = cost.signal_line(found)
    assert "row_lock_waits_begun held latch 9.0 s (49 windows)" in said
    assert "the calm saved 7.6 ms of the budget for stalls, which spent 6.1 ms of it" in said
    assert "saved" not in cost.signal_line({**found, "bank_ms": {"put_in": 0, "paid_out": 0}})[0]
