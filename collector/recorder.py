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
from innostall.recording_format import JOURNAL, META, meta_fact
from innostall.schema import Schema

from . import cache, idle, latch_names, libc, loader, sql, store
from .discover import ResolvedProbe, layout
from .stacks import StackSymbolizer
from .target import Target
from .view_names import ViewNames

DEFAULT_SETTINGS = {"deep_walk_threshold": 100}  # versions: walks this deep are kept with stacks
DEFAULT_BUDGET_PCT = 1.0  # of the server's CPU time the probes may cost; None: no budget
RESERVE, RESERVE_BYTES = ".reserve", 64 * 1024  # room kept for the last meta.json on a full disk


def prepare_dir(path: str) -> bool:
    """Create the recording directory; True if it did not exist (so a recording that never
    started removes it again)."""
    if os.path.exists(os.path.join(path, META)):
        raise UserError(f"{path} already holds a recording; choose another -o directory")
    created = not os.path.exists(path)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot create {path}: {e.strerror}")
    probe = os.path.join(path, ".innostall-write-test")
    try:
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as e:
        if created:  # nothing of ours is in it yet: only the directory to take back
            with contextlib.suppress(OSError):
                os.rmdir(path)
        raise UserError(f"cannot write into {path}: {e.strerror}")
    return created


def discard_dir(path: str, created: bool) -> None:
    """Undo prepare_dir for a recording that never started: what we wrote, and the
    directory if we made it. Nothing else is touched."""
    for name in (META, META + ".tmp", JOURNAL, "loader.log", RESERVE):
        with contextlib.suppress(OSError):
            os.remove(os.path.join(path, name))
    if created:
        with contextlib.suppress(OSError):
            os.rmdir(path)


def check_settings(settings: dict[str, int]) -> dict[str, int]:
    unknown = sorted(set(settings) - set(DEFAULT_SETTINGS))
    if unknown:
        raise UserError(f"unknown setting {unknown[0]}")
    if settings.get("deep_walk_threshold", 1) < 1:
        raise UserError("--deep-walk-threshold must be at least 1 (versions)")
    return {**DEFAULT_SETTINGS, **settings}


def global_addresses(target: Target, probes: list[ResolvedProbe]) -> dict[str, int]:
    """Settings that receive the address of a server global some programs read, at its
    place in the running process (the catalog's `globals`), and the code range of a
    function whose calls some programs tell by their return address (`caller`)."""
    settings = {}
    for p in probes:
        for setting, symbol in p.global_settings.items() if p.ok else ():
            address = target.runtime_address(p.globals[symbol])
            if address:
                settings[setting] = address
        for prefix, function in p.caller_ranges.items() if p.ok else ():
            start = target.runtime_address(function.vaddr)
            if start:
                settings.update({f"{prefix}_lo": start, f"{prefix}_hi": start + function.size})
    return settings


def layout_args(layout: dict | None, schema: Schema) -> list[str]:
    """--layout MEMBER=VALUE arguments of the build's struct layout; the latch model goes
    by its number in the schema."""
    if not layout:
        return []
    members = {"latch_model": schema.latch_models.index(layout["latch_model"] or "none"),
               **layout["members"]}
    unknown = sorted(set(members) - set(schema.layout_members))
    if unknown:
        raise UserError(f"the catalog's layout names {unknown[0]}, which the loader does not read")
    return [f"{member}={int(value)}" for member, value in members.items()]


# The scheduler tracepoints some programs need, attached with them: (program, the program
# it serves, what it measures, its sampling group; "" = the served program's). The switch
# program tells purge's sleeps apart (sched.bpf.c) and is sampled on its own: it runs at
# every switch on the machine. The wakeup program finds latch holders (wakeup.bpf.c) and
# goes with the latch waits.
SLEEP_GROUP = "purge_sleeps"
TRACEPOINTS = (("purge_sched_switch", "purge_batch_enter", "purge_sleeps", SLEEP_GROUP),
               ("latch_waker", "latch_wait_exit", "latch_holders", ""))


def plan_attachments(probes: list[ResolvedProbe], holders: bool) -> list[dict]:
    """One loader attachment per program and offset, in the loader's order: its spec, the
    probes it serves (sync_array_wait_event serves three on rw_lock servers, attached once)
    and its sampling group ("" = never sampled); then the tracepoints they need (without
    the wakeup tracepoint when the latch holders are not wanted)."""
    planned: dict[str, dict] = {}
    for p in probes:
        for spec in p.attach_args() if p.ok else []:
            planned.setdefault(spec, {"spec": spec, "probes": [], "group": p.group})["probes"].append(p.name)
    attachments = list(planned.values())
    return attachments + tracepoint_attachments(attachments, holders)


