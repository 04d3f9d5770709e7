"""The read views a recording shows each interval: the probe's (which saw each open, with its
stack, when the governor had it attached) and the walk's (view_walk.py: every view open now,
read from the server's memory). They are one view when their key, &trx->read_view, is the
same; a view only the walk found is shown with source "memory".

A view the walk found is timed from its first sighting, with the history read just before
it: it opened since the walk before, so the age shown is at most one interval short and
is said to be "at least" that (seen_open). A view open at the first walk opened before the
recording: it is timed from its transaction's start (trx_t.start_time, whole seconds), as
a view SQL names is (view_names.py), for it cannot have opened earlier."""
from __future__ import annotations

import time

from ..discovery import layouts
from .latch_names import ServerMemory
from .view_walk import ViewWalk, Walked, plan_of

SHOWN = 8  # the oldest views a line keeps, as the loader prints them (REPORTED_VIEWS)


class OpenViews:
    def __init__(self, walk: ViewWalk, pid: int):
        self.walk, self.pid = walk, pid
        self.sightings: dict[tuple[int, int], tuple[int, int | None]] = {}  # (key, limit_no) -> (opened_ns, history)
        self.walked_ns: int | None = None  # the last walk's
        self.history: int | None = None  # the last history length read, for views first seen now

    def note_history(self, history: int | None) -> None:
        if history is not None:
            self.history = history

    def merge(self, rec: dict) -> None:
        """Add to a read_views record (its views folded, keys still on) the open views only
        the walk found, name the probe's by connection, and drop the keys."""
        probed = {view.pop("key", None): view for view in rec["views"]}
        walked = self.walk.open_views()
        if walked is None:
            return
        # read after the walk: a view first seen now was open by then, so its age is no more
        # than it was (the recorder reads the loader's line a moment after its mono_ns)
        now, to_mono = time.monotonic_ns(), time.monotonic_ns() - time.time_ns()
        sightings, added = {}, []
        for view in walked:
            ident = (view.key, view.limit_no)
            opened, history = self.sightings.get(ident) or self.first_sighting(view, now, to_mono)
            sightings[ident] = (opened, history)
            shown = probed.get(view.key)
            if shown is None:
                added.append({"tid": view.tid, "pid": self.pid, "opened_ns": opened, "history_at_open": history,
                              "folded": "", "seen_open": True, "source": "memory"})
                shown = added[-1]
            if view.connection_id is not None:
                shown.setdefault("connection_id", view.connection_id)
        self.sightings, self.walked_ns = sightings, now
        views = sorted([*probed.values(), *added], key=lambda v: v["opened_ns"])
        rec["views"] = views[:SHOWN]
        rec["open"] = max(rec.get("open", 0), len(walked))
        rec["walk"] = {"steps": self.walk.steps, "complete": self.walk.complete}

    def first_sighting(self, view: Walked, now: int, to_mono: int) -> tuple[int, int | None]:
        if self.walked_ns is not None:
            return now, self.history
        started = view.started_s * 1_000_000_000 + to_mono if view.started_s is not None else None
        return (started if started is not None and started <= now else now), None

    def close(self) -> None:
        self.walk.memory.close()


def open_views_of(target) -> tuple[OpenViews | None, dict]:
    """The walk for a running target, and what meta.json says of it: {"read": bool}, with
    "note" saying why not."""
    found = layouts.answer(target.elf, target.debug) if target.pid and target.elf else None
    if found is None:
        return None, {"read": False, "note": "the build has no DWARF (its debug file would give it)"}
    bias = target.runtime_address(0)
    if bias is None:
        return None, {"read": False, "note": "where the server's executable is mapped cannot be told"}
    plan, why = plan_of(found, bias)
    if plan is None:
        return None, {"read": False, "note": why}
    memory = ServerMemory(target.pid)
    if memory.fd is None:
        return None, {"read": False, "note": "the server's memory cannot be opened"}
    return OpenViews(ViewWalk(memory, plan), target.pid), {"read": True}
