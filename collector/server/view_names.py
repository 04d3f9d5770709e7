"""Who holds the oldest read views. The probes give each view's OS thread, its opening time
and stack; where innostall can log in (collector/server/sql.py), the recorder adds what only the
server knows: the connection id, user and statement of that thread, and the transactions
already open when the recording began, whose views the probes never saw open. Nothing
else depends on it: without SQL access the views keep what the probes gave."""
from __future__ import annotations

import math
import time

# The query runs in the server, and under 8 OLTP threads on 2 cores asking once a second
# cost it about 2.5% more CPU per transaction (make bench, 7 pairs: +2.6% with the probes
# all but detached, -0.6% without SQL). So it is asked when a view has been open a while
# that no answer names yet, at most once a second (INNODB_TRX is refreshed every 0.1 s at
# best), and otherwise every ASK_ANYWAY_S, for transactions no probe saw open.
# An answer grows stale: a transaction it lists may have ended since. A transaction only SQL
# saw is shown until the next answer, so while one is shown it is asked after again every
# UNSEEN_RECHECK_S (it may be what pins purge, which is worth the query); a view the probes
# saw close takes its transaction out of the answer at once.
ASK_EVERY_S = 1.0
ASK_ANYWAY_S = 15.0
UNSEEN_RECHECK_S = 5.0
LONG_OPEN_S = 2.0  # a view or transaction open this long may be what holds purge back
NAMES = ("connection_id", "user", "statement")


def may_hold_a_view(trx: dict) -> bool:
    """Whether a transaction SQL lists can hold a read view now (INNODB_TRX says not whether
    it has one): READ UNCOMMITTED never opens one; READ COMMITTED, and SERIALIZABLE (whose
    reads inside a transaction lock rather than read a view; an autocommit SELECT reads one),
    only while a statement of it runs; REPEATABLE READ keeps its first from its first read
    (or START TRANSACTION WITH CONSISTENT SNAPSHOT) to its end."""
    isolation = str(trx.get("isolation") or "").upper()
    if isolation == "READ UNCOMMITTED":
        return False
    return isolation in ("", "REPEATABLE READ") or bool(trx.get("running"))


