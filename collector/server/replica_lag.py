"""A replica's lag as the server itself reports it (Seconds_Behind_Master, or
Seconds_Behind_Source), read over SQL (collector/server/sql.py) once an interval, in a thread
of its own: a server slow to answer must never hold the recording back, so each snapshot
takes the last answer there is.

The figure is the server's: the time since the source wrote the event the applier is on
(MariaDB: its last_master_timestamp), 0 while the applier waits for events, none while
replication is stopped. With several channels, the largest. Only where innostall can log
in; a server that is not a replica answers no rows, and then it is not asked again.

The reader also tells the loader when the replica falls behind (feed: the loader's standard
input, the signal replica_behind of collector/loader/state_signals.c), so that the cost
governor holds the applier's sampled group open while it is (Behind): at the default budget
the applier's probes cost more than the whole budget under a busy replica, and without it
they were attached 5-9% of a redo-bound replica's catching up. It asks then every FEED_EVERY_S,
as the server's lag is in whole seconds and the first second of it comes late enough.

Use
    reader = LagReader.start(session, every_s)   # None when the server is no replica
    reader.feed(pipe)                            # tell the loader replica_behind=0|1 as it changes
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
DELAY_COLUMN = "SQL_Delay"  # a replica held back on purpose (MASTER_DELAY): that much lag is no one's fault
FEED_SIGNAL = "replica_behind"  # the loader's fed signal (collector/server/signals.py)
FEED_EVERY_S = 0.25  # how often the lag is asked while the loader is fed: a SHOW ... STATUS, under a ms


def lag_of(columns: list[str], rows: list[tuple], beyond_delay: bool = False) -> int | None:
    """The largest lag over the channels that report one (None: none does, e.g. stopped);
    beyond_delay: each less its own SQL_Delay, the lag no one meant."""
    at = [i for i, name in enumerate(columns) if name in LAG_COLUMNS]
    delay = columns.index(DELAY_COLUMN) if DELAY_COLUMN in columns else None

    def lag(row: tuple, i: int) -> int:
        if not beyond_delay:
            return int(row[i])
        return max(0, int(row[i]) - (int(row[delay] or 0) if delay is not None else 0))
    lags = [lag(row, i) for row in rows for i in at if row[i] is not None]
    return max(lags) if lags else None


class Behind:
    """Whether the replica is behind and its applier worth watching: its lag (beyond any
    delay) above 0 and climbed since it was last 0, a reading above the one before it; held
    so until it is 0 again (caught up) or unknown (replication stopped). A lag at 0 (the
    applier idle or keeping up) says nothing, nor one above 0 that never climbed since the
    reading began (a fixed offset): only a replica falling behind opens the group."""

    def __init__(self):
        self.last: int | None = None
        self.climbed = False

    def see(self, lag: int | None) -> bool:
        if not lag or lag < 0:
            self.last, self.climbed = (0 if lag == 0 else None), False
            return False
        self.climbed = self.climbed or (self.last is not None and lag > self.last)
        self.last = lag
        return self.climbed


class LagReader:
    def __init__(self, session, statement: str, every_s: float):
        self.session, self.statement, self.every_s = session, statement, every_s
        self.latest: dict[str, int] = {}
        self.behind, self.pipe, self.told = Behind(), None, None
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
        self.tell(self.behind.see(lag_of(columns, rows, beyond_delay=True)))

    def feed(self, pipe) -> None:
        """Tell pipe (the loader's standard input, text) replica_behind=1 or 0 at each change,
        and ask the server every FEED_EVERY_S from now on."""
        self.every_s = min(self.every_s, FEED_EVERY_S)
        self.pipe = pipe
        self.tell(self.behind.climbed)

    def tell(self, behind: bool) -> None:
        if self.pipe is None or behind == self.told:
            return
        try:
            self.pipe.write(f"{FEED_SIGNAL}={int(behind)}\n")
            self.pipe.flush()
            self.told = behind
        except (OSError, ValueError):  # the loader has ended (or its input was closed)
            self.pipe = None

    def run(self) -> None:
        while not self.stopping.wait(self.every_s):
            try:
                self.keep(*ask(self.session, self.statement))
            except (pymysql.MySQLError, OSError, ValueError):
                self.latest = {}  # lost: say nothing rather than an old figure
                self.tell(False)
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
