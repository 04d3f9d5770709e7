"""Recordings for the view tests, written the way the recorder writes them: meta.json and a
journal of cumulative snapshots, turned into Parquet tables by the format's own code."""
from __future__ import annotations

import copy
import json
from pathlib import Path

from bench import long_recording  # scripts/bench/, on sys.path from conftest
from innostall.format import journal as fmt
from innostall.collector.discovery import discover
from innostall.collector.loader import loader
from innostall.collector.recorder import store

SLOTS = 32
PID = 4242  # the made-up server these recordings are of
# demangled frames as the recorder folds them: full of <, >, & and commas
FRAMES = {
    "root": "start_thread",
    "conn": "do_handle_one_connection(CONNECT*, bool)",
    "exec": "mysql_execute_command(THD*, bool)",
    "select": "handle_select(THD*, LEX*, select_result*, unsigned long long)",
    "search": "row_search_mvcc(unsigned char*, page_cur_mode_t, row_prebuilt_t*, unsigned long, unsigned long)",
    "build": "row_vers_build_for_consistent_read(unsigned char const*, mtr_t*, dict_index_t*, "
             "rec_offs**, ReadView*, mem_block_info_t**, mem_block_info_t*, unsigned char**, "
             "dtuple_t const**, mtr_t*)",
    "prev": "trx_undo_prev_version_build(unsigned char const*, dict_index_t*, rec_offs*, "
            "mem_block_info_t*, unsigned char**, mem_block_info_t*, dtuple_t const**, unsigned long)",
    "tmpl": "std::vector<buf_page_t*, ut_allocator<buf_page_t*, true> >::push_back(buf_page_t* const&)",
    "update": "mysql_update(THD*, TABLE_LIST*, List<Item>&, List<Item>&, Item*, unsigned int, "
              "st_order*, unsigned long long, bool, unsigned long long*, unsigned long long*)",
}
SELECT_STACK = ";".join(FRAMES[k] for k in ["root", "conn", "exec", "select", "search", "build", "prev"])
UPDATE_STACK = ";".join(FRAMES[k] for k in ["root", "conn", "exec", "update", "search", "build", "tmpl"])


def hist(**slots: int) -> list[int]:
    values = [0] * SLOTS
    for slot, n in slots.items():
        values[int(slot[1:])] = n
    return values


def meta(walks: bool, latches: bool = False, **extra) -> dict:
    probes = [{"name": "purge_batch", "attached": True, "fallback": False,
               "symbol": "_Z9trx_purgemm", "offset": 15809552, "reason": None}]
    if walks:
        probes += [{"name": "version_walk", "attached": True, "fallback": False,
                    "symbol": "_Z34row_vers_build_for_consistent_readPKhP5mtr_t", "offset": 1,
                    "reason": None},
                   {"name": "version_step", "attached": True, "fallback": False,
                    "symbol": "_Z27trx_undo_prev_version_buildPKh", "offset": 2, "reason": None}]
    if latches:
        probes += [{"name": f"block_lock_{m}", "attached": True, "fallback": False,
                    "symbol": "_ZN8sux_lockI14ssux_lock_implILb1EEE6x_lockEb", "offset": 3,
                    "reason": None} for m in ("s", "x")]
    probes.append({"name": "undo_read", "attached": False, "fallback": False, "symbol": None,
                   "offset": None, "reason": "no symbol <sux_lock<ssux_lock_impl<true> >::x_lock> in .symtab"})
    return {"tool_version": "0.1.0", "host": "test<host>", "kernel": "6.1 & more",
            "target": {"pid": PID, "exe": "/opt/<mariadb>/bin/mariadbd", "family": "mariadb",
                       "version": "11.4.5", "build_id": "df9ed6c4"},
            "interval_s": 1.0, "probes": probes, "settings": {"deep_walk_threshold": 100},
            "start_real_ns": 1795320498440089178, "stop_real_ns": 1795320498440089178 + 6 * 10**9,
            "end_reason": "duration", "complete": True, "schema": loader.schema().raw, **extra}


