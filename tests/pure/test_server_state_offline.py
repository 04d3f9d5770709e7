"""The server's state read from memory, without a server: where each gauge is read
(collector/server/state.py's Place, against a fake memory), and what the report makes of
the readings (analysis/redo.py, and the history the purge table takes from them)."""
from __future__ import annotations

import struct

import recordings
from innostall.analysis import purge_history, recording, redo, summary
from innostall.analysis.wording import redo_words
from innostall.collector.server.state import Place, places_of
from recordings import purge_journal

MIB = 2**20


class Memory:
    """A few words of a process's memory: {address: bytes}."""

    def __init__(self, words: dict[int, bytes]):
        self.words = words

    def read(self, address: int, size: int) -> bytes | None:
        for start, data in self.words.items():
            if start <= address and address + size <= start + len(data):
                return data[address - start:address - start + size]
        return None

    def u64(self, address: int) -> int | None:
        data = self.read(address, 8)
        return None if data is None else struct.unpack("<Q", data)[0]


def test_a_member_through_a_pointer_and_over_instances():
    instances = b"".join(struct.pack("<QQ", 0, n) for n in (5, 7, 11))  # count at +8, 16 bytes apart
    memory = Memory({0x1000: struct.pack("<Q", 0x9000), 0x2000: struct.pack("<Q", 3), 0x9000: instances})
    assert Place(0x1000, True, 8, 8, stride=16, count_at=0x2000).read(memory) == 23
    memory.words[0x2000] = struct.pack("<Q", 1000)  # not a buffer pool's instance count
    assert Place(0x1000, True, 8, 8, stride=16, count_at=0x2000).read(memory) is None
    assert Place(0x1000, False, 0, 8).read(memory) == 0x9000
    assert Place(0x5000, False, 0, 8).read(memory) is None  # unmapped: left out, never a 0


def test_places_from_the_dwarf_answer():
    found = {"paths": {"log_sys.lsn": {"offset": 24, "size": 8},
                       "buf_pool_ptr.flush_list.count": {"offset": 640, "size": 8, "via_pointer": True},
                       "trx_sys.rseg_array": {"offset": 16640, "size": 16384, "type": "trx_rseg_t[128]"},
                       "trx_rseg_t.history_size": {"offset": 28, "size": 4}},
             "types": {"trx_rseg_t": {"size": 128}},
             "globals": {"log_sys": {"address": 0x100}, "trx_sys": {"address": 0x200},
                         "buf_pool_ptr": {"address": 0x300, "object_size": 1200},
                         "srv_buf_pool_instances": {"address": 0x400}}}
    places = places_of(found, 0x10000)
    assert places["lsn"] == Place(0x10100, False, 24, 8)
    assert places["dirty_pages"] == Place(0x10300, True, 640, 8, stride=1200, count_at=0x10400)
    assert places["history"] == Place(0x10200, False, 16640 + 28, 4, count=128, stride=128)
    assert "checkpoint_lsn" not in places  # a member the build does not have is not read


def with_state(records: list[dict], states: list[dict]) -> list[dict]:
    snapshots = [r for r in records if r["type"] in ("interval", "final")]
    for snapshot, state in zip(snapshots, states):
        snapshot["server"] = state
    return records


def written(tmp_path, records, meta_state=None) -> str:
    path = recordings.write(tmp_path / "rec", records)
    if meta_state is not None:
        import json
        meta = json.loads((path / "meta.json").read_text())
        (path / "meta.json").write_text(json.dumps({**meta, "server_state": meta_state}))
    return str(path)


def load(tmp_path, records, meta_state=None):
    return recording.load(written(tmp_path, records, meta_state))


