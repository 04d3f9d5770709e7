"""The open read views read from the server's memory (collector/server/view_walk.py,
open_views.py): the walk's plan from a DWARF answer for each family, the walk over a memory
image laid out as that family lays it out, and how its views join the probe's. The
offsets are those the fixtures' DWARF gives (docs/plans/read-views-from-memory.md, section 9);
test_purge_history walks the real servers."""
from __future__ import annotations

import struct
import types

from innostall.collector.discovery import layouts
from innostall.collector.server import open_views
from innostall.collector.server.open_views import OpenViews
from innostall.collector.server.view_walk import ViewWalk, Walked, plan_of

S = 1_000_000_000
TRX_SYS = 0x10_0000


def member(offset: int, size: int, type_: str, via_pointer: bool = False) -> dict:
    return {"offset": offset, "size": size, "type": type_, **({"via_pointer": True} if via_pointer else {})}


# What dwarf-layouts answers for MariaDB 11.4.5 (an ilist), 10.4.6 (a UT_LIST) and 10.2.11
# (mysql_trx_list through the trx_sys pointer, views pointed to)
ILIST = {"trx_sys.trx_list.trx_list.sentinel_.next": member(192, 8, "ilist_node<void> *"),
         "trx_t.next": member(0, 8, "ilist_node<void> *"), "trx_t.read_view": member(2120, 72, "ReadView"),
         "ReadView.m_open": member(56, 1, "atomic<bool>"), "ReadView.m_low_limit_no": member(48, 8, "trx_id_t"),
         "trx_t.id": member(72, 8, "trx_id_t"), "trx_t.mysql_thd": member(2256, 8, "THD *"),
         "trx_t.start_time": member(2232, 8, "time_t"), "THD.thread_id": member(16304, 8, "my_thread_id"),
         "THD.os_thread_id": member(16320, 4, "uint32")}
UT_LIST = {"trx_sys.trx_list.start": member(264, 8, "elem_type *"),
           "trx_t.trx_list.next": member(3912, 8, "trx_t *"), "trx_t.read_view": member(80, 64, "ReadView"),
           "ReadView.m_state": member(0, 4, "atomic<unsigned int>"),
           "ReadView.m_low_limit_no": member(56, 8, "trx_id_t"), "trx_t.id": member(56, 8, "trx_id_t")}
MYSQL_TRX_LIST = {"trx_sys.mysql_trx_list.start": member(264, 8, "trx_t *", via_pointer=True),
                  # the rw list's node is there too, and must not be taken for the list walked
                  "trx_t.trx_list.next": member(104, 8, "trx_t *"),
                  "trx_t.mysql_trx_list.next": member(496, 8, "trx_t *"),
                  "trx_t.read_view": member(88, 8, "ReadView *"), "ReadView.m_closed": member(56, 1, "bool"),
                  "ReadView.m_low_limit_no": member(48, 8, "trx_id_t"), "trx_t.id": member(64, 8, "trx_id_t")}


def answer(paths: dict) -> dict:
    return {"paths": paths, "globals": {"trx_sys": {"address": TRX_SYS}}}


class Image:
    """A process's memory: bytes written at addresses, as ServerMemory reads them."""

    def __init__(self):
        self.bytes: dict[int, int] = {}

    def put(self, address: int, value: int, size: int = 8):
        for i, b in enumerate(value.to_bytes(size, "little")):
            self.bytes[address + i] = b

    def read(self, address: int, size: int) -> bytes | None:
        if address <= 0 or any(address + i not in self.bytes for i in (0, size - 1)):
            return None
        return bytes(self.bytes.get(address + i, 0) for i in range(size))

    def u64(self, address: int):
        data = self.read(address, 8)
        return None if data is None else struct.unpack("<Q", data)[0]

    def u32(self, address: int):
        data = self.read(address, 4)
        return None if data is None else struct.unpack("<I", data)[0]

    def close(self):
        pass


def trx(image: Image, at: int, size: int):
    """Map an object's span: what was not written there reads as zeros."""
    for address in (at, at + size - 1):
        image.bytes.setdefault(address, 0)


def test_each_family_walks_its_own_list():
    assert plan_of(answer(ILIST), 0)[0].circular
    ut = plan_of(answer(UT_LIST), 0)[0]
    assert (ut.circular, ut.next_offset, ut.open_size, ut.open_when_set) == (False, 3912, 4, True)
    mysql = plan_of(answer(MYSQL_TRX_LIST), 0)[0]
    assert (mysql.via_pointer, mysql.next_offset, mysql.view_pointer, mysql.open_when_set) == (True, 496, True, False)
    missing = dict(ILIST)
    del missing["ReadView.m_open"]
    assert plan_of(answer(missing), 0) == (None, "the build's DWARF gives no list of transactions with their read views")
    assert not layouts.views_walkable(answer(missing)) and layouts.views_walkable(answer(ILIST))


def test_an_ilist_ends_at_its_sentinel_and_only_open_views_count():
    image, plan = Image(), plan_of(answer(ILIST), 0)[0]
    sentinel, trxs = TRX_SYS + 192, [0x20_0000, 0x30_0000]
    image.put(sentinel, trxs[0])
    image.put(trxs[0], trxs[1])
    image.put(trxs[1], sentinel)  # circular
    for i, t in enumerate(trxs):
        trx(image, t, plan.trx_span())
        image.put(t + 2120 + 48, 500 + i)  # m_low_limit_no
        image.put(t + 2232, 1_700_000_000 + i)  # start_time
    image.put(trxs[1] + 2120 + 56, 1, 1)  # the second's view is open
    thd = 0x40_0000
    image.put(trxs[1] + 2256, thd)
    image.put(thd + 16304, 77)
    image.put(thd + 16320, 4321, 4)
    walk = ViewWalk(image, plan)
    views = walk.open_views()
    assert (walk.steps, walk.complete) == (2, True)
    assert views == [Walked(key=trxs[1] + 2120, limit_no=501, trx_id=0, started_s=1_700_000_001,
                            connection_id=77, tid=4321)]


