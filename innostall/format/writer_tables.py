"""Three tables of the server's writers, from the journal's latch_tables lines (the last one
whole): who wrote the redo, who waited for flushing, and a replica's applier threads.

redo_writers.parquet: every thread that wrote redo while the redo_write probe was
attached (probes/redo.bpf.c), so that the report can say how much of the redo user
connections wrote and how much the server's own threads.

    tid, thread    the thread's id and name (MariaDB and MySQL before 8.0.27 name few)
    role           what the thread is, from its name or else the stack of its first write
                   outside purge (innostall/format/roles.py); "purge" for a thread that
                   wrote only inside purge's spans; by its name alone when no stack was
                   taken (16 tries, each failing when the stack map's bucket is taken)
    stack          that stack, folded, root first ("" when it never wrote outside purge)
    bytes          the redo it wrote, its mini-transactions' own bytes
    purge_bytes    the part of it written inside purge's spans (charged to purge)
    writes         its mini-transactions

flush_waits.parquet: writers' waits for flushing (probes/flush.bpf.c), by what they waited
for, the waiter's thread and stack.

    kind           "log room": the checkpoint age at the point where writers wait for the
                   page cleaners to flush the oldest pages (probe log_room_wait); "free
                   page": no free page in the buffer pool (probe free_page_wait)
    thread, role   the waiter's name and role, as above (from the waiting stack)
    stack          the waiter's stack, folded, root first
    waits, wait_us the waits and their time

appliers.parquet: a replica's applier threads, each with the events it applied while the
applier_event probe was attached (probes/applier.bpf.c).

    tid, thread    the thread's id and name
    role           "replication applier": every thread here applied replicated events,
                   whatever its name (MariaDB's are all named after the server)
    events         the events it applied
    apply_ns       their time, entry to return"""
from __future__ import annotations

from innostall.format.roles import role_of
from innostall.format.tables import dtypes

REDO_WRITER_COLUMNS, FLUSH_WAIT_COLUMNS = dtypes("redo_writers"), dtypes("flush_waits")
APPLIER_COLUMNS = dtypes("appliers")
PURGE_ONLY = "purge"
APPLIER_ROLE = "replication applier"  # as innostall/format/roles.py names it
FLUSH_WAIT_KINDS = ("log room", "free page")  # probes/innostall.h enum flush_wait_kind, in its order


def latest_tables(records: list[dict]) -> dict:
    return next((r for r in reversed(records) if r.get("type") == "latch_tables"), {})


def writer_role(thread: str, stack: str, written: int, by_purge: int) -> str:
    """A writer's role from its name or its stack; one with no stack wrote only inside
    purge's spans, or its stacks could not be taken (then its name alone tells)."""
    if not stack and by_purge >= written:
        return PURGE_ONLY
    return role_of(thread, stack)


def redo_writers_table(records: list[dict]):
    import pandas as pd
    rows = [(tid, thread, writer_role(thread, stack, written, by_purge), stack, written, by_purge, writes)
            for tid, thread, written, by_purge, writes, stack in latest_tables(records).get("redo_writers", [])]
    return pd.DataFrame(rows, columns=list(REDO_WRITER_COLUMNS)).astype(REDO_WRITER_COLUMNS)


def flush_waits_table(records: list[dict]):
    import pandas as pd
    rows = [(FLUSH_WAIT_KINDS[kind] if kind < len(FLUSH_WAIT_KINDS) else f"kind {kind}", thread,
             role_of(thread, stack), stack, waits, ns / 1000)
            for kind, thread, waits, ns, stack in latest_tables(records).get("flush_waits", [])]
    return pd.DataFrame(rows, columns=list(FLUSH_WAIT_COLUMNS)).astype(FLUSH_WAIT_COLUMNS)


def appliers_table(records: list[dict]):
    import pandas as pd
    rows = [(tid, thread, APPLIER_ROLE, events, ns) for tid, thread, events, ns in latest_tables(records).get("appliers", [])]
    return pd.DataFrame(rows, columns=list(APPLIER_COLUMNS)).astype(APPLIER_COLUMNS)
