"""Record: run the loader against a target, journal its snapshots, write the recording."""
from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Callable

from innostall import __version__
from innostall.errors import UserError
from innostall.format import writing
from innostall.format.journal import JOURNAL, meta_fact
from innostall.format.schema import Schema

from ..discovery import cache, libc
from ..discovery.discover import ResolvedProbe, layout
from ..discovery.target import Target
from ..loader import loader
from ..server import latch_names, sql
from ..server.view_names import ViewNames
from . import idle, store
from .directory import Journal, discard_dir, prepare_dir, release_room, reserve_room, size_limit
from .live_line import LiveLine
from .plan import (check_budget, check_settings, global_addresses, group_settings, layout_args,
                   loader_args, plan_attachments, sampling_groups)
from .stack_journal import StackJournal

DEFAULT_BUDGET_PCT = 1.0  # of the server's CPU time the probes may cost; None: no budget


def unwind_table(target: Target, probes: list[ResolvedProbe],
                 group: idle.IdleGroup | None) -> tuple[str | None, dict[str, int], bool]:
    """libc's frame table for the latch programs' stacks (collector/discovery/libc.py), which the
    loader reads at start: its path, the settings that go with it, and whether the path is
    a temporary file to remove after the recording (it is not when the table is cached).
    None and no settings without latch probes, a process, or a table that fits."""
    if not target.pid or not any(p.ok and "latch_wait_exit" in p.programs.values() for p in probes):
        return None, {}, False
    lib, directory = libc.find(target.pid), cache.cache_dir()
    cached = libc.cached_table_path(lib, directory) if lib and directory else None
    if cached:
        settings = (libc.cached_settings(lib, cached)
                    or build_unwind_table(target.pid, cached, group))
        if settings:
            return cached, settings, False
    fd, path = tempfile.mkstemp(prefix="innostall-libc-cfi-")
    os.close(fd)
    settings = build_unwind_table(target.pid, path, group)
    with contextlib.suppress(OSError):
        os.remove(path + ".json")  # the counts matter only in the cache
    if not settings:
        os.remove(path)
        return None, {}, False
    return path, settings, True


def build_unwind_table(pid: int, path: str, group: idle.IdleGroup | None) -> dict[str, int] | None:
    """Decode libc's .eh_frame into path, in a process of its own as the tables are
    written: decoding takes memory, and it runs on idle CPU."""
    done = run_idle([sys.executable, "-m", "innostall.collector.discovery.libc", str(pid), path], group)
    return json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else None


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


@contextlib.contextmanager
def signals_forwarded_to(proc):
    """Ctrl-C, SIGTERM and SIGHUP ask the loader to stop; we keep reading its last lines."""
    def forward(signum, frame):
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)

    caught = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, forward) for s in caught}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def latch_namer(target: Target, probes: list[ResolvedProbe], dsn: str | None,
                use_sql: bool) -> tuple[latch_names.LatchNamer | None, dict]:
    """A namer for the latches, when any latch probe is attached; the pages' tables and
    indexes come from the server's dictionary, read once by SQL when innostall may log in."""
    if not any(p.ok and (p.group == "latch" or p.name == "version_walk") for p in probes) \
            or not target.pid:
        return None, {}
    dictionary, note = {}, "off (--no-sql)"
    if use_sql:
        session, note = sql.connect(target.pid, dsn)
        if session is not None:
            with session:
                try:
                    dictionary = session.index_names()
                except Exception as e:  # noqa: BLE001 - names are a bonus; the recording goes on
                    note = f"the dictionary could not be read: {e}"
            note = note or f"{len(dictionary)} indexes read by SQL"
    return latch_names.namer_for(target, dictionary), {"dictionary": note}


