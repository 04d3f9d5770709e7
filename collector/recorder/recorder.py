"""Record: run the loader against a target, journal its snapshots, write the recording."""
from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable

from innostall import __version__
from innostall.errors import UserError
from innostall.format import writing
from innostall.format.journal import meta_fact
from innostall.format.schema import Schema

from ..discovery.discover import ResolvedProbe, layout
from ..discovery.target import Target
from ..loader import loader
from ..server.open_views import open_views_of
from ..server.signals import signal_plan
from ..server.state import state_plan
from . import idle, store
from .directory import Journal, discard_dir, prepare_dir, release_room, reserve_room, size_limit
from .live_line import LiveLine
from .own_cpu import children_cpu_s, own_cpu_accounts, own_cpu_s, self_cpu_s
from .plan import (check_budget, check_settings, global_addresses, group_settings, layout_args,
                   loader_args, plan_attachments, sampling_groups)
from .server_access import (joined_state, latch_namer, leave_out_replica_probes, replica_lag, server_settings,
                            sql_access, state_meta)
from .stack_journal import StackJournal
from .stopping import EndedAtOnce, EndedBySignal, Interrupted, Stopping
from .watch import Triggers, WatchJournal, finish_watch, saved_words
from .unwind import unwind_table

DEFAULT_BUDGET_PCT = 1.0  # of the server's CPU time the probes may cost; None: no budget


def describe(target: Target, probes: list[ResolvedProbe], interval_s: float,
             settings: dict[str, int], schema: Schema) -> dict:
    return {
        "tool_version": __version__,
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "target": {"pid": target.pid, "exe": target.exe_in_root or target.exe,
                   "family": target.family, "version": target.version,
                   "build_id": target.elf.build_id,
                   **({"exe_on_host": target.exe} if target.exe_in_root else {})},
        "interval_s": interval_s,
        "settings": settings,
        "probes": [{"name": p.name, "attached": p.ok, "fallback": p.fallback,
                    "symbol": p.symbol.name if p.symbol else None,
                    "offset": p.offset, "reason": p.reason} for p in probes],
        "schema": schema.raw,
    }


@dataclass(frozen=True)
class Asked:
    """What a recording was asked for: record()'s options, as record() documents them."""
    duration_s: float | None
    interval_s: float
    on_event: Callable[[dict], None] | None
    settings: dict[str, int] | None
    budget_pct: float | None
    sql_dsn: str | None
    use_sql: bool
    metrics: dict | None
    holders: bool
    max_size: int | None
    keep_literals: bool
    watch: Triggers | None = None  # innostall watch: what saves a recording (collector/recorder/watch.py)


@dataclass(frozen=True)
class Prepared:
    """What record_stages settled before the loader starts."""
    created: bool  # the directory was made for this recording (and goes if it never starts)
    settings: dict[str, int]
    schema: Schema
    struct_layout: dict | None
    groups: list[str]
    attachments: list[dict]
    cfi_path: str | None
    cfi_temporary: bool
    max_bytes: int
    replicating: bool | None  # the server said it replicates (None: not asked)


def record(target: Target, probes: list[ResolvedProbe], out_dir: str, *, duration_s: float | None,
           interval_s: float = 1.0, on_event: Callable[[dict], None] | None = None,
           settings: dict[str, int] | None = None,
           budget_pct: float | None = DEFAULT_BUDGET_PCT,
           sql_dsn: str | None = None, use_sql: bool = True, metrics: dict | None = None,
           holders: bool = False, start: idle.Start | None = None, max_size: int | None = None,
           keep_literals: bool = False, watch: Triggers | None = None) -> dict:
    """Trace until the duration ends, a signal arrives or the target exits. Returns meta.
    settings: see DEFAULT_SETTINGS; on_event sees the 'attached' and 'final' snapshots.
    budget_pct: the share of the server's CPU the probes may cost before the hot ones are
    sampled; None: no budget, everything stays attached (exact, whatever it costs).
    sql_dsn, use_sql: SQL access to name the threads holding read views (collector/server/sql.py);
    found from the server process unless given, never needed.
    metrics: live Prometheus metrics ({port, addr, textfile}; collector/recorder/live_metrics.py).
    holders: find who held the contended latches, with the scheduler's wakeup tracepoint:
    off unless asked, as it costs the server several times what the governor counts for it
    (make bench: +4.3% CPU per transaction for the latch probes with it, -1.8% without).
    start: the idle-CPU start the caller opened before discovery (collector/recorder/idle.py); one
    is opened here if not. max_size: the journal's size limit in bytes (directory.size_limit
    when None); reaching it ends the recording as Ctrl-C would, saying why. keep_literals:
    statements as the server shows them (record --keep-literals), not fingerprinted.
    watch: keep the journal in memory and save recordings around triggers instead
    (innostall watch; collector/recorder/watch.py); the meta returned is the watch's."""
    check_budget(budget_pct)
    asked = Asked(duration_s, interval_s, on_event, settings, budget_pct, sql_dsn, use_sql, metrics,
                  holders, max_size, keep_literals, watch)
    # until the probes attach, our work waits for CPU the server leaves (collector/recorder/idle.py)
    with contextlib.nullcontext(start) if start else idle.Start() as start:
        return record_stages(target, probes, out_dir, asked, start.stay, start.group)