def tracepoint_attachments(attachments: list[dict], holders: bool) -> list[dict]:
    planned = []
    for program, served, measures, group in TRACEPOINTS:
        if measures == "latch_holders" and not holders:
            continue
        serving = next((a for a in attachments if a["spec"].split("=")[0] == served), None)
        if serving:
            planned.append({"spec": f"{program}=0", "probes": [measures],
                            "group": group or serving["group"], "tracepoint": True})
    return planned


def sampling_groups(attachments: list[dict], schema: Schema) -> list[str]:
    """Group names in loader numbering (1, 2, ...), in order of appearance; group 0 is the
    never-sampled one."""
    groups = list(dict.fromkeys(a["group"] for a in attachments if a["group"]))
    if len(groups) > schema.max_groups - 1:
        raise UserError(f"{len(groups)} sampling groups in the catalog; the loader takes "
                        f"{schema.max_groups - 1}")
    return groups


def loader_args(attachments: list[dict], groups: list[str]) -> list[str]:
    """--attach arguments: SPEC#N for sampled groups."""
    return [f"{a['spec']}#{groups.index(a['group']) + 1}" if a["group"] else a["spec"]
            for a in attachments]


def group_settings(probes: list[ResolvedProbe], groups: list[str]) -> dict[str, int]:
    """Settings told a group's number (the catalog's `group_setting`): e.g. the version
    walks must know when their steps were sampled (mvcc.bpf.c)."""
    settings = {p.group_setting: groups.index(p.group) + 1
                for p in probes if p.ok and p.group_setting and p.group in groups}
    if SLEEP_GROUP in groups:  # the purge spans must know when their sleeps were watched
        settings["sleep_group"] = groups.index(SLEEP_GROUP) + 1
    return settings