def run_idle(cmd: list[str], group: idle.IdleGroup | None) -> subprocess.CompletedProcess:
    """Run a command of our own bulk work on CPU time nothing else wants (collector/recorder/idle.py):
    in the idle cgroup, for its patience at most; at SCHED_IDLE where there is none."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=None if group else idle.sched_idle)
    stay = group.stay([proc.pid]) if group else None
    out, err = proc.communicate()
    if stay:
        stay.end()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def sql_access(target: Target, probes: list[ResolvedProbe], dsn: str | None,
               enabled: bool) -> tuple[ViewNames | None, dict]:
    """SQL access to name the threads that hold read views, when the read views are traced
    and we may log in; and what meta.json says of it."""
    if not enabled:
        return None, {"access": False, "reason": "off (--no-sql)"}
    if not any(p.ok and p.name == "read_view" for p in probes):
        return None, {"access": False, "reason": "read views are not traced"}
    session, reason = sql.connect(target.pid, dsn)
    if session is None:
        return None, {"access": False, "reason": reason}
    return ViewNames(session), {"access": True, "socket": session.socket, "user": session.user,
                                "tid_source": session.tid_source, "note": session.note}


def record(target: Target, probes: list[ResolvedProbe], out_dir: str, *, duration_s: float | None,
           interval_s: float = 1.0, on_event: Callable[[dict], None] | None = None,
           settings: dict[str, int] | None = None,
           budget_pct: float | None = DEFAULT_BUDGET_PCT,
           sql_dsn: str | None = None, use_sql: bool = True, metrics: dict | None = None,
           holders: bool = False, start: idle.Start | None = None, max_size: int | None = None) -> dict:
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
    when None); reaching it ends the recording as Ctrl-C would, saying why."""
    check_budget(budget_pct)
    # until the probes attach, our work waits for CPU the server leaves (collector/recorder/idle.py)
    with contextlib.nullcontext(start) if start else idle.Start() as start:
        return record_stages(target, probes, out_dir, start.stay, start.group,
                             duration_s=duration_s, interval_s=interval_s, on_event=on_event,
                             settings=settings, budget_pct=budget_pct, sql_dsn=sql_dsn,
                             use_sql=use_sql, metrics=metrics, holders=holders, max_size=max_size)


def record_stages(target: Target, probes: list[ResolvedProbe], out_dir: str,
                  starting: idle.Stay | None, group: idle.IdleGroup | None, *,
                  duration_s: float | None, interval_s: float, on_event, settings, budget_pct,
                  sql_dsn, use_sql, metrics, holders, max_size) -> dict:
    """record(), with the stay in the idle group that lasts until the probes attach: the
    loader starts in it, and leaves it itself once its BPF object is loaded."""
    attachments = plan_attachments(probes, holders)
    if not attachments:
        raise UserError("no probe could be resolved; see 'innostall probes'")
    schema = loader.schema()
    groups = sampling_groups(attachments, schema)
    struct_layout = layout(target)
    settings = {**global_addresses(target, probes), **group_settings(probes, groups),
                **check_settings(settings or {})}
    created = prepare_dir(out_dir)
    lock = writing.hold(out_dir)  # released when meta.json says how the recording ended
    try:
        cfi_path, unwind_settings, cfi_temporary = unwind_table(target, probes, group)
        settings.update(unwind_settings)
        return write_recording(target, probes, out_dir, created, starting, group, settings=settings,
                               schema=schema, struct_layout=struct_layout, groups=groups,
                               attachments=attachments, cfi=(cfi_path, cfi_temporary),
                               interval_s=interval_s, duration_s=duration_s, on_event=on_event,
                               budget_pct=budget_pct, sql_dsn=sql_dsn, use_sql=use_sql, metrics=metrics,
                               max_bytes=size_limit(out_dir, max_size))
    finally:
        os.close(lock)