def record_stages(target: Target, probes: list[ResolvedProbe], out_dir: str, asked: Asked,
                  starting: idle.Stay | None, group: idle.IdleGroup | None) -> dict:
    """record(), with the stay in the idle group that lasts until the probes attach: the
    loader starts in it, and leaves it itself once its BPF object is loaded."""
    replicating = leave_out_replica_probes(target, probes, asked)
    attachments = plan_attachments(probes, asked.holders)
    if not attachments:
        raise UserError("no probe could be resolved; see 'innostall probes'")
    schema = loader.schema()
    groups = sampling_groups(attachments, schema)
    struct_layout = layout(target)
    settings = {**global_addresses(target, probes), **group_settings(probes, groups),
                **check_settings(asked.settings or {})}
    with Stopping() as stopping:  # from here to the last meta.json: collector/recorder/stopping.py
        with stopping.held():
            created = prepare_dir(out_dir)
        lock, prepared = writing.hold(out_dir), None  # the lock: released when meta.json says how it ended
        try:
            with stopping.held():  # not cut between the table's temporary file and its name kept
                cfi_path, unwind_settings, cfi_temporary = unwind_table(target, probes, group)
            prepared = Prepared(created, {**settings, **unwind_settings}, schema, struct_layout, groups, attachments,
                                cfi_path, cfi_temporary, size_limit(out_dir, asked.max_size), replicating)
            return write_recording(target, probes, out_dir, asked, prepared, starting, group, stopping)
        except Interrupted as e:
            raise interrupted_start(out_dir, created, prepared, stopping, e.name)
        finally:
            os.close(lock)


def interrupted_start(out_dir: str, created: bool, prepared: Prepared | None, stopping: Stopping,
                      name: str) -> EndedBySignal:
    """A signal before the probes were attached: the loader ended and waited for, and what
    the recording made taken back; the error, in one line."""
    stopping.quiet = True  # a third signal does not cut this short
    stopping.end_loader()
    discard_dir(out_dir, created)
    if prepared and prepared.cfi_temporary:
        with contextlib.suppress(OSError):
            os.remove(prepared.cfi_path)
    return EndedBySignal(f"{name} while starting: the loader ended, nothing recorded"
                         + (f", {out_dir} taken back" if created else ""))


def abandon(out_dir: str, prepared: Prepared, e: UserError | OSError) -> UserError:
    """Take back what the recording made before it could start; the error, in one line."""
    discard_dir(out_dir, prepared.created)
    if prepared.cfi_temporary:
        os.remove(prepared.cfi_path)
    return UserError(str(e) if isinstance(e, UserError) else f"cannot write into {out_dir}: {e.strerror}")


