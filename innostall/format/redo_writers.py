"""The recording's redo_writers table: every thread that wrote redo while the redo_write
probe was attached (probes/redo.bpf.c's redo_writers map, in the journal's latch_tables
lines, the last one whole), with its role, so that the report can say how much of the redo
user connections wrote and how much the server's own threads.

    tid, thread    the thread's id and name (MariaDB and MySQL before 8.0.27 name few)
    role           what the thread is, from its name or else the stack of its first write
                   outside purge (innostall/format/roles.py); "purge" for a thread that
                   wrote only inside purge's spans
    stack          that stack, folded, root first ("" when it never wrote outside purge)
    bytes          the redo it wrote, its mini-transactions' own bytes
    purge_bytes    the part of it written inside purge's spans (charged to purge)
    writes         its mini-transactions"""
from __future__ import annotations

from innostall.format.roles import role_of

REDO_WRITERS = "redo_writers.parquet"
COLUMNS = {"tid": "int32", "thread": "string", "role": "string", "stack": "string", "bytes": "int64",
           "purge_bytes": "int64", "writes": "int64"}
PURGE_ONLY = "purge"


def redo_writers_table(records: list[dict]):
    import pandas as pd
    tables = next((r for r in reversed(records) if r.get("type") == "latch_tables"), {})
    rows = [(tid, thread, role_of(thread, stack) if stack else PURGE_ONLY, stack, written, by_purge, writes)
            for tid, thread, written, by_purge, writes, stack in tables.get("redo_writers", [])]
    return pd.DataFrame(rows, columns=list(COLUMNS)).astype(COLUMNS)
