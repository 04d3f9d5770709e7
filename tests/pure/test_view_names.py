"""Who holds the oldest read views, as SQL names them (collector/server/view_names.py): pure logic
on a scripted server answer and a clock the test moves, for what the live tests only meet by
chance (an answer that outlived the transaction it lists). test_purge_phases and
test_purge_history check the same on real servers."""
from __future__ import annotations

import types

import pytest

from innostall.collector.server import view_names
from innostall.collector.server.view_names import UNSEEN_RECHECK_S, ViewNames

S = 1_000_000_000
EPOCH_S = 1_800_000_000  # the wall clock at monotonic 0


class Clock:
    def __init__(self):
        self.ns = 100 * S

    def install(self, monkeypatch):
        fake = types.SimpleNamespace(monotonic=lambda: self.ns / S, monotonic_ns=lambda: self.ns,
                                     time_ns=lambda: self.ns + EPOCH_S * S)
        monkeypatch.setattr(view_names, "time", fake)

    def sleep(self, s: float):
        self.ns += int(s * S)


class Server:
    """INNODB_TRX as old_transactions() gives it; counts the questions."""

    def __init__(self):
        self.open: list[dict] = []
        self.asked = 0

    def begin(self, tid: int, started_mono_s: float):
        self.open.append({"tid": tid, "connection_id": tid // 10, "user": "app", "statement": None,
                          "trx_started_epoch_s": EPOCH_S + started_mono_s})

    def end(self, tid: int):
        self.open = [t for t in self.open if t["tid"] != tid]

    def old_transactions(self):
        self.asked += 1
        return [dict(t) for t in self.open]


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    c.install(monkeypatch)
    return c


def probe_view(tid: int, opened_s: float, seen_open: bool = False) -> dict:
    return {"tid": tid, "opened_ns": int(opened_s * S), "history_at_open": 10, "folded": "f",
            "seen_open": seen_open, "source": "probe"}


def annotated(names: ViewNames, views: list[dict]) -> list[dict]:
    rec = {"type": "read_views", "views": views}
    names.annotate(rec)
    return rec["views"]


def test_a_view_the_probes_saw_close_does_not_come_back_from_an_older_answer(clock):
    """The long snapshot's view, caught later by the probe and named by SQL, closes at its
    COMMIT: the answer still listing its transaction must not bring it back as one only
    SQL saw (it pinned purge for 11 s more in a CI run before this)."""
    server, names = Server(), None
    server.begin(2430, 95.0)
    names = ViewNames(server)
    view = annotated(names, [probe_view(2430, 97.0, seen_open=True)])[0]
    assert (view["connection_id"], view["opened_ns"]) == (243, 95 * S)  # the transaction's start bounds it
    for _ in range(3):
        clock.sleep(1)
        annotated(names, [probe_view(2430, 97.0, seen_open=True)])
    server.end(2430)
    clock.sleep(1)
    assert annotated(names, []) == []
    clock.sleep(1)
    assert annotated(names, []) == []


def test_a_transaction_only_sql_saw_is_asked_after_until_it_ends(clock):
    server = Server()
    server.begin(77, 50.0)
    names = ViewNames(server)
    assert [v["source"] for v in annotated(names, [])] == ["sql"]
    server.end(77)
    seconds_shown = 0
    while annotated(names, []):
        seconds_shown += 1
        clock.sleep(1)
    assert 0 < seconds_shown <= UNSEEN_RECHECK_S + 1


def test_a_transaction_sql_caught_young_is_not_shown_later_from_the_same_answer(clock):
    """The answer that named the snapshot also listed a writer's autocommit UPDATE, 0.3 s
    old: the UPDATE ends at once, so the stale answer must not make it the oldest view two
    seconds on (a CI run of test_purge_history on MySQL 8.0.15 named the writer's thread,
    opened before the snapshot by the whole second INNODB_TRX gives). Still open at the
    next answer, it is shown."""
    server = Server()
    server.begin(4000, 99.9)  # the snapshot's
    server.begin(5000, 99.7)  # the writer's UPDATE, whole second 99 by INNODB_TRX
    server.open[-1]["trx_started_epoch_s"] = EPOCH_S + 99
    names = ViewNames(server)
    snapshot = probe_view(4000, 99.9)
    for _ in range(6):
        assert [v["tid"] for v in annotated(names, [dict(snapshot)])] == [4000]
        clock.sleep(1)
    assert server.asked == 1
    clock.sleep(view_names.ASK_ANYWAY_S)
    assert [v["tid"] for v in annotated(names, [dict(snapshot)])] == [5000, 4000]
    assert server.asked == 2