def unwind_table(target: Target, probes: list[ResolvedProbe],
                 group: idle.IdleGroup | None) -> tuple[str | None, dict[str, int], bool]:
    """libc's frame table for the latch programs' stacks (collector/libc.py), which the
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
    done = run_idle([sys.executable, "-m", "innostall.collector.libc", str(pid), path], group)
    return json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else None


def check_budget(budget_pct: float | None) -> float | None:
    if budget_pct is not None and not 0 < budget_pct <= 100:
        raise UserError("--budget must be a percentage above 0 and at most 100")
    return budget_pct


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


class LiveLine:
    """On a terminal: elapsed time, events per second and the probes' estimated cost in the
    last interval, the groups being sampled with their coverage, and drops."""

    def __init__(self, groups: list[str], schema: Schema):
        self.started = time.monotonic()
        self.groups = groups  # sampling group names, by loader number - 1
        self.events = schema.counters_of("event")  # one per traced occurrence
        self.losses = schema.counters_of("loss")
        self.last: dict | None = None  # the previous snapshot

    def show(self, record: dict) -> None:
        counters = record["counters"]
        events = sum(counters.get(name, 0) for name in self.events)
        rate, cost, sampled = 0.0, "", ""
        last = self.last
        if last and record["mono_ns"] > last["mono_ns"]:
            wall = record["mono_ns"] - last["mono_ns"]
            rate = (events - sum(last["counters"].get(n, 0) for n in self.events)) * 1e9 / wall
            cost, sampled = self.governor_text(record.get("governor"), last.get("governor"), wall)
        self.last = record
        sys.stderr.write(f"\rrecording {time.monotonic() - self.started:6.0f} s  "
                         f"{rate:9.0f} events/s{cost}  purge batches {counters.get('purge_batches', 0):>6}  "
                         f"drops {sum(counters.get(n, 0) for n in self.losses):>4}{sampled}\x1b[K")
        sys.stderr.flush()

    def governor_text(self, now: dict | None, before: dict | None, wall_ns: int) -> tuple[str, str]:
        if not now or not before:
            return "", ""
        cpu = now["server_cpu_ns"] - before["server_cpu_ns"]
        overhead = now["overhead_ns"] - before["overhead_ns"]
        cost = f"  cost {100 * overhead / cpu:5.2f}% of server CPU" if cpu > 0 else ""
        partial = [f"{self.groups[g - 1]} {100 * (ns - b[1]) / wall_ns:.0f}%"
                   for (g, ns, *_), b in zip(now["groups"], before["groups"])
                   if ns - b[1] < 0.999 * wall_ns]
        return cost, "  sampled: " + ", ".join(partial) if partial else ""


def processes_running(path: str):
    """Pids of the processes whose executable is path."""
    wanted = os.path.realpath(path)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.path.realpath(f"/proc/{entry}/exe") == wanted:
                    yield int(entry)
            except OSError:
                continue


class StackJournal:
    """Stacks are folded now, while the server's maps still tell which file each address
    belongs to; the journal then keeps them symbolized: deep-walk events gain a "folded"
    field, latch tables and read views have each stack's addresses replaced by its folded
    string."""

    def __init__(self, target: Target, names: ViewNames | None = None,
                 latches: latch_names.LatchNamer | None = None):
        self.target = target
        self.names = names  # who holds the read views, by SQL when we may log in
        self.latches = latches  # names the contended latches, from the server's memory
        self.latch_name_at: dict[int, str] = {}  # address -> name, as the latches lines named them
        self._symbolizer: StackSymbolizer | None = None  # built at the first stack
        # Latch stacks carry no pid: with --binary, any process running the executable
        # has it mapped the same way, so its maps resolve them.
        self.pid = target.pid or next(processes_running(target.path), None)

    def fold(self, addresses: list[int], pid: int | None = None) -> str:
        if self._symbolizer is None:
            self._symbolizer = StackSymbolizer(self.target)
        if not addresses:
            return "[unknown]"
        return self._symbolizer.folded(pid or self.pid, addresses)

    def journal_line(self, rec: dict, line: str) -> str:
        if rec["type"] == "deep_walk":
            rec["folded"] = self.fold(rec["stack"], rec["pid"])
            self.name_walk(rec)
        elif rec["type"] == "latch_tables":
            rec["stacks"] = [[mode, waits, ns, self.fold(stack)] for mode, waits, ns, stack in rec["stacks"]]
            rec["latch_stacks"] = [[kind, ident, mode, waits, ns, self.fold(stack)]
                                   for kind, ident, mode, waits, ns, stack in rec.get("latch_stacks", [])]
            rec["holders"] = [[latch, mode, thread, waits, ns, self.fold(stack), self.holder_latch_name(latch)]
                              for latch, mode, thread, waits, ns, stack in rec.get("holders", [])]
        elif rec["type"] == "latches":
            self.name_latches(rec)
        elif rec["type"] == "read_views":
            for view in rec["views"]:
                view["folded"] = self.fold(view.pop("stack"), view.get("pid"))
                view["source"] = "probe"
            if self.names:
                self.names.annotate(rec)
        else:
            return line
        return json.dumps(rec, separators=(",", ":")) + "\n"


    def name_walk(self, rec: dict) -> None:
        """The table and index whose records' versions the walk built, read from the
        dict_index_t it was given (left out when that memory is not recognised)."""
        index, scan_index = rec.pop("index", 0), rec.pop("scan_index", 0)
        named = self.latches.index_at(index) if self.latches and index else None
        if named:
            rec["table"], rec["index"] = named
        # the secondary index of the lookup that led to the record, when the walk ran
        # inside that lookup (analysis checks the stack: the BPF side may see a stale one)
        scanned = self.latches.index_at(scan_index) if self.latches and scan_index else None
        if scanned and (not named or scanned[0] == named[0]):
            rec["scan_index"] = scanned[1]

    def name_latches(self, rec: dict) -> None:
        """Each latch row gains its name and kind: [kind, id, mode, waits, ns, max_ns,
        address, slots, name, kind label]. Names are cached, so each latch is read once."""
        for row in rec["latches"]:
            kind, ident, address = row[0], row[1], row[6]
            row += (self.latches.name(kind, ident, address) if self.latches
                    else (latch_names.UNKNOWN, latch_names.KIND_NAMES.get(kind, "latch")))
            self.latch_name_at[address] = row[-2]

    def holder_latch_name(self, address: int) -> str:
        """A holder's latch by the name its waits were given (the latches lines come every
        interval, the holders with the latch tables after them), else by its address."""
        name = self.latch_name_at.get(address)
        if name is None and self.latches:
            name = self.latches.name_address(address)[0]
        return name or latch_names.UNKNOWN


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
    """Run a command of our own bulk work on CPU time nothing else wants (collector/idle.py):
    in the idle cgroup, for its patience at most; at SCHED_IDLE where there is none."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=None if group else idle.sched_idle)
    stay = group.stay([proc.pid]) if group else None
    out, err = proc.communicate()
    if stay:
        stay.end()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def write_tables(out_dir: str, group: idle.IdleGroup | None) -> None:
    """In a process of its own, once tracing is over: pandas would double our memory."""
    done = run_idle([sys.executable, "-m", "innostall.collector.store", out_dir], group)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise UserError(f"the recording's tables could not be written ({last}); "
                        f"its journal is complete and 'innostall report' reads it")


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
           holders: bool = False, start: idle.Start | None = None) -> dict:
    """Trace until the duration ends, a signal arrives or the target exits. Returns meta.
    settings: see DEFAULT_SETTINGS; on_event sees the 'attached' and 'final' snapshots.
    budget_pct: the share of the server's CPU the probes may cost before the hot ones are
    sampled; None: no budget, everything stays attached (exact, whatever it costs).
    sql_dsn, use_sql: SQL access to name the threads holding read views (collector/sql.py);
    found from the server process unless given, never needed.
    metrics: live Prometheus metrics ({port, addr, textfile}; collector/live_metrics.py).
    holders: find who held the contended latches, with the scheduler's wakeup tracepoint:
    off unless asked, as it costs the server several times what the governor counts for it
    (make bench: +4.3% CPU per transaction for the latch probes with it, -1.8% without).
    start: the idle-CPU start the caller opened before discovery (collector/idle.py); one
    is opened here if not."""
    check_budget(budget_pct)
    # until the probes attach, our work waits for CPU the server leaves (collector/idle.py)
    with contextlib.nullcontext(start) if start else idle.Start() as start:
        return record_stages(target, probes, out_dir, start.stay, start.group,
                             duration_s=duration_s, interval_s=interval_s, on_event=on_event,
                             settings=settings, budget_pct=budget_pct, sql_dsn=sql_dsn,
                             use_sql=use_sql, metrics=metrics, holders=holders)


