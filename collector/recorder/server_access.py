"""What the recorder asks of the server beside its probes, each over a short SQL session of
its own where innostall may log in: the dictionary's index names for the latches, the
connections behind read views, whether it replicates, and a replica's lag."""
from __future__ import annotations

from ..discovery.discover import ResolvedProbe
from ..discovery.target import Target
from ..server import latch_names, sql
from ..server.replica_lag import LagReader, replicates
from ..server.settings_read import settings_at, settings_meta
from ..server.sql_state import SQL_GAUGES, SqlState
from ..server.state import open_state
from ..server.view_names import ViewNames


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


def sql_access(target: Target, probes: list[ResolvedProbe], dsn: str | None,
               enabled: bool, keep_literals: bool = False,
               views_from_memory: bool = False) -> tuple[ViewNames | None, dict]:
    """SQL access to name the threads that hold read views, when the read views are traced
    or read from the server's memory, and we may log in; and what meta.json says of it, and
    of how statements are kept."""
    if not enabled:
        return None, {"access": False, "reason": "off (--no-sql)"}
    if not views_from_memory and not any(p.ok and p.name == "read_view" for p in probes):
        return None, {"access": False, "reason": "read views are not traced"}
    session, reason = sql.connect(target.pid, dsn, keep_literals)
    if session is None:
        return None, {"access": False, "reason": reason}
    return ViewNames(session, views_complete=views_from_memory), {"access": True, "socket": session.socket, "user": session.user,
                                "tid_source": session.tid_source, "note": session.note,
                                "statements": "literals kept" if keep_literals else "fingerprinted"}


class SettingsInForce:
    """The server's settings read at the start; at_end() reads them again and gives what
    meta.json keeps of both (settings_read.settings_meta)."""

    def __init__(self, pid: int | None, dsn: str | None, enabled: bool):
        self.pid, self.dsn = pid, dsn
        self.at_start, self.note = settings_at(pid, dsn) if enabled and pid else ({}, "off (--no-sql)")

    def at_end(self) -> dict:
        at_end = settings_at(self.pid, self.dsn)[0] if self.at_start else {}
        return settings_meta(self.at_start, at_end, self.note)


def server_settings(target: Target, asked) -> SettingsInForce:
    return SettingsInForce(target.pid, asked.sql_dsn, asked.use_sql)


def replica_lag(target: Target, probes: list[ResolvedProbe], asked,
                replicating: bool | None) -> LagReader | None:
    """The replica's lag as it reports it, read each interval over a session of its own,
    where the applier is traced, we may log in and the server is a replica (replicating:
    what it said before the attach, None if it was not asked)."""
    if not asked.use_sql or replicating is False or not any(p.ok and p.name == "applier_event" for p in probes):
        return None
    session, _ = sql.connect(target.pid, asked.sql_dsn)
    return LagReader.start(session, asked.interval_s) if session else None


NOT_A_REPLICA = ("left out: the server replicates from no source (its replica status is empty), and on a "
                 "primary this probe would trap for nothing (every commit, or every row-lock wait)")
# Where the server cannot say whether it replicates, a replica's never-sampled probe
# (row_lock_wait, charged by role) joins the applier's group: the governor bounds its cost
# on a primary whose hot rows would trap it, at the price of seeing a replica's stall less.
UNSURE_GROUP = "applier"


def leave_out_replica_probes(target: Target, probes: list[ResolvedProbe], asked) -> bool | None:
    """The probes only a replica needs (the catalog's replica_only) left out where the server
    says it replicates from no source; what it said (None: not asked). Where it cannot be
    asked (--no-sql, no login, no privilege) they stay: the cost governor bounds their cost."""
    wanted = [p for p in probes if p.ok and p.replica_only]
    if not wanted:
        return None
    session = sql.connect(target.pid, asked.sql_dsn)[0] if asked.use_sql and target.pid is not None else None
    if session is None:
        sample_when_unsure(wanted)
        return None
    try:
        replicating = replicates(session)
    finally:
        session.close()
    if replicating is False:
        for p in wanted:
            p.offsets, p.reason = [], NOT_A_REPLICA
    elif replicating is None:
        sample_when_unsure(wanted)
    return replicating


def sample_when_unsure(wanted: list[ResolvedProbe]) -> None:
    for p in wanted:
        if not p.group:
            p.group = UNSURE_GROUP


class JoinedState:
    """The server's state from its memory (state.py) and, for the gauges memory cannot
    read, by SQL (sql_state.py): one reading per snapshot, memory's figure first."""

    def __init__(self, memory, by_sql: SqlState | None):
        self.memory, self.by_sql = memory, by_sql

    def __bool__(self) -> bool:
        return bool(self.memory or self.by_sql)

    def read(self) -> dict[str, int]:
        return {**(self.by_sql.gauges() if self.by_sql else {}), **(self.memory.read() if self.memory else {})}

    def close(self) -> dict:
        """The gauges each source read ({gauge: "memory", "sql" or "files"}) and the SQL that failed."""
        if self.memory:
            self.memory.close()
        failed = self.by_sql.close() if self.by_sql else {}
        return {**self.said(), **failed}

    def said(self) -> dict:
        sources = {**(self.by_sql.sources if self.by_sql else {}),
                   **{gauge: getattr(place, "source", "memory")
                      for gauge, place in (self.memory.places if self.memory else {}).items()}}
        return {"sources": sources}


def state_by_sql(target: Target, asked, from_memory, from_code: bool) -> SqlState | None:
    """The gauges the server's memory cannot give here (a build without DWARF, whose code
    gives only some: from_code), read by SQL over a session of its own, where innostall may
    log in."""
    wanted = SQL_GAUGES - set(from_memory)
    if {"lsn", "dirty_pages"} <= set(from_memory) and not from_code:  # the DWARF's route works: no SQL each snapshot
        return None
    if not asked.use_sql or not target.pid:
        return None
    session, _ = sql.connect(target.pid, asked.sql_dsn)
    return SqlState.start(session, wanted) if session else None


def state_meta(planned: dict, joined: JoinedState, closing: bool = True) -> dict:
    """meta.json's server_state: every gauge read, from where; as of the first reading (a
    watch saves meta.json before the end), or closing the readers at the end."""
    said = joined.close() if closing else joined.said()
    read = sorted(set(planned.get("read", [])) | set(said["sources"]))
    kept = {key: value for key, value in planned.items() if key != "note" or not said["sources"]}
    return {**kept, "read": read, **said}


def joined_state(target: Target, asked, places: dict, meta: dict) -> JoinedState:
    """The state's readers, from memory at places (state_plan's) and by SQL for the rest;
    meta.json's server_state says already what the first reading gave."""
    from_code = "from_code" in meta["server_state"]
    joined = JoinedState(open_state(target.pid, places) if places else None,
                         state_by_sql(target, asked, places, from_code))
    meta["server_state"] = state_meta(meta["server_state"], joined, closing=False)
    return joined