def test_only_transactions_whose_isolation_can_hold_a_view_are_shown(clock):
    """INNODB_TRX lists every open transaction, not whether it holds a view: one in READ
    UNCOMMITTED never does, one in READ COMMITTED only while a statement runs; REPEATABLE READ
    from its first read to its end."""
    server = Server()
    for tid, isolation, running in ((10, "REPEATABLE READ", False), (20, "READ COMMITTED", False),
                                    (30, "READ COMMITTED", True), (40, "READ UNCOMMITTED", True),
                                    (50, "SERIALIZABLE", False)):
        server.begin(tid, 50.0)
        server.open[-1].update(isolation=isolation, running=running)
    shown = annotated(ViewNames(server), [])
    assert [(v["tid"], v["source"]) for v in shown] == [(10, "sql"), (30, "sql")]


def test_a_transaction_only_sql_saw_opens_at_one_moment_in_every_interval(clock, monkeypatch):
    """The two clocks' offset, read anew at each record, moves by microseconds: the same
    transaction then opened at a different moment each interval, a new view each time, and
    none was ever said to pin purge (MySQL 8.0.15, 9.7.4: pinned_by empty under a snapshot
    opened before the recording). Its opening is the same in every record."""
    server = Server()
    server.begin(77, 50.0)
    names = ViewNames(server)
    opened = []
    for drift_us in (0, 3, 7):
        monkeypatch.setattr(view_names.time, "time_ns", lambda d=drift_us: clock.ns + EPOCH_S * S + d * 1000)
        opened += [v["opened_ns"] for v in annotated(names, [])]
        clock.sleep(1)
    assert opened == [50 * S] * 3


def test_an_answer_older_than_the_sighting_does_not_move_the_view_back(clock):
    """A thread's transaction ended and a new one began between the answer and the moment
    the probe caught the new view: the old start is not the new view's."""
    server = Server()
    server.begin(5, 90.0)
    names = ViewNames(server)
    annotated(names, [probe_view(5, 91.0)])
    server.end(5)
    server.begin(5, 100.5)
    clock.sleep(0.5)
    caught = annotated(names, [probe_view(5, 100.5, seen_open=True)])[0]
    assert caught["opened_ns"] == int(100.5 * S)


def test_a_named_view_is_not_asked_about_again_every_second(clock):
    server = Server()
    server.begin(9, 95.0)
    names = ViewNames(server)
    for _ in range(10):
        annotated(names, [probe_view(9, 95.0)])
        clock.sleep(1)
    assert server.asked == 1


def test_a_view_read_from_memory_without_its_thread_is_named_by_its_connection(clock):
    """A MySQL THD gives the connection, not the OS thread: SQL gives the thread, and the
    transaction is not shown a second time as one only SQL saw."""
    server = Server()
    server.begin(4210, 90.0)
    names = ViewNames(server)
    memory_view = {"tid": None, "connection_id": 421, "opened_ns": 91 * S, "history_at_open": None,
                   "folded": "", "seen_open": True, "source": "memory"}
    views = annotated(names, [memory_view])
    assert [(v["tid"], v["user"], v["source"]) for v in views] == [(4210, "app", "memory")]


def test_with_every_view_read_from_memory_sql_only_names_them(clock):
    """The walk reads every open view: a transaction SQL lists with none there holds none,
    so it is never shown, and SQL is asked only for a view long open with no name."""
    server = Server()
    server.begin(77, 50.0)  # open long, but with no read view
    names = ViewNames(server, views_complete=True)
    for _ in range(20):
        assert annotated(names, []) == []
        clock.sleep(1)
    assert server.asked == 0
    memory_view = {"tid": 77, "connection_id": 7, "opened_ns": 95 * S, "history_at_open": None,
                   "folded": "", "seen_open": True, "source": "memory"}
    assert annotated(names, [memory_view])[0]["user"] == "app"
    for _ in range(5):
        clock.sleep(1)
        annotated(names, [dict(memory_view)])
    assert server.asked == 1


def test_with_every_view_read_from_memory_the_first_view_is_named_at_once(clock):
    """A view already open at the first line is named then, as without the walk (the live
    pinning test reads its user from the first second on)."""
    server = Server()
    server.begin(88, 99.5)
    names = ViewNames(server, views_complete=True)
    view = {"tid": 88, "connection_id": 8, "opened_ns": int(99.5 * S), "history_at_open": None,
            "folded": "f", "seen_open": False, "source": "probe"}
    assert annotated(names, [view])[0]["user"] == "app" and server.asked == 1
