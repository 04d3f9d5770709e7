"""The open read views, read from the server's memory at each interval: the pinning view is
named whether or not the sampled read_view probe was attached when it opened, and the
server pays nothing for it (issue 29; docs/plans/read-views-from-memory.md says where each
family keeps its views, and why these lists).

Each interval the walk follows a list of the server's transactions from a global, by the
offsets its own DWARF gives (collector/discovery/layouts.py, VIEW_LISTS and VIEW_PATHS):

  MariaDB 10.6+     trx_sys.trx_list, an ilist: circular, ending at its own sentinel, its
                    pointers at the ilist_node inside each trx_t; every transaction is on it
  MariaDB 10.3-10.5 trx_sys.trx_list, a UT_LIST of every trx_t, ending at NULL
  MySQL, MariaDB    trx_sys->mysql_trx_list, the connections' transactions (a UT_LIST): a
  10.2              view of a background transaction is not on it, and stays the probe's

A transaction's read view is embedded (MariaDB 10.3+) or pointed to (MySQL: NULL, or with
bit 0 set, once closed). It is open while ReadView.m_open (10.5.23+) or m_state (10.3-10.5)
is set, or while m_closed is not (MySQL). A view's key is &trx->read_view, the key the
read_view probe gives it, so the two are matched.

Nothing is locked, and the list may change under the walk: a step that leaves mapped
memory, loops, or goes on past MAX_STEPS or MAX_WALK_S ends the walk, and what was read so
far is kept, said incomplete. A view changing while it is read is at worst one interval stale: the next
walk reads it again. The server's memory is never written (ServerMemory)."""
from __future__ import annotations

import time
from dataclasses import dataclass

from ..discovery import layouts
from .latch_names import ServerMemory

MAX_STEPS = 100_000  # transactions on one list: far more than max_connections allows
# The walk's time, at most: a pread of a trx_t takes ~10 us here, so 5,000 transactions; a
# longer list is cut, and said so (complete), rather than hold up the recorder's line
MAX_WALK_S = 0.05
USER_SPACE_END = 1 << 47  # x86-64: a pointer at or past it is not the server's
EPOCH_2000_S = 946_684_800  # a transaction start before it is not one


@dataclass(frozen=True)
class WalkPlan:
    """Where the list starts and how its elements are read, for one build."""
    head: int  # address of the global, or of the pointer to it (via_pointer)
    via_pointer: bool
    head_offset: int  # of the first element's pointer in the global's object
    circular: bool  # an ilist: pointers at the node inside trx_t, ending at the sentinel
    next_offset: int  # of the next pointer in trx_t (the node's, for an ilist)
    view_offset: int  # trx_t.read_view
    view_pointer: bool  # MySQL: a ReadView *
    open_offset: int
    open_size: int
    open_when_set: bool  # m_open, m_state; False for m_closed
    limit_no_offset: int
    trx_id_offset: int
    thd_offset: int | None
    started_offset: int | None
    connection_offset: int | None
    os_tid_offset: int | None

    def trx_span(self) -> int:
        """The bytes of a trx_t read in one go: up to its last member the walk reads."""
        ends = [self.next_offset + 8, self.view_offset + 8, self.trx_id_offset + 8,
                *(o + 8 for o in (self.thd_offset, self.started_offset) if o is not None)]
        if not self.view_pointer:
            ends.append(self.view_offset + self.view_span())
        return max(ends)

    def view_span(self) -> int:
        return max(self.open_offset + self.open_size, self.limit_no_offset + 8)


def plan_of(found: dict, bias: int) -> tuple[WalkPlan | None, str]:
    """The walk for a build, from the DWARF reader's answer; None and why when a member it
    needs is missing (the read_view probe then names the views alone)."""
    if not layouts.views_walkable(found):
        return None, "the build's DWARF gives no list of transactions with their read views"
    head, nxt = layouts.view_list(found)
    view, flag, limit_no, trx_id = (layouts.view_member(found, n) for n in layouts.VIEW_NEEDED)
    optional = {n: (m["offset"] if (m := layouts.view_member(found, n)) else None)
                for n in ("thd", "started", "connection_id", "os_tid")}
    return WalkPlan(
        head=found["globals"]["trx_sys"]["address"] + bias, via_pointer=bool(head.get("via_pointer")),
        head_offset=head["offset"], circular=nxt["type"].startswith("ilist_node"),
        next_offset=nxt["offset"], view_offset=view["offset"], view_pointer=view["type"].endswith("*"),
        open_offset=flag["offset"], open_size=min(flag["size"], 8),
        open_when_set=not flag["path"].endswith("m_closed"), limit_no_offset=limit_no["offset"],
        trx_id_offset=trx_id["offset"], thd_offset=optional["thd"], started_offset=optional["started"],
        connection_offset=optional["connection_id"], os_tid_offset=optional["os_tid"]), ""