def test_redo_checkpoint_age_and_pages(tmp_path):
    # 2 MiB of redo a second; no checkpoint for 4 s, then one; the async point at 5 MiB
    steps = [{"purge_batches": 1, "purge_pages": 10}] * 6
    lsn = [100 * MIB + 2 * MIB * i for i in range(1, 7)]
    checkpoint = [100 * MIB] * 4 + [lsn[4] - MIB, lsn[5] - MIB]
    states = [{"lsn": l, "checkpoint_lsn": c, "async_flush_age": 5 * MIB, "max_checkpoint_age": 8 * MIB,
               "dirty_pages": d, "free_pages": 1000 - d, "lru_pages": 500} for l, c, d in
              zip(lsn, checkpoint, (10, 50, 90, 130, 20, 30))]
    s = summary.summary(load(tmp_path, with_state(purge_journal(steps), states), {"read": list(states[0])}))
    assert s["redo"]["bytes"] == 10 * MIB and s["redo"]["per_s"] == 2 * MIB
    assert s["checkpoint"]["age_max_bytes"] == 8 * MIB and s["checkpoint"]["age_max_at_s"] == 4.0
    assert s["checkpoint"]["age_max_share_of_sync"] == 1.0
    assert s["checkpoint"]["async_s"] == 2.0 and s["checkpoint"]["sync_s"] == 1.0  # 6 and 8 MiB
    assert s["undo_space"] is None  # not read: nothing said
    assert s["buffer_pool"] == {"dirty_pages_max": 130, "dirty_pages_max_at_s": 4.0, "dirty_pages_last": 30,
                                "free_pages_min": 870, "data_pages_max": 500}
    lines = redo_words.redo_lines(s)
    assert "  redo written 10.0 MiB from 1.0 to 6.0 s (2.0 MiB/s, at most 2.0 MiB/s in the interval ending 2.0 s)" in lines
    assert "  it reached the async flush point in intervals totalling 2.0 s, the sync point in 1.0 s" in lines


def test_undo_logs_over_the_recording(tmp_path):
    steps = [{"purge_batches": 1}] * 3
    states = [{"undo_pages": 300, "page_size": 16384}, {"undo_pages": 900, "page_size": 16384},
              {"undo_pages": 450, "page_size": 16384}]
    s = summary.summary(load(tmp_path, with_state(purge_journal(steps), states), {"read": ["undo_pages"]}))
    assert s["undo_space"] == {"pages_max": 900, "pages_max_at_s": 2.0, "pages_first": 300, "pages_last": 450,
                               "page_size": 16384, "bytes_max": 900 * 16384, "cached_pages_max": None,
                               "cached_pages_max_at_s": None, "cached_pages_last": None, "cached_last_of": None}
    lines = redo_words.redo_lines(s)
    assert "  undo logs: at most 900 pages, 14.1 MiB (at 2.0 s); 300 at the first reading, 450 at the last" in lines
    assert not any("in the buffer pool" in line for line in lines)  # the pool was not walked: nothing said


def test_undo_pages_cached_are_told_at_the_walks_that_counted_them(tmp_path):
    """A walk's count is at the snapshots where one ended: the last count is told beside the
    rollback segments' size read at that same snapshot, not at the last one."""
    steps = [{"purge_batches": 1}] * 4
    states = [{"undo_pages": 300, "undo_cached_pages": 120}, {"undo_pages": 900, "undo_cached_pages": 700},
              {"undo_pages": 800, "undo_cached_pages": 650}, {"undo_pages": 450}]
    s = summary.summary(load(tmp_path, with_state(purge_journal(steps), states), {"read": ["undo_pages"]}))
    u = s["undo_space"]
    assert (u["cached_pages_max"], u["cached_pages_max_at_s"], u["cached_pages_last"], u["cached_last_of"]) == \
        (700, 2.0, 650, 800)
    assert "  undo log pages in the buffer pool: at most 700 (at 2.0 s), 650 at the last count, when the rollback " \
        "segments held 800" in redo_words.redo_lines(s)