def start_loader(target: Target, out_dir: str, asked: Asked, prepared: Prepared,
                 starting: idle.Stay | None, group: idle.IdleGroup | None, stopping: Stopping,
                 signal_args: list[str]) -> subprocess.Popen:
    """The loader, started with its log in the recording, and kept where a signal finds it
    (no signal between its start and that); a failure takes back what the recording made."""
    try:
        with open(os.path.join(out_dir, "loader.log"), "w") as log, stopping.held():
            stopping.proc = proc = loader.start(target.path, target.pid, loader_args(prepared.attachments, prepared.groups),
                                asked.interval_s, asked.duration_s, stderr=log, settings=prepared.settings,
                                layout=layout_args(prepared.struct_layout, prepared.schema),
                                budget_ppm=round((asked.budget_pct or 0) * 10000),
                                extra=signal_args + (["--unwind-table", prepared.cfi_path] if prepared.cfi_path else [])
                                + (["--home-cgroup", group.home_procs] if starting else []),
                                fed=any(":stdin:" in arg for arg in signal_args))
    except (UserError, OSError) as e:
        raise abandon(out_dir, prepared, e)
    if starting:
        starting.add(proc.pid)  # sent home with us if the machine stays saturated
    return proc


def write_recording(target: Target, probes: list[ResolvedProbe], out_dir: str, asked: Asked, prepared: Prepared,
                    starting: idle.Stay | None, group: idle.IdleGroup | None, stopping: Stopping) -> dict:
    """The recording, from the loader's start to the last meta.json."""
    meta = describe(target, probes, asked.interval_s, prepared.settings, prepared.schema)
    meta["layout"] = prepared.struct_layout
    state_places, meta["server_state"] = state_plan(target)
    meta["governor"] = {"budget_pct": asked.budget_pct, "groups": prepared.groups,
                        "attachments": prepared.attachments}
    # the replica's lag, read over SQL from before the loader starts, which it feeds whether
    # the replica is falling behind (replica_lag.LagReader.feed)
    lag = replica_lag(target, probes, asked, prepared.replicating)
    # the server's state that opens groups at once (state_signals.c); none without a budget
    signal_args, meta["governor"]["signals"] = signal_plan(target, prepared.groups if asked.budget_pct else [],
                                                           fed=lag is not None)
    with contextlib.ExitStack() as unless_started:
        if lag:
            unless_started.callback(lag.close)  # once the loader runs, closed with the rest below
        try:
            store.write_meta(out_dir, {**meta, "complete": False})
            reserve_room(out_dir)
        except (UserError, OSError) as e:
            raise abandon(out_dir, prepared, e)
        proc = start_loader(target, out_dir, asked, prepared, starting, group, stopping, signal_args)
        unless_started.pop_all()
    if proc.stdin:
        lag.feed(proc.stdin)
    views, meta["read_views_from_memory"] = open_views_of(target)
    names, meta["sql"] = sql_access(target, probes, asked.sql_dsn, asked.use_sql, asked.keep_literals,
                                    views_from_memory=views is not None)
    namer, meta["latch_names"] = latch_namer(target, probes, asked.sql_dsn, asked.use_sql)
    in_force = server_settings(target, asked)
    state = joined_state(target, asked, state_places, meta)
    journal = WatchJournal(out_dir, asked.watch, meta) if asked.watch else Journal(out_dir)
    meta["max_size"] = prepared.max_bytes
    live = live_metrics(asked.metrics, prepared.schema, meta)
    at_once = None  # the second signal's name, when one ended the recording at once
    stacks = StackJournal(target, names, namer, views, prepared.schema.tables)  # the loader's tables as it prints them
    stacks.index_executable()  # while the loader calibrates, not once attached
    # the tables' writer, started ahead of the end (store.TablesAhead); one not asked for is ended
    with contextlib.closing(store.TablesAhead(out_dir, group, None if asked.watch else asked.duration_s,
                                              open_ended=not asked.watch)) as tables:
        try:
            attached_at = follow(proc, journal, meta, stacks, asked.on_event,
                                 LiveLine(prepared.groups, prepared.schema) if sys.stderr.isatty() else None,
                                 live, starting, state, lag, stopping, tables)
        except EndedAtOnce as e:  # the loader is ended already
            at_once, attached_at = e.name, stopping.attached_at
        finally:
            stopping.loader_ended()
            meta["sql"].update(names.close() if names else {})
            meta["server_state"] = state_meta(meta["server_state"], state)
            meta["server_variables"] = in_force.at_end()
            if views:
                views.close()
            if lag:
                lag.close()
            if proc.stdin:
                with contextlib.suppress(OSError):  # the loader gone already
                    proc.stdin.close()  # its fed signals fall back to 0
            if namer:
                namer.memory.close()
            if live:
                live.close()
            if prepared.cfi_temporary:
                os.remove(prepared.cfi_path)
        if attached_at is None:
            reason = loader.failure(proc, os.path.join(out_dir, "loader.log"))
            discard_dir(out_dir, prepared.created)
            raise UserError(reason)
        if at_once:
            return end_at_once(out_dir, meta, journal, asked, at_once, time.monotonic() - attached_at, stopping)
        if asked.watch:
            release_room(out_dir)
            meta["end_reason"] = meta.pop("stop_words", meta.get("end_reason"))
            return finish_watch(journal, meta, give_up=stopping.after_loader)
        return finish(out_dir, meta, proc, journal, time.monotonic() - attached_at, group, stopping, tables)