def word(data: bytes, offset: int, size: int = 8) -> int:
    return int.from_bytes(data[offset:offset + size], "little")


def plausible(pointer: int) -> bool:
    return 0 < pointer < USER_SPACE_END and pointer % 8 == 0


@dataclass
class Walked:
    """One open view, as the walk read it."""
    key: int  # &trx->read_view
    limit_no: int  # purge may not remove what transactions serialised at or after it wrote
    trx_id: int
    started_s: int | None  # the transaction's start, in seconds of CLOCK_REALTIME
    connection_id: int | None
    tid: int | None


class ViewWalk:
    """The walk of one server's transaction list, and what it last found."""

    def __init__(self, memory: ServerMemory, plan: WalkPlan):
        self.memory, self.plan = memory, plan
        self.steps = 0  # elements read by the last walk
        self.complete = True  # the last walk reached the list's end

    def first(self) -> tuple[int | None, int]:
        """The first element's pointer, and the pointer that ends the list."""
        base = self.memory.u64(self.plan.head) if self.plan.via_pointer else self.plan.head
        if not base:
            return None, 0
        at = base + self.plan.head_offset
        return self.memory.u64(at), at if self.plan.circular else 0

    def open_views(self) -> list[Walked] | None:
        """The views open now, in list order; None when the list cannot be read at all."""
        plan = self.plan
        pointer, end = self.first()
        if pointer is None:
            return None
        node = plan.next_offset if plan.circular else 0  # where a pointer points in trx_t
        span, seen, views = plan.trx_span(), set(), []
        self.steps, self.complete = 0, False
        deadline = time.monotonic() + MAX_WALK_S
        while pointer != end:
            if not plausible(pointer) or pointer in seen or len(seen) >= MAX_STEPS:
                return views  # stale or looping: what was read so far
            if len(seen) % 64 == 63 and time.monotonic() > deadline:
                return views
            seen.add(pointer)
            trx = pointer - node
            data = self.memory.read(trx, span)
            if data is None:
                return views
            self.steps += 1
            walked = self.view_of(trx, data)
            if walked:
                views.append(walked)
            pointer = word(data, plan.next_offset)
        self.complete = True
        return views

    def view_of(self, trx: int, data: bytes) -> Walked | None:
        plan = self.plan
        if plan.view_pointer:
            address = word(data, plan.view_offset)
            view = self.memory.read(address, plan.view_span()) if plausible(address) else None
        else:
            view = data[plan.view_offset:plan.view_offset + plan.view_span()]
        if view is None or bool(word(view, plan.open_offset, plan.open_size)) != plan.open_when_set:
            return None
        started = word(data, plan.started_offset) if plan.started_offset is not None else 0
        connection_id, tid = self.thread_of(word(data, plan.thd_offset) if plan.thd_offset is not None else 0)
        return Walked(key=trx + plan.view_offset, limit_no=word(view, plan.limit_no_offset),
                      trx_id=word(data, plan.trx_id_offset),
                      started_s=started if EPOCH_2000_S <= started <= time.time() + 1 else None,
                      connection_id=connection_id, tid=tid)

    def thread_of(self, thd: int) -> tuple[int | None, int | None]:
        """The connection id and OS thread of a transaction's THD (None for a background
        transaction, which has none, or a member the build's DWARF does not give)."""
        plan = self.plan
        if not plausible(thd):
            return None, None
        connection = self.memory.u64(thd + plan.connection_offset) if plan.connection_offset is not None else None
        tid = self.memory.u32(thd + plan.os_tid_offset) if plan.os_tid_offset is not None else None
        return connection or None, tid or None