LATCH_HOLDERS = [  # latch address, mode, waker's thread name, waits, ns, waker's stack, name
    [0x7f0000001000, 1, "mariadbd", 30, 7_000_000,
     ";".join([FRAMES["root"], FRAMES["conn"], FRAMES["exec"], FRAMES["update"],
               "mtr_t::commit()", "sux_lock<ssux_lock_impl<true> >::x_unlock(bool)",
               "srw_mutex_impl<true>::wake()", "syscall"]), "block 5:3 sbtest/sbtest1 PRIMARY"],
    [0x7f0000002000, 3, "mariadbd", 4, 300_000,
     ";".join(["purge_coordinator_callback(void*)", "trx_purge(unsigned long, bool)",
               "pthread_mutex_unlock", "__lll_lock_wake"]), "unknown"],
]
LATCH_STACKS = [  # mode (index into S, X, SX, other), waits, ns, folded stack
    [1, 40, 9_000_000, ";".join([FRAMES["root"], FRAMES["conn"], FRAMES["exec"], FRAMES["update"],
                                 "btr_cur_t::search_leaf(dtuple_t const*, page_cur_mode_t, btr_latch_mode, mtr_t*)",
                                 "sux_lock<ssux_lock_impl<true> >::x_lock(bool)"])],
    [0, 25, 2_500_000, ";".join([FRAMES["root"], FRAMES["conn"], FRAMES["exec"], FRAMES["select"],
                                 FRAMES["search"], "buf_page_get_gen(page_id_t, unsigned long, rw_lock_type_t, "
                                 "buf_block_t*, unsigned long, mtr_t*, dberr_t*, bool)"])],
    [1, 5, 1_200_000, ";".join(["purge_coordinator_callback(void*)", "trx_purge(unsigned long, bool)",
                                "row_purge_step(que_thr_t*)", "sux_lock<ssux_lock_impl<true> >::x_lock(bool)"])],
]