def test_without_the_state_the_report_says_why(tmp_path):
    steps = [{"purge_batches": 1}] * 3
    note = "the build has no DWARF (its debug file would give it)"
    s = summary.summary(load(tmp_path, purge_journal(steps), {"read": [], "note": note}))
    assert (s["redo"], s["checkpoint"], s["buffer_pool"], s["undo_space"]) == (None, None, None, None)
    assert redo_words.redo_lines(s) == ["", f"Redo and flushing: not recorded ({note})"]


def test_the_history_at_a_snapshot_is_the_servers_own_reading_and_the_probe_only_its_peak(tmp_path):
    detached = {"governor.attached_ns.history": 0}
    probed, read = 500, 510  # the probe's last value inside the first interval, the server's at its end
    steps = [{"history": probed, "purge_batches": 1, "governor.attached_ns.history": 10**9},
             {"purge_batches": 1, **detached}, {"purge_batches": 1, **detached}]
    states = [{"history": read}, {"history": 900}, {"history": 1300}]
    table = purge_history.purge_table(load(tmp_path, with_state(purge_journal(steps), states)))
    assert table["history_end"].tolist() == [read, 900, 1300]  # the server's reading wherever it has one
    assert table["history"].iloc[0] == max(probed, read)  # a level is the interval's peak, its snapshot included
    assert table["history_peaked"].tolist() == [True, False, False]


def test_the_flush_finding_and_its_check(tmp_path):
    """The age read at 20 Hz between snapshots tops a saw-tooth the snapshots miss: the
    finding takes its peak, and the checker recomputes every figure it says."""
    from innostall.analysis.checks import verdict_check
    steps = [{"purge_batches": 1, "purge_pages": 10}] * 6
    lsn = [100 * MIB + 2 * MIB * i for i in range(1, 7)]
    states = [{"lsn": l, "checkpoint_lsn": 100 * MIB, "async_flush_age": 12 * MIB, "max_checkpoint_age": 16 * MIB,
               "dirty_pages": 100 * i, "checkpoint_age_peak": 2 * MIB * i} for i, l in enumerate(lsn, start=1)]
    states[3]["checkpoint_age_peak"] = 11 * MIB  # a top between snapshots, then a checkpoint
    read = verdict_check.read(written(tmp_path, with_state(purge_journal(steps), states), {"read": list(states[0])}))
    rec = read.rec
    found = [f for f in read.summed["findings"] if f.startswith("The checkpoint age")]
    assert found == ["The checkpoint age reached 12.0 MiB in the interval ending 6.0 s, 100% of the async flush "
                     "point (12.0 MiB); it reached that point in intervals totalling 1.0 s: from the first InnoDB "
                     "flushes dirty pages regardless of innodb_io_capacity, from the second writers wait for "
                     "that flushing. Dirty pages peaked at 600."]
    assert verdict_check.contradictions(read) == []
    told = {**read.summed, "findings": [found[0].replace("600", "700")]}
    assert any("its tables say otherwise" in p for p in verdict_check.finding_problems(told, rec))
    states[3]["checkpoint_age_peak"] = 8 * MIB  # at most 10 MiB: 83% of the point, no finding
    states[-1].update(lsn=109 * MIB, checkpoint_age_peak=9 * MIB)
    rec = load(tmp_path / "below", with_state(purge_journal(steps), states), {"read": list(states[0])})
    assert not [f for f in summary.summary(rec)["findings"] if f.startswith("The checkpoint age")]


def test_the_html_report_draws_redo_and_flushing(tmp_path):
    from innostall.analysis import views
    steps = [{"purge_batches": 1}] * 4
    states = [{"lsn": 100 * MIB + MIB * i, "checkpoint_lsn": 100 * MIB, "async_flush_age": 8 * MIB,
               "dirty_pages": 10 * i, "free_pages": 500, "undo_pages": 200} for i in range(1, 5)]
    page = views.html_report(load(tmp_path, with_state(purge_journal(steps), states), {"read": list(states[0])}))
    assert 'id="redo-flushing"' in page and "Checkpoint age and the flush points, MiB" in page
    assert "<li>redo written 3.0 MiB from 1.0 to 4.0 s" in page
    bare = views.html_report(load(tmp_path / "none", purge_journal(steps), {"read": [], "note": "no DWARF"}))
    assert 'id="redo-flushing"' not in bare and "not recorded: no DWARF" in bare