def record_stages(target: Target, probes: list[ResolvedProbe], out_dir: str,
                  starting: idle.Stay | None, group: idle.IdleGroup | None, *,
                  duration_s: float | None, interval_s: float, on_event, settings, budget_pct,
                  sql_dsn, use_sql, metrics, holders) -> dict:
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
    cfi_path, unwind_settings, cfi_temporary = unwind_table(target, probes, group)
    settings.update(unwind_settings)
    created = prepare_dir(out_dir)
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
    meta.setdefault("end_reason", loader.end_reason(proc))
    release_room(out_dir)
    traced_cpu_s = own_cpu_s()
    write_tables(out_dir, group)
    meta["own_cpu_s"] = own_cpu_accounts(meta.get("own_cpu_s", {}), traced_cpu_s)
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


def reserve_room(out_dir: str) -> None:
    """Keep room for the last meta.json: when the disk fills, the journal stops, this file
    goes, and meta.json can still say how the recording ended."""
    with open(os.path.join(out_dir, RESERVE), "wb") as f:
        os.posix_fallocate(f.fileno(), 0, RESERVE_BYTES)


def release_room(out_dir: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(os.path.join(out_dir, RESERVE))


class Journal:
    """journal.jsonl, appended line by line and flushed, so a recording cut short keeps
    every complete line. A write the disk refuses ends the journal, not the recorder."""

    def __init__(self, path: str):
        self.file = open(path, "a")
        self.failed: str | None = None  # why the disk refused a write

    def write(self, line: str) -> bool:
        if self.failed:
            return False
        try:
            self.file.write(line)
            self.file.flush()
            return True
        except OSError as e:
            self.failed = e.strerror
            return False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        with contextlib.suppress(OSError):
            self.file.close()


def stop(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGINT)


def end_on_full_disk(out_dir: str, meta: dict, journal: Journal, seconds: float) -> dict:
    """The journal holds the recording up to its last complete line; the tables cannot be
    written. Say so in meta.json if it still fits, and in one line."""
    meta["end_reason"] = f"disk full ({journal.failed}) after {seconds:.0f} s"
    release_room(out_dir)
    with contextlib.suppress(UserError):
        store.write_meta(out_dir, {**meta, "complete": False})
    raise UserError(f"{out_dir}: {meta['end_reason']}: recording stopped; its journal keeps "
                    "every interval written before, and 'innostall report' reads it")