class ViewNames:
    def __init__(self, session, views_complete: bool = False):
        self.session = session  # a sql.SqlSession, or None
        # every open view is read from the server's memory (open_views.py): a transaction
        # SQL lists with no view there holds none, so SQL only names views, and is asked
        # only when one long open has no name yet
        self.views_complete = views_complete
        self.answer_ns: int | None = None  # CLOCK_MONOTONIC of the last answer, as views are timed
        self.transactions: list[dict] = []  # open at the last answer, oldest first
        self.probe_tids: set[int] = set()  # threads with a view the probes saw open last time
        self.unseen_shown = False  # the last record showed transactions only SQL saw
        self.to_mono: int | None = None  # CLOCK_MONOTONIC - CLOCK_REALTIME, ns

    def annotate(self, rec: dict) -> None:
        """Name the views of a read_views record in place, and add the transactions that
        were open before the recording began and that no probe saw (source "sql")."""
        if self.session is None:
            return
        self.forget_closed(rec["views"])
        if self.worth_asking(rec["views"]):
            self.answer_ns = time.monotonic_ns()
            self.transactions = self.session.old_transactions()
        by_tid = {t["tid"]: t for t in self.transactions if t["tid"] is not None}
        if self.to_mono is None:  # this clock's offset to CLOCK_REALTIME, taken once: read anew
            # each time it moved a few µs, and one transaction's view became a new view every
            # interval (opened_s differing), none of them seen twice, so none said to pin purge
            self.to_mono = time.monotonic_ns() - time.time_ns()
        to_mono = self.to_mono
        by_connection = {t["connection_id"]: t for t in self.transactions if t["connection_id"] is not None}
        for view in rec["views"]:
            trx = by_tid.pop(view["tid"], None)
            if trx is None and view["tid"] is None and view.get("connection_id") in by_connection:
                # a view read from a MySQL server's memory: its THD gives no OS thread
                trx = by_connection[view["connection_id"]]
                view["tid"] = trx["tid"]
                by_tid.pop(trx["tid"], None)
            if trx:
                view.update({k: trx[k] for k in NAMES})
                self.bound_by_start(view, trx, to_mono)
        unseen = [] if self.views_complete else self.unseen(by_tid.values(), to_mono)
        self.unseen_shown = bool(unseen)
        rec["views"] += unseen
        rec["views"].sort(key=lambda v: v["opened_ns"])

    def forget_closed(self, views: list[dict]) -> None:
        """A thread whose view the probes had open and no longer have closed it: its
        transaction in the last answer has ended (or, in READ COMMITTED, holds no view any
        more), and must not come back as one only SQL saw."""
        tids = {v["tid"] for v in views}
        closed = self.probe_tids - tids
        self.probe_tids = tids
        if closed:
            self.transactions = [t for t in self.transactions if t["tid"] not in closed]

    def bound_by_start(self, view: dict, trx: dict, to_mono: int) -> None:
        """A view the probe caught only later (seen_open) opened no earlier than its
        transaction started: take that start, if the answer is newer than the sighting (an
        older answer may describe an earlier transaction of the same thread)."""
        started = self.started_mono_ns(trx, to_mono)
        if (view.get("seen_open") and view.get("source") != "memory"  # the walk's bound is finer
                and started is not None and started < view["opened_ns"]
                and self.answer_ns >= view["opened_ns"]):
            view["opened_ns"] = started

    def worth_asking(self, views: list[dict]) -> bool:
        if self.answer_ns is None:  # the first question names the views already open
            return bool(views) or not self.views_complete
        since = math.inf if self.answer_ns is None else (time.monotonic_ns() - self.answer_ns) / 1e9
        if not self.views_complete and (since >= ASK_ANYWAY_S or (self.unseen_shown and since >= UNSEEN_RECHECK_S)):
            return True
        tids = {t["tid"] for t in self.transactions}
        connections = {t["connection_id"] for t in self.transactions}
        long_open = time.monotonic_ns() - int(LONG_OPEN_S * 1e9)
        return since >= ASK_EVERY_S and any(
            v["opened_ns"] < long_open
            and ((v["tid"] not in tids and v.get("connection_id") not in connections)
                 or self.answer_ns is None or v["opened_ns"] > self.answer_ns)
            for v in views)

    def unseen(self, transactions, to_mono: int) -> list[dict]:
        """Transactions open for a while that no probe saw open a view: opened before the
        probes were in, or while the sampled read_view probe was detached. Each may hold a
        read view (SQL does not say whether it has one). A while by the answer's clock, not
        now: the answer says only that a transaction was open when it was given, and one it
        caught young (an autocommit UPDATE) has most likely ended since. Judged by now, a stale
        answer's UPDATE became the oldest view two seconds later, opened before the snapshot
        that pinned purge (a CI run of test_purge_history, MySQL 8.0.15). A young one still
        open is shown at the next answer, ASK_ANYWAY_S at most."""
        if self.answer_ns is None:
            return []
        views = []
        long_open = self.answer_ns - int(LONG_OPEN_S * 1e9)
        for trx in transactions:
            started = self.started_mono_ns(trx, to_mono)
            if started is None or started > long_open or not may_hold_a_view(trx):
                continue
            views.append({"tid": trx["tid"], "opened_ns": started, "history_at_open": None,
                          "folded": "", "seen_open": True, "source": "sql",
                          **{k: trx[k] for k in NAMES}})
        return views

    @staticmethod
    def started_mono_ns(trx: dict, to_mono: int) -> int | None:
        epoch_s = trx.get("trx_started_epoch_s")
        return None if epoch_s is None else int(epoch_s * 1e9) + to_mono

    def close(self) -> dict:
        """What meta.json says of SQL access at the end."""
        if self.session is None:
            return {}
        failure = self.session.failure
        self.session.close()
        return {"failure": failure} if failure else {}