def test_the_age_is_said_read_as_often_as_the_recording_read_it(tmp_path):
    """meta.json says how often the age was read between snapshots (10 a second since
    2026-11-30); a recording made before says nothing and was read 20 times a second."""
    from innostall.analysis import views
    steps = [{"purge_batches": 1}] * 3
    states = [{"lsn": 100 * MIB + MIB * i, "checkpoint_lsn": 100 * MIB, "async_flush_age": 8 * MIB,
               "checkpoint_age_peak": MIB * i} for i in range(1, 4)]
    for said, rate in (({"age_reads_per_s": 10}, 10), ({}, 20)):
        rec = load(tmp_path / str(rate), with_state(purge_journal(steps), states), {"read": list(states[0]), **said})
        assert f"read {rate} times a second)" in views.text_report(rec)
        assert f"the checkpoint age {rate} times a second, its peak drawn" in views.html_report(rec)


def test_redo_by_writer_and_its_finding(tmp_path):
    import json
    from innostall.analysis.checks import verdict_check
    steps = [{"purge_batches": 1, "redo_writes": 100, "redo_bytes": 100_000, "redo_bytes_purge_coordinator": 10_000,
              "redo_bytes_purge_workers": 30_000}] * 3
    path = recordings.write(tmp_path / "rec", purge_journal(steps))
    meta = json.loads((path / "meta.json").read_text())
    meta["probes"].append({"name": "redo_write", "attached": True, "symbol": "_Z18log_buffer_reserveR5log_tm"})
    (path / "meta.json").write_text(json.dumps(meta))
    read = verdict_check.read(str(path))
    rec, s = read.rec, read.summed
    assert s["redo"]["bytes"] is None  # no LSN read: the probe's split stands alone
    assert s["redo"]["by_role"] == {"purge coordinator": 30_000, "purge worker": 90_000, "other": 180_000}
    assert s["redo"]["by_role_share"] == {"purge coordinator": 0.1, "purge worker": 0.3, "other": 0.6}
    assert "Purge wrote 40.0% of the redo (0.1 of 0.3 MiB: its coordinator 10.0%, its workers 30.0%)." in s["findings"]
    assert verdict_check.contradictions(read) == []
    told = {**s, "findings": ["Purge wrote 45.0% of the redo (0.1 of 0.3 MiB: its coordinator 10.0%, its workers 30.0%)."]}
    assert any("its tables say otherwise" in p for p in verdict_check.finding_problems(told, rec))


def test_the_purge_redo_finding_rounds_once(tmp_path):
    """Purge's share, 13.4451%, is said '13.4%': added up from shares kept to four decimals
    (0.099 + 0.0355), it read '13.5%', which the checker refused (a fresh root's recording)."""
    import json
    from innostall.analysis.checks import verdict_check
    steps = [{"purge_batches": 1, "redo_writes": 10, "redo_bytes": 1_000_000, "redo_bytes_purge_coordinator": 99_000,
              "redo_bytes_purge_workers": 35_451}]
    path = recordings.write(tmp_path / "rec", purge_journal(steps * 2))
    meta = json.loads((path / "meta.json").read_text())
    meta["probes"].append({"name": "redo_write", "attached": True})
    (path / "meta.json").write_text(json.dumps(meta))
    read = verdict_check.read(str(path))
    found = [f for f in read.summed["findings"] if f.startswith("Purge wrote")]
    assert found == ["Purge wrote 13.4% of the redo (0.3 of 1.9 MiB: its coordinator 9.9%, its workers 3.5%)."]
    assert verdict_check.contradictions(read) == []