def write_recording(target: Target, probes: list[ResolvedProbe], out_dir: str, created: bool,
                    starting: idle.Stay | None, group: idle.IdleGroup | None, *, settings, schema,
                    struct_layout, groups, attachments, cfi, interval_s, duration_s, on_event,
                    budget_pct, sql_dsn, use_sql, metrics, max_bytes) -> dict:
    """The recording, from the loader's start to the last meta.json."""
    cfi_path, cfi_temporary = cfi
    meta = describe(target, probes, interval_s, settings, schema)
    meta["layout"] = struct_layout
    meta["governor"] = {"budget_pct": budget_pct, "groups": groups, "attachments": attachments}
    log_path = os.path.join(out_dir, "loader.log")
    try:
        store.write_meta(out_dir, {**meta, "complete": False})
        reserve_room(out_dir)
        with open(log_path, "w") as log:
            proc = loader.start(target.path, target.pid, loader_args(attachments, groups),
                                interval_s, duration_s, stderr=log, settings=settings,
                                layout=layout_args(struct_layout, schema),
                                budget_ppm=round((budget_pct or 0) * 10000),
                                extra=(["--unwind-table", cfi_path] if cfi_path else [])
                                + (["--home-cgroup", group.home_procs] if starting else []))
        if starting:
            starting.add(proc.pid)  # sent home with us if the machine stays saturated
    except (UserError, OSError) as e:
        discard_dir(out_dir, created)
        if cfi_temporary:
            os.remove(cfi_path)
        raise UserError(str(e) if isinstance(e, UserError) else f"cannot write into {out_dir}: {e.strerror}")
    names, meta["sql"] = sql_access(target, probes, sql_dsn, use_sql)
    namer, meta["latch_names"] = latch_namer(target, probes, sql_dsn, use_sql)
    journal = Journal(os.path.join(out_dir, JOURNAL))
    meta["max_size"] = max_bytes
    live = live_metrics(metrics, schema, meta)
    try:
        attached_at = follow(proc, journal, meta, StackJournal(target, names, namer), on_event,
                             LiveLine(groups, schema) if sys.stderr.isatty() else None, live,
                             starting)
    finally:
        meta["sql"].update(names.close() if names else {})
        if namer:
            namer.memory.close()
        if live:
            live.close()
        if cfi_temporary:
            os.remove(cfi_path)
    if attached_at is None:
        reason = loader.failure(proc, log_path)
        discard_dir(out_dir, created)
        raise UserError(reason)
    if journal.failed:
        return end_on_full_disk(out_dir, meta, journal, time.monotonic() - attached_at)
    release_room(out_dir)
    if "size_stop" in meta:
        meta["end_reason"] = meta.pop("size_stop")
    if "end_reason" not in meta:  # the loader ended without its last snapshot
        return end_without_loader(out_dir, meta, loader.end_reason(proc), time.monotonic() - attached_at)
    traced_cpu_s = own_cpu_s()
    try:
        skipped_by = store.write_tables_aside(out_dir, group)
    except UserError:
        store.write_meta(out_dir, {**meta, "complete": False})
        raise
    meta["own_cpu_s"] = own_cpu_accounts(meta.get("own_cpu_s", {}), traced_cpu_s)
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
           metrics=None, starting: idle.Stay | None = None) -> float | None:
    """Journal the loader's lines until it ends, noting in meta what they tell; returns
    when the probes were attached (time.monotonic()), None if they never were. The start's
    stay in the idle group ends at the attach: from then on we keep up with the loader."""
    attached_at = None
    with signals_forwarded_to(proc), journal:
        for line, rec in loader.snapshots(proc):
            kind = rec["type"]
            if kind == "attached":
                if starting:
                    starting.end()
                attached_at = time.monotonic()
                meta["own_cpu_s"] = {"start": own_cpu_s(proc.pid)}
                line = name_attachments(rec, meta["governor"])
            if not journal.write(stacks.journal_line(rec, line)):
                stop(proc)  # the disk is full: end now, keep what was written
            elif journal.written >= meta["max_size"] and "size_stop" not in meta:
                meta["size_stop"] = size_words(meta["max_size"], time.monotonic() - (attached_at or 0))
                sys.stderr.write(f"innostall: {meta['size_stop']}: ending the recording\n")
                stop(proc)  # as Ctrl-C: the loader's last snapshot still comes
            note(meta, rec)
            if metrics:
                metrics.update(rec)
            if kind == "interval" and live:
                live.show(rec)
            if on_event and kind in ("attached", "final"):
                on_event(rec)
        proc.wait()
    if live and attached_at:
        sys.stderr.write("\n")
    return attached_at


def size_words(limit: int, seconds: float) -> str:
    return f"size limit reached ({limit / 2**20:,.1f} MiB of journal, --max-size) after {seconds:.0f} s"


def own_cpu_s(loader_pid: int | None = None) -> float:
    """CPU time spent so far by this process and its children: those reaped (the schema
    query; the loader once it has exited), and the loader while it runs (/proc)."""
    spent = sum(getattr(resource.getrusage(who), field) for who in
                (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN) for field in ("ru_utime", "ru_stime"))
    if loader_pid:
        with contextlib.suppress(OSError, IndexError, ValueError):
            with open(f"/proc/{loader_pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            spent += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return spent


def own_cpu_accounts(start: dict, traced_cpu_s: float) -> dict:
    """What innostall's own processes cost, beside the probes: CPU seconds to attach
    (discovery, BPF load, calibration), while tracing, and writing the tables (at idle
    priority). They run on the server's machine, so the report shows them."""
    if "start" not in start:
        return {}
    return {"start": round(start["start"], 3),
            "tracing": round(traced_cpu_s - start["start"], 3),
            "tables": round(own_cpu_s() - traced_cpu_s, 3)}


def name_attachments(rec: dict, governor: dict) -> str:
    """The 'attached' line, naming what each attachment serves and its group."""
    rec["groups"] = governor["groups"]
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
