"""Who holds the oldest read views. The probes give each view's OS thread, its opening time
and stack; where innostall can log in (collector/sql.py), the recorder adds what only the
server knows: the connection id, user and statement of that thread, and the transactions
already open when the recording began, whose views the probes never saw open. Nothing
else depends on it: without SQL access the views keep what the probes gave."""
from __future__ import annotations

import time

# The query runs in the server, and under 8 OLTP threads on 2 cores asking once a second
# cost it about 2.5% more CPU per transaction (make bench, 7 pairs: +2.6% with the probes
# all but detached, -0.6% without SQL). So it is asked when a view has been open a while
# that no answer names yet, at most once a second (INNODB_TRX is refreshed every 0.1 s at
# best), and otherwise every ASK_ANYWAY_S, for transactions no probe saw open.
ASK_EVERY_S = 1.0
ASK_ANYWAY_S = 15.0
LONG_OPEN_S = 2.0  # a view or transaction open this long may be what holds purge back
NAMES = ("connection_id", "user", "statement")


class ViewNames:
    def __init__(self, session):
        self.session = session  # a sql.SqlSession, or None
        self.asked_at = float("-inf")
        self.transactions: list[dict] = []  # open now, oldest first

    def annotate(self, rec: dict) -> None:
        """Name the views of a read_views record in place, and add the transactions that
        were open before the recording began and that no probe saw (source "sql")."""
        if self.session is None:
            return
        if self.worth_asking(rec["views"]):
            self.asked_at = time.monotonic()
            self.transactions = self.session.old_transactions()
        by_tid = {t["tid"]: t for t in self.transactions if t["tid"] is not None}
        to_mono = time.monotonic_ns() - time.time_ns()  # this clock's offset to CLOCK_REALTIME
        for view in rec["views"]:
            trx = by_tid.pop(view["tid"], None)
            if trx:
                view.update({k: trx[k] for k in NAMES})
                started = self.started_mono_ns(trx, to_mono)
                if view.get("seen_open") and started is not None and started < view["opened_ns"]:
                    view["opened_ns"] = started  # the transaction's start bounds the view's
        rec["views"] += self.unseen(by_tid.values(), to_mono)
        rec["views"].sort(key=lambda v: v["opened_ns"])

    def worth_asking(self, views: list[dict]) -> bool:
        since = time.monotonic() - self.asked_at
        if since >= ASK_ANYWAY_S:
            return True
        named = {t["tid"] for t in self.transactions}
        long_open = time.monotonic_ns() - int(LONG_OPEN_S * 1e9)
        return since >= ASK_EVERY_S and any(v["tid"] not in named and v["opened_ns"] < long_open
                                            for v in views)

    def unseen(self, transactions, to_mono: int) -> list[dict]:
        """Transactions open for a while that no probe saw open a view: opened before the
        probes were in, or while the sampled read_view probe was detached. Each may hold a
        read view (SQL does not say whether it has one)."""
        views = []
        long_open = time.monotonic_ns() - int(LONG_OPEN_S * 1e9)
        for trx in transactions:
            started = self.started_mono_ns(trx, to_mono)
            if started is None or started > long_open:
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