def synthetic_journal(intervals: int, walks: bool, scale: int = 1, latches: bool = False) -> list[dict]:
    """A stall then a catch-up: purge batches find nothing while reads walk deep version
    chains and writers wait on a hot page's latch, then one interval purges the backlog.
    scale multiplies the activity."""
    records = [{"type": "attached", "mono_ns": 10**9, "real_ns": 0, "programs": []}]
    counters = {"purge_batches": 0, "purge_empty_batches": 0, "purge_pages": 0, "unmatched_returns": 0}
    hists = {"purge_batch_latency": [0] * SLOTS, "purge_batch_pages": [0] * SLOTS}
    if latches:
        counters.update(block_waits_s=0, block_waits_x=0, block_waits_sx=0, block_wait_ns=0,
                        block_io_waits=0, other_latch_waits=0, other_latch_wait_ns=0, latch_map_full=0)
        hists.update(block_wait_s=[0] * SLOTS, block_wait_x=[0] * SLOTS, block_wait_sx=[0] * SLOTS,
                     other_latch_wait=[0] * SLOTS)
    if walks:
        counters.update(version_walks=0, version_walks_zero=0, version_steps=0,
                        version_steps_outside=0, version_walk_max_depth=0, deep_walks=0, drops=0)
        hists.update(version_walk_depth=[0] * SLOTS, version_walk_latency=[0] * SLOTS)
    for i in range(1, intervals + 1):
        t_ns = 10**9 + i * 10**9
        catch_up = i == intervals - 1
        step = {"purge_batches": (900 if catch_up else 1) * scale,
                "purge_empty_batches": 0 if catch_up else scale,
                "purge_pages": 90000 * scale if catch_up else 0}
        for k, v in step.items():
            counters[k] += v
        hists["purge_batch_latency"][7] += step["purge_batches"] - step["purge_empty_batches"]
        hists["purge_batch_latency"][4] += step["purge_empty_batches"]
        hists["purge_batch_pages"][6] += step["purge_batches"] - step["purge_empty_batches"]
        hists["purge_batch_pages"][0] += step["purge_empty_batches"]
        if walks and not catch_up:
            depth = 50 * i
            counters["version_walks"] += 40 * scale
            counters["version_steps"] += 40 * scale * depth
            counters["version_steps_outside"] += 3 * scale
            counters["version_walk_max_depth"] = max(counters["version_walk_max_depth"], depth)
            counters["deep_walks"] += 2 if depth >= 100 else 0
            hists["version_walk_depth"][depth.bit_length() - 1] += 40 * scale
            hists["version_walk_latency"][min(depth.bit_length() + 2, 31)] += 40 * scale
            if depth >= 100:
                records += [{"type": "deep_walk", "mono_ns": t_ns - 5 * 10**8, "tid": 700 + i,
                             "depth": depth, "latency_ns": depth * 2000, "folded": SELECT_STACK},
                            {"type": "deep_walk", "mono_ns": t_ns - 2 * 10**8, "tid": 900,
                             "depth": depth // 2, "latency_ns": depth * 900, "folded": UPDATE_STACK}]
        if latches:
            counters["block_waits_x"] += 9 * scale
            counters["block_waits_s"] += 5 * scale
            counters["block_wait_ns"] += 2_540_000 * scale
            counters["other_latch_waits"] += scale
            counters["other_latch_wait_ns"] += 40_000 * scale
            hists["block_wait_x"][8] += 9 * scale
            hists["block_wait_s"][6] += 5 * scale
            hists["other_latch_wait"][5] += scale
            records.append({"type": "latches", "mono_ns": t_ns, "latches": [  # named by the recorder
                [1, 5 << 32 | 3, 1, 9 * i * scale, 2_500_000 * i * scale, 900_000, 0x7F2F1B402278,
                 [0] * 8 + [9 * i * scale], "block 5:3 sbtest/sbtest1 PRIMARY", "block"],
                [0, 0x5600504C01C8, 3, i * scale, 40_000 * i * scale, 50_000, 0x5600504C01C8,
                 [0] * 5 + [i * scale], "lock_sys.latch", "srw_lock"]]})
        records.append({"type": "final" if i == intervals else "interval", "mono_ns": t_ns,
                        "real_ns": 0, "counters": dict(counters), "hists": copy.deepcopy(hists)})
    if latches:
        records.insert(-1, {"type": "latch_tables", "mono_ns": records[-1]["mono_ns"],
                            "pages": [[5, 3, 40 * scale, 9_000_000 * scale], [5, 4, 30 * scale, 3_700_000 * scale]],
                            "stacks": [[m, w * scale, ns * scale, f] for m, w, ns, f in LATCH_STACKS],
                            "latch_stacks": [[1, 5 << 32 | 3, m, w * scale, ns * scale, f]
                                             for m, w, ns, f in LATCH_STACKS],
                            "holders": [[latch, m, thread, w * scale, ns * scale, f, name]
                                        for latch, m, thread, w, ns, f, name in LATCH_HOLDERS]})
    return records


def write(directory: Path, records: list[dict], **meta_fields) -> Path:
    """A complete recording from journal records, through the format's journal → tables."""
    directory.mkdir(parents=True, exist_ok=True)
    walks = any(r.get("type") == "deep_walk" for r in records)
    latches = any(r.get("type") == "latch_tables" for r in records)
    sampled = {name.rpartition(".")[2] for r in records for name in r.get("counters", {})
               if name.startswith("governor.attached_ns.")}
    if sampled and "governor" not in meta_fields:  # as the recorder's plan says which probe is in which
        meta_fields["governor"] = {"groups": sorted(sampled), "attachments": [
            {"spec": f"{probe}_exit=0x1", "probes": [probe], "group": group}
            for group in sorted(sampled) for probe, entry in discover.catalog().items()
            if entry.get("group") == group]}
    store.write_meta(str(directory), meta(walks, latches, **meta_fields))
    (directory / fmt.JOURNAL).write_text("".join(json.dumps(r) + "\n" for r in records))
    store.write_tables(str(directory))
    return directory


def synthetic(directory: Path, intervals: int = 6, walks: bool = True, scale: int = 1,
              latches: bool = True) -> Path:
    return write(directory, synthetic_journal(intervals, walks, scale, latches))


def stretched(source: Path, directory: Path, intervals: int) -> Path:
    """A long recording from a real one: every line of its journal repeated, each repeat
    shifted in time, its cumulative figures advanced (scripts/bench/long_recording.py)."""
    return long_recording.generate(source, directory, intervals)


# --- purge stories: the history, read views and batch time, interval by interval ----------

VIEW_STACK = ";".join([FRAMES["root"], FRAMES["conn"], FRAMES["exec"],
                       "trans_begin(THD*, unsigned int)",
                       "innobase_start_trx_and_assign_read_view(handlerton*, THD*)",
                       "trx_assign_read_view(trx_t*)"])


def view(tid: int, opened_s: float, history_at_open: int | None = None, **extra) -> dict:
    """One open read view as the recorder writes it (opened_s: seconds from the attach)."""
    return {"tid": tid, "opened_s": opened_s, "history_at_open": history_at_open,
            "folded": VIEW_STACK if opened_s >= 0 else "", "source": "probe" if opened_s >= 0 else "sql",
            **extra}


def purge_journal(steps: list[dict], attach_ns: int = 10**9, interval_ns: int = 10**9) -> list[dict]:
    """A journal from one dict per interval: any counter's delta by name, 'history' (the
    history length at the snapshot; None: not read in that interval, so the gauge keeps its
    last value and history_reads does not move) and 'views' (the read views open at the
    snapshot, from view(), oldest first), written as the loader and recorder write them."""
    records = [{"type": "attached", "mono_ns": attach_ns, "real_ns": 0, "programs": []}]
    counters: dict[str, int] = {"purge_batches": 0, "purge_empty_batches": 0, "purge_pages": 0,
                                "history_length": 0, "history_reads": 0}
    hists = {"purge_batch_latency": [0] * SLOTS}
    for i, step in enumerate(steps, start=1):
        t_ns = attach_ns + i * interval_ns
        for name, value in step.items():
            if name not in ("history", "views"):
                counters[name] = counters.get(name, 0) + value
        if step.get("history") is not None:
            counters["history_length"] = step["history"]
            counters["history_reads"] += 1
        hists["purge_batch_latency"][7] += step.get("purge_batches", 0)
        open_views = step.get("views", [])
        records.append({"type": "read_views", "mono_ns": t_ns - 1000, "open": len(open_views),
                        "views": [{**{k: v for k, v in w.items() if k != "opened_s"},
                                   "opened_ns": attach_ns + int(w["opened_s"] * 1e9)}
                                  for w in open_views]})
        records.append({"type": "final" if i == len(steps) else "interval", "mono_ns": t_ns,
                        "real_ns": 0, "counters": dict(counters), "hists": copy.deepcopy(hists)})
    return records


def pinned_then_catch_up() -> list[dict]:
    """A consistent snapshot opened at 0.5 s by thread 4321 (history 1000 then) pins purge
    for 12 s while updates add 800 transactions a second; it commits, purge drains the
    history in 2 s with full batches, then has nothing to do."""
    snapshot = view(4321, 0.5, 1000, connection_id=17, user="app",
                    statement="SELECT SUM(k) FROM sbtest1")
    steps = []
    for i in range(1, 13):
        steps.append({"history": 1000 + 800 * i, "purge_batches": 1, "purge_empty_batches": 1,
                      "views": [snapshot], "purge_batch_ns": 200_000, "purge_batch_cpu_ns": 150_000})
    steps += [{"history": 4000, "purge_batches": 60, "purge_pages": 60 * 127,
               "purge_batch_ns": 900_000_000, "purge_batch_cpu_ns": 700_000_000,
               "purge_batch_io_ns": 100_000_000, "purge_batch_latch_ns": 50_000_000},
              {"history": 0, "purge_batches": 30, "purge_pages": 30 * 127,
               "purge_batch_ns": 450_000_000, "purge_batch_cpu_ns": 350_000_000,
               "purge_batch_io_ns": 50_000_000, "purge_batch_latch_ns": 20_000_000}]
    steps += [{"history": 0, "purge_batches": 1, "purge_empty_batches": 1} for _ in range(4)]
    return purge_journal(steps)


# --- real recordings made under a load whose start and end are not what the test is about ---

# record --patience 0: innostall's own start and the tables' writing share the CPU at once,
# where at the default patience each waits up to idle.PATIENCE_S (5 s) for idle CPU that a
# saturating load never leaves (test_governor's 4-thread oltp_read_write, a 4-s recording:
# 13.1-13.3 s at the default, 7.6-8.7 s at 0). A load that leaves CPU idle costs the default
# little (test_mysql_views_live's 2-thread updates: 0.5-3 s a recording, within the test's
# noise). The default start and end under load stay with the tests about them
# (test_idle_cpu_live.py) and with those whose faults and signals are (test_faults.py,
# test_signals_live.py).
NO_PATIENCE = ["--patience", "0"]


def record_at_once(tgt, probes, out_dir: str, **kwargs) -> dict:
    """recorder.record(...) as `record --patience 0` makes it (NO_PATIENCE, in this process)."""
    from innostall.collector.recorder import idle, recorder  # the live tests' only: not for the pure ones

    with idle.Start(patience_s=0) as start:
        return recorder.record(tgt, probes, out_dir, start=start, **kwargs)