def end_at_once(out_dir: str, meta: dict, journal, asked: Asked, name: str, seconds: float,
                stopping: Stopping) -> dict:
    """A second signal ended the recording at once, the loader first (no probe outlives
    it): its last interval and the tables are left out, the journal keeps the rest; a
    watch's save being written ends there. One line, and the exit status of a signal."""
    meta["end_reason"] = f"ended at once by a second {name}"
    release_room(out_dir)
    if asked.watch:
        said = finish_watch(journal, meta, at_once=True)
        raise EndedBySignal(f"watch {meta['end_reason']}, the loader first: {saved_words(said, out_dir)}")
    with contextlib.suppress(UserError):
        store.write_meta(out_dir, {**meta, "complete": False})
    raise EndedBySignal(f"{out_dir}: {meta['end_reason']} after {seconds:.0f} s, the loader first (no probe "
                        "left): its last interval and the tables left out; 'innostall report' reads its journal")


def finish(out_dir: str, meta: dict, proc: subprocess.Popen, journal: Journal, seconds: float,
           group: idle.IdleGroup | None, stopping: Stopping, tables: store.TablesAhead | None = None) -> dict:
    """The tables and the last meta.json, or one line on how the recording ended early."""
    loader_ended_s = meta.pop("own_cpu_traced_s", None)  # own CPU at the loader's last snapshot
    if journal.failed:
        return end_on_full_disk(out_dir, meta, journal, seconds)
    release_room(out_dir)
    if "stop_words" in meta:
        meta["end_reason"] = meta.pop("stop_words")
    if "end_reason" not in meta:  # the loader ended without its last snapshot
        return end_without_loader(out_dir, meta, loader.end_reason(proc), seconds)
    traced_cpu_s = loader_ended_s or own_cpu_s()
    before_tables = self_cpu_s() + children_cpu_s()  # the tables' writer is reaped in between
    try:
        skipped_by = store.write_tables_aside(out_dir, group, stopping.after_loader, tables)
    except UserError:
        store.write_meta(out_dir, {**meta, "complete": False})
        raise
    meta["own_cpu_s"] = own_cpu_accounts(meta.get("own_cpu_s", {}), traced_cpu_s,
                                         self_cpu_s() + children_cpu_s() - before_tables)
    if skipped_by:
        meta["tables"] = f"skipped ({skipped_by}): the report reads the journal"
    meta["complete"] = True
    store.write_meta(out_dir, meta)
    return meta


def live_metrics(options: dict | None, schema: Schema, meta: dict):
    """The Prometheus exporter, started, if asked for (imported only then)."""
    if not options:
        return None
    from .live_metrics import LiveMetrics

    target = meta["target"]
    exporter = LiveMetrics(schema, {"host": meta["host"], "server": target["family"] or "",
                                    "version": target["version"] or "", "pid": str(target["pid"] or "")},
                           **options)
    exporter.start()
    return exporter


