"""A replica's lag as the server itself reports it (Seconds_Behind_Master, or
Seconds_Behind_Source), read over SQL (collector/server/sql.py) once an interval, in a thread
of its own: a server slow to answer must never hold the recording back, so each snapshot
takes the last answer there is.

The figure is the server's: the time since the source wrote the event the applier is on
(MariaDB: its last_master_timestamp), 0 while the applier waits for events, none while
replication is stopped. With several channels, the largest. Only where innostall can log
in; a server that is not a replica answers no rows, and then it is not asked again.

Use
    reader = LagReader.start(session, every_s)   # None when the server is no replica
    reader.gauges()                              # {"replica_lag_s": 12} or {} (not known now)
    reader.close()
    replicates(session)                          # True, False, or None (it would not say)
"""
from __future__ import annotations

import threading

import pymysql

# the statement each family answers, newest spelling first: SHOW ALL SLAVES STATUS (MariaDB,
# every channel), SHOW REPLICA STATUS (MySQL 8.0.22+), SHOW SLAVE STATUS (older MySQL)
STATEMENTS = ("SHOW ALL SLAVES STATUS", "SHOW REPLICA STATUS", "SHOW SLAVE STATUS")
LAG_COLUMNS = ("Seconds_Behind_Master", "Seconds_Behind_Source")


def lag_of(columns: list[str], rows: list[tuple]) -> int | None:
    """The largest lag over the channels that report one (None: none does, e.g. stopped)."""
    at = [i for i, name in enumerate(columns) if name in LAG_COLUMNS]
    lags = [int(row[i]) for row in rows for i in at if row[i] is not None]
    return max(lags) if lags else None


class LagReader:
    def __init__(self, session, statement: str, every_s: float):
        self.session, self.statement, self.every_s = session, statement, every_s
        self.latest: dict[str, int] = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, name="replica-lag", daemon=True)

    @classmethod
    def start(cls, session, every_s: float) -> "LagReader | None":
        """A reader, polling, if the server answers one of STATEMENTS with a row: it is a
        replica; None otherwise (the session is closed then)."""
        answer = status(session)
        if not answer or not answer[2]:
            session.close()
            return None
        statement, columns, rows = answer
        reader = cls(session, statement, every_s)
        reader.keep(columns, rows)
        reader.thread.start()
        return reader

    def keep(self, columns: list[str], rows: list[tuple]) -> None:
        lag = lag_of(columns, rows)
        self.latest = {} if lag is None else {"replica_lag_s": lag}

    def run(self) -> None:
        while not self.stopping.wait(self.every_s):
            try:
                self.keep(*ask(self.session, self.statement))
            except (pymysql.MySQLError, OSError, ValueError):
                self.latest = {}  # lost: say nothing rather than an old figure
                return

    def gauges(self) -> dict[str, int]:
        return dict(self.latest)

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
        self.session.close()


def status(session) -> tuple[str, list[str], list[tuple]] | None:
    """The first of STATEMENTS the server answers, with its answer (no rows: it is not a
    replica); None when it answers none (no privilege)."""
    for statement in STATEMENTS:
        try:
            return (statement, *ask(session, statement))
        except (pymysql.MySQLError, OSError, ValueError):
            continue  # not this family's spelling, or not allowed
    return None


def replicates(session) -> bool | None:
    """Whether the server replicates from a source (a channel is configured, running or
    not); None when it would not say."""
    answer = status(session)
    return None if answer is None else bool(answer[2])


def ask(session, statement: str) -> tuple[list[str], list[tuple]]:
    with session.conn.cursor() as cur:
        cur.execute(statement)
        return [d[0] for d in cur.description or []], list(cur.fetchall())