def test_a_loop_or_a_bad_pointer_ends_the_walk_with_what_was_read():
    image, plan = Image(), plan_of(answer(UT_LIST), 0)[0]
    first = 0x20_0000
    image.put(TRX_SYS + 264, first)
    trx(image, first, plan.trx_span())
    image.put(first + 80, 2, 4)  # READ_VIEW_STATE_OPEN
    image.put(first + 3912, first)  # points back at itself
    walk = ViewWalk(image, plan)
    assert len(walk.open_views()) == 1 and not walk.complete
    image.put(first + 3912, 0x1234_5678_9abc_def1)  # unaligned garbage
    assert len(walk.open_views()) == 1 and not walk.complete


def test_a_mysql_view_is_open_while_its_pointer_is_untagged_and_not_closed():
    image, plan = Image(), plan_of(answer(MYSQL_TRX_LIST), 0)[0]
    pointed, trxs, views = 0x50_0000, [0x20_0000, 0x30_0000, 0x60_0000], [0x70_0000, 0x71_0000, 0x72_0000]
    image.put(TRX_SYS, pointed)  # the global is a pointer
    image.put(pointed + 264, trxs[0])
    for i, t in enumerate(trxs):
        trx(image, t, plan.trx_span())
        image.put(t + 496, trxs[i + 1] if i + 1 < len(trxs) else 0)
        trx(image, views[i], plan.view_span())
        image.put(views[i] + 48, 900 + i)
        image.put(views[i] + 56, 0, 1)
    image.put(trxs[0] + 88, views[0])  # open
    image.put(trxs[1] + 88, views[1] | 1)  # closed by an AC-NL-RO transaction: tagged
    image.put(trxs[2] + 88, views[2])
    image.put(views[2] + 56, 1, 1)  # m_closed
    assert [v.limit_no for v in ViewWalk(image, plan).open_views()] == [900]


class ScriptedWalk:
    def __init__(self):
        self.views: list[Walked] = []
        self.steps, self.complete = 0, True
        self.memory = Image()

    def open_views(self):
        return list(self.views)


def walked(key: int, started_s: int | None = None, connection_id: int | None = 5, tid: int | None = 55) -> Walked:
    return Walked(key=key, limit_no=key, trx_id=0, started_s=started_s, connection_id=connection_id, tid=tid)


def test_views_join_the_probes_by_key_and_are_timed_from_their_first_sighting(monkeypatch):
    epoch_s = 1_800_000_000
    now = {"ns": 100 * S}
    monkeypatch.setattr(open_views, "time", types.SimpleNamespace(
        monotonic_ns=lambda: now["ns"], time_ns=lambda: now["ns"] + epoch_s * S))
    walk = ScriptedWalk()
    views = OpenViews(walk, pid=9)
    # open before the recording: timed from its transaction's start, 40 s before
    walk.views = [walked(1, started_s=epoch_s + 60)]
    rec = {"mono_ns": now["ns"], "views": [], "open": 0}
    views.merge(rec)
    assert rec["views"][0]["opened_ns"] == 60 * S and rec["views"][0]["history_at_open"] is None
    assert rec["views"][0]["source"] == "memory" and rec["views"][0]["seen_open"]
    # a second view appears: first seen now, with the history read just before
    views.note_history(1234)
    now["ns"] += S
    walk.views.append(walked(2, started_s=epoch_s + 95, connection_id=6, tid=66))
    probe = {"key": 3, "tid": 77, "opened_ns": 100 * S + S // 2, "history_at_open": 1200, "folded": "f",
             "source": "probe"}
    walk.views.append(walked(3, connection_id=7, tid=77))
    rec = {"mono_ns": now["ns"], "views": [probe], "open": 1}
    views.merge(rec)
    assert [(v["tid"], v["source"], v["opened_ns"]) for v in rec["views"]] == [
        (55, "memory", 60 * S), (77, "probe", 100 * S + S // 2), (66, "memory", 101 * S)]
    assert rec["views"][2]["history_at_open"] == 1234 and rec["views"][1]["connection_id"] == 7
    assert rec["open"] == 3 and all("key" not in v for v in rec["views"])
    # the first closes and a view opens at the same key: a new sighting
    now["ns"] += S
    walk.views[0] = Walked(key=1, limit_no=999, trx_id=0, started_s=None, connection_id=5, tid=55)
    rec = {"mono_ns": now["ns"], "views": [], "open": 0}
    views.merge(rec)
    assert {v["tid"]: v["opened_ns"] for v in rec["views"]} == {77: 101 * S, 66: 101 * S, 55: 102 * S}


def test_a_walk_that_cannot_start_leaves_the_probes_views_as_they_are():
    walk = ScriptedWalk()
    walk.open_views = lambda: None
    rec = {"mono_ns": S, "views": [{"key": 3, "tid": 77, "opened_ns": 0}], "open": 1}
    OpenViews(walk, pid=9).merge(rec)
    assert rec == {"mono_ns": S, "views": [{"tid": 77, "opened_ns": 0}], "open": 1}