def follow(proc: subprocess.Popen, journal: "Journal", meta: dict, stacks: StackJournal,
           on_event: Callable[[dict], None] | None, live: LiveLine | None,
           metrics=None, starting: idle.Stay | None = None, state=None, lag=None,
           stopping: Stopping | None = None, tables: store.TablesAhead | None = None) -> float | None:
    """Journal the loader's lines until it ends, noting in meta what they tell; returns
    when the probes were attached (time.monotonic()), None if they never were. The start's
    stay in the idle group ends at the attach: from then on we keep up with the loader.
    state: the server's state read from its memory (collector/server/state.py), added to
    each snapshot as it arrives, with a replica's lag as it reports it (lag: a LagReader).
    stopping: the signals' handler (stopping.py), told when the probes are attached.
    tables: the tables' writer, started ahead of a known end (store.TablesAhead)."""
    attached_at = None
    with journal:
        for line, rec in loader.snapshots(proc):
            kind = rec["type"]
            if kind == "attached":
                if starting:
                    starting.end()
                attached_at = time.monotonic()
                if stopping:  # from now on a first signal asks the loader for its last snapshot
                    stopping.attached_at, stopping.attached = attached_at, True
                meta["own_cpu_s"] = {"start": own_cpu_s(proc.pid)}
                line = name_attachments(rec, meta["governor"])
            elif (state or lag) and kind in ("interval", "final"):
                rec["server"] = {**(state.read() if state else {}), **(lag.gauges() if lag else {})}
                line = json.dumps(rec, separators=(",", ":")) + "\n"
            if not journal.write(stacks.journal_line(rec, line), rec):
                stop(proc)  # the disk is full: end now, keep what was written
            elif "stop_words" not in meta and (journal.done or journal.written >= meta["max_size"]):
                meta["stop_words"] = journal.done or size_words(meta["max_size"], time.monotonic() - (attached_at or 0))
                sys.stderr.write(f"innostall: {meta['stop_words']}: ending the recording\n")
                stop(proc)  # as Ctrl-C: the loader's last snapshot still comes
            note(meta, rec)
            if metrics:
                metrics.update(rec)
            if kind == "interval" and live:
                live.show(rec)
            if on_event and kind in ("attached", "final"):
                on_event(rec)
            if kind == "final":  # the loader's CPU while it is there to read (own_cpu.py)
                meta["own_cpu_traced_s"] = own_cpu_s(proc.pid)
            if tables:
                tables.heed(kind)
        proc.wait()
    if live and attached_at:
        sys.stderr.write("\n")
    return attached_at


def size_words(limit: int, seconds: float) -> str:
    return f"size limit reached ({limit / 2**20:,.1f} MiB of journal, --max-size) after {seconds:.0f} s"


def name_attachments(rec: dict, governor: dict) -> str:
    """The 'attached' line, naming what each attachment serves and its group."""
    rec["groups"] = governor["groups"]
    rec["signals"] = [s["name"] for s in governor.get("signals", {}).get("read", [])]
    for program, planned in zip(rec["programs"], governor["attachments"]):
        program.update(probes=planned["probes"], group_name=planned["group"])
    return json.dumps(rec, separators=(",", ":")) + "\n"


def note(meta: dict, rec: dict) -> None:
    """What meta.json keeps of a loader line: the calibration, and the start, stop and end
    (recording_format.meta_fact, as the reader takes them from a journal)."""
    if rec["type"] == "calibration":
        meta["governor"]["hit_cost_ns"] = {
            "entry": rec["entry_ns"], "return": rec["return_ns"],
            "tracepoint": rec.get("tracepoint_ns"),
            **({"indirect_factor": rec["indirect_factor"]} if "indirect_factor" in rec else {}),
            **({"entry_range": rec["entry_range_ns"], "floored": rec["floored"]}
               if "entry_range_ns" in rec else {})}
    meta.update(meta_fact(rec))


def stop(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGINT)


def end_without_loader(out_dir: str, meta: dict, reason: str, seconds: float) -> dict:
    """The loader was killed or failed: its last interval and final snapshot are lost, the
    journal keeps the rest. The recording is incomplete and the command fails, saying so."""
    meta["end_reason"] = reason
    store.write_meta(out_dir, {**meta, "complete": False})
    raise UserError(f"{out_dir}: the recording ended early after {seconds:.0f} s: {reason}; its "
                    "journal keeps every interval written before, and 'innostall report' reads it")


def end_on_full_disk(out_dir: str, meta: dict, journal: Journal, seconds: float) -> dict:
    """The journal holds the recording up to its last complete line; the tables cannot be
    written. Say so in meta.json if it still fits, and in one line."""
    meta["end_reason"] = f"disk full ({journal.failed}) after {seconds:.0f} s"
    release_room(out_dir)
    with contextlib.suppress(UserError):
        store.write_meta(out_dir, {**meta, "complete": False})
    raise UserError(f"{out_dir}: {meta['end_reason']}: recording stopped; its journal keeps "
                    "every interval written before, and 'innostall report' reads it")
