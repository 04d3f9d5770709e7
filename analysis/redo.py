"""Redo and flushing, from the server's state read from its memory at each snapshot
(collector/server/state.py; the counters server.NAME, each a level at the snapshot):
how much redo was written, how close the checkpoint age came to the points where InnoDB
flushes furiously (async) and where it stops writers to flush (sync, or the log's
capacity), the buffer pool's dirty and free pages and the undo logs' size; and, from the
redo_write probe (probes/redo.bpf.c), who wrote the redo.

InnoDB's own terms: the checkpoint age is the LSN minus the last checkpoint's LSN, the
redo the log must keep until the pages it changed are flushed. Past max_modified_age_async
the page cleaners flush without regard to innodb_io_capacity; past the sync point
(max_modified_age_sync on MariaDB 10.2-10.4, max_checkpoint_age on later ones) writers wait
for flushing. Those points are the server's own, read with the rest."""
from __future__ import annotations

import math

import pandas as pd

from innostall.format.journal import SERVER_STATE

from .cost import coverage
from .flush_batches import LISTS
from .histogram import stats
from .recording import Recording

STATE = ("lsn", "checkpoint_lsn", "log_capacity", "max_checkpoint_age", "async_flush_age",
         "sync_flush_age", "dirty_pages", "free_pages", "lru_pages", "history", "checkpoint_age_peak",
         "undo_pages", "undo_cached_pages", "page_size", "undo_file_bytes")
# The redo_write probe's split (probes/innostall.h): role as the latch holders name them -> counter
WRITERS = (("purge coordinator", "redo_bytes_purge_coordinator"), ("purge worker", "redo_bytes_purge_workers"))
OTHER_WRITERS = "other"  # user connections, the page cleaner, the master thread ...


def state_table(rec: Recording) -> pd.DataFrame:
    """One row per snapshot at which the state was read (index t_s): each gauge (NaN where
    not read), redo_bytes (the LSN's growth since the reading before; NaN at the first),
    checkpoint_age (at the snapshot), age_peak (the highest since the snapshot before) and
    sync_age (the point where writers wait: max_modified_age_sync where the build has one,
    else max_checkpoint_age). Made once per counters table (the redo section, its findings
    and the HTML's chart each ask), a copy each time."""
    if not hasattr(rec, "derived"):
        return state_table_of(rec.counters)
    return rec.derived(("state_table",), (rec.counters,), lambda: state_table_of(rec.counters)).copy()


def state_table_of(counters: pd.DataFrame) -> pd.DataFrame:
    # picked by the names the table has, not by each row's name as text (8 hours: 1.3 s)
    names = [n for n in counters["name"].unique() if str(n).startswith(SERVER_STATE)]
    rows = counters[counters["name"].isin(names)]
    table = (rows.assign(name=rows["name"].astype(str).str.removeprefix(SERVER_STATE))
             .pivot_table(index="t_s", columns="name", values="value", aggfunc="last")
             if len(rows) else pd.DataFrame(index=pd.Index([], name="t_s", dtype="float64")))
    table = table.reindex(columns=list(STATE)).astype("float64")
    table["redo_bytes"] = table["lsn"].diff()
    table["checkpoint_age"] = table["lsn"] - table["checkpoint_lsn"]
    # the highest age read since the snapshot before (recordings before it was read: the snapshot's)
    table["age_peak"] = table[["checkpoint_age", "checkpoint_age_peak"]].max(axis=1, skipna=True).where(
        table["checkpoint_age"].notna())
    table["sync_age"] = table["sync_flush_age"].fillna(table["max_checkpoint_age"])
    return table


def flush_series(rec: Recording) -> pd.DataFrame:
    """The HTML chart's series (charts.FLUSH_ROWS), by time: in MiB, MiB/s and pages."""
    table, mib = state_table(rec), 2**20
    seconds = pd.Series(table.index, index=table.index).diff()
    return pd.DataFrame({"checkpoint age (peak)": table["age_peak"] / mib,
                         "async flush point": table["async_flush_age"] / mib,
                         "sync flush point": table["sync_age"] / mib,
                         "redo MiB/s": table["redo_bytes"] / seconds / mib,
                         "dirty pages": table["dirty_pages"], "free pages": table["free_pages"],
                         "undo log pages": table["undo_pages"],
                         "undo pages cached": table["undo_cached_pages"],
                         **writer_rates(rec, table.index, seconds),
                         **batch_rates(rec, table.index, seconds)}, index=table.index)


def writer_rates(rec: Recording, index: pd.Index, seconds: pd.Series) -> dict:
    """Purge's part of the redo (its coordinator's and workers' mini-transactions), MiB/s at
    the state's snapshots, beside the LSN's growth; none where redo_write was not attached.
    Per interval only purge's part is known: the rest is split by thread once, for the whole
    recording (by_writer)."""
    if not rec.probe_attached("redo_write"):
        return {}
    written = counters_at(rec, [name for _, name in WRITERS], index)
    return {f"{role} redo MiB/s": written[name] / seconds / 2**20 for role, name in WRITERS if name in written}


def batch_rates(rec: Recording, index: pd.Index, seconds: pd.Series) -> dict:
    """The pages the page cleaners' batches wrote per second, each list's, at the state's
    snapshots; none where no batch probe was attached."""
    if not rec.probe_attached("flush_batch"):
        return {}
    pages = counters_at(rec, ["flush_list_pages", "flush_lru_pages"], index)
    return {f"{label} pages/s": pages[name] / seconds
            for name, label in (("flush_list_pages", "flush list"), ("flush_lru_pages", "LRU list")) if name in pages}


def counters_at(rec: Recording, names: list[str], index: pd.Index) -> pd.DataFrame:
    """Those counters' growth in each interval (one column each, of those recorded), at the
    state's snapshots."""
    rows = rec.counters[rec.counters["name"].isin(names)]
    return rows.pivot_table(index="t_s", columns="name", values="value", aggfunc="sum").reindex(index)


def when_max(series: pd.Series) -> tuple[float, float | None]:
    known = series.dropna()
    return (float(known.max()), round(float(known.idxmax()), 3)) if len(known) else (math.nan, None)


def seconds_at_or_above(values: pd.Series, limit: pd.Series) -> float:
    """Seconds of the intervals whose snapshot found values at or above limit."""
    lengths = pd.Series(values.index, index=values.index).diff()
    over = (values >= limit) & values.notna() & limit.notna()
    return float(lengths[over].sum())


def whole(value) -> int | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else int(value)


def by_writer(rec: Recording) -> dict | None:
    """Who wrote the redo, from the redo_write probe (redo.bpf.c): the mini-transactions'
    own bytes over the time it was attached, {payload_bytes, writes, by_role: {role: bytes},
    by_role_share: {role: share}}; None when it was not attached. Purge's part is its spans'
    (counters); the rest goes to each thread's role (the redo_writers table, roles as the
    latch holders name them), and to "other" what no thread was tabled for (a full map,
    recordings made before the table, or a window of the recording: the table is whole)."""
    if not rec.probe_attached("redo_write"):
        return None
    total = rec.counter_total("redo_bytes")
    parts = {role: rec.counter_total(name) for role, name in WRITERS}
    rest = max(0, total - sum(parts.values()))
    if rec.window is None:
        for role, written in thread_roles(rec.redo_writers).items():
            written = min(written, rest)
            parts[role] = parts.get(role, 0) + written
            rest -= written
    parts[OTHER_WRITERS] = parts.get(OTHER_WRITERS, 0) + rest
    return {"payload_bytes": total, "writes": rec.counter_total("redo_writes"), "by_role": parts,
            "by_role_share": {role: round(b / total, 4) if total else None for role, b in parts.items()},
            "by_role_coverage": round(coverage(rec, "redo_write"), 3)}


def thread_roles(writers: pd.DataFrame) -> dict[str, int]:
    """The redo each role wrote outside purge's spans, heaviest first."""
    outside = (writers["bytes"] - writers["purge_bytes"]).clip(lower=0)
    sums = outside[outside > 0].groupby(writers["role"]).sum().sort_values(ascending=False)
    return {str(role): int(written) for role, written in sums.items()}


def redo_summary(rec: Recording) -> dict:
    """The summary's redo, checkpoint, buffer_pool and undo_space sections, each None when
    not measured (server_state says why the state was not read)."""
    table = state_table(rec)
    lsn = table["lsn"].dropna()
    redo = None
    if len(lsn) >= 2:
        seconds = float(lsn.index[-1] - lsn.index[0])
        per_s = table["redo_bytes"] / pd.Series(table.index, index=table.index).diff()
        peak, peak_at = when_max(per_s)
        redo = {"bytes": int(lsn.iloc[-1] - lsn.iloc[0]), "from_s": round(float(lsn.index[0]), 3),
                "to_s": round(float(lsn.index[-1]), 3),
                "per_s": round((lsn.iloc[-1] - lsn.iloc[0]) / seconds, 1) if seconds else None,
                "peak_per_s": whole(peak), "peak_at_s": peak_at}
    writers = by_writer(rec)
    if writers:
        redo = {**(redo or {"bytes": None}), **writers}
    age = table["age_peak"]
    checkpoint = None
    if age.notna().any():
        age_max, age_at = when_max(age)
        sync_age, async_age = table["sync_age"].loc[age.idxmax()], table["async_flush_age"].loc[age.idxmax()]
        checkpoint = {"age_max_bytes": int(age_max), "age_max_at_s": age_at,
                      "age_max_share_of_sync": round(age_max / sync_age, 3) if sync_age > 0 else None,
                      "age_max_share_of_async": round(age_max / async_age, 3) if async_age > 0 else None,
                      # the points when the age peaked: a log resized online moves them
                      "async_flush_age": whole(async_age), "sync_flush_age": whole(sync_age),
                      "log_capacity": whole(table["log_capacity"].loc[age.idxmax()]),
                      # read between snapshots from memory (how often: age_reads_per_s); by
                      # SQL only at the snapshots
                      "peak_between_snapshots": bool(table["checkpoint_age_peak"].notna().any()),
                      "age_reads_per_s": age_reads_per_s(rec),
                      "async_s": round(seconds_at_or_above(age, table["async_flush_age"]), 3),
                      "sync_s": round(seconds_at_or_above(age, table["sync_age"]), 3)}
    pool = None
    if table["dirty_pages"].notna().any():
        dirty_max, dirty_at = when_max(table["dirty_pages"])
        pool = {"dirty_pages_max": int(dirty_max), "dirty_pages_max_at_s": dirty_at,
                "dirty_pages_last": whole(table["dirty_pages"].dropna().iloc[-1]),
                "free_pages_min": whole(table["free_pages"].min()),
                "data_pages_max": whole(table["lru_pages"].max())}
    return {"redo": redo, "checkpoint": checkpoint, "buffer_pool": pool, "undo_space": undo_space(table),
            "pages_dirtied": pages_dirtied(rec),
            "flushing": flushing(rec), "server_state": state_read(rec)}


STACKS_TOLD = 3  # the heaviest waiting stacks the summary names


def flushing(rec: Recording) -> dict | None:
    """Threads' waits for flushing (probes/flush.bpf.c): {log_room: ..., free_page: ...},
    each {waits, wait_s, by_role_s: {role: s}, stacks: [{stack, role, waits, wait_s}],
    open_at_end: {waits, wait_s}} (waits and time from the counters, so a window's own;
    roles and stacks from the flush_waits table, the whole recording's), None where its probe
    was not attached; and the page cleaners' batches (flush_batches). None when none of
    it was measured."""
    found = {"log_room": flush_waits(rec, "log_room_wait", "log room", "log_room"),
             "free_page": flush_waits(rec, "free_page_wait", "free page", "free_page"),
             "batches": flush_batches(rec)}
    if found["log_room"]:
        found["log_room"]["cleaners"] = cleaners_part(rec)
    return found if any(found.values()) else None


def flush_batches(rec: Recording) -> dict | None:
    """{list: {batches, pages, seconds, pages_per_batch}, lru: the same or None when not
    measured, empty, slowest_s (the longest batch), latency_us: {p50, p99, max}, pages_per_batch: {p50, p99, max}}; None
    when no batch probe was attached. MySQL and MariaDB 10.2 run both lists' batches in one
    function, which flush_batch times by their type; later MariaDB has one for each."""
    if not rec.probe_attached("flush_batch"):
        return None
    both = next((p["symbol"] or "" for p in rec.meta.get("probes", []) if p["name"] == "flush_batch"), "")
    lru_measured = rec.probe_attached("flush_lru_batch") or "buf_flush_do_batch" in both
    found = {"coverage": coverage(rec, "flush_batch"),  # sampled: a cleaner may call it 40k times a second
             "empty": rec.counter_total("flush_batches_empty"),
             "slowest_s": round(rec.counter_total("flush_batch_max_ns") / 1e9, 6),
             "latency_us": stats(rec.hist("flush_batch_latency")),
             "pages_per_batch": stats(rec.hist("flush_batch_pages"))}
    for name in LISTS:
        batches, pages = rec.counter_total(f"flush_{name}_batches"), rec.counter_total(f"flush_{name}_pages")
        if name == "lru" and not lru_measured:
            found[name] = None
            continue
        found[name] = {"batches": batches, "pages": pages,
                       "seconds": round(rec.counter_total(f"flush_{name}_batch_ns") / 1e9, 6),
                       "pages_per_batch": round(pages / batches, 1) if batches else None}
    return found


def cleaners_part(rec: Recording) -> dict | None:
    """Of the writers' waits for log room, those that waited for the page cleaners and the
    time they did (probe log_room_cleaner): {waits, wait_s}. The rest of the time the writers
    wrote the log and made the checkpoint themselves (own_s). None where the part is not told
    (MySQL's and older MariaDB's waits are all the page cleaners')."""
    if not rec.probe_attached("log_room_cleaner"):
        return None
    cleaners_ns = rec.counter_total("log_room_cleaner_wait_ns")
    return {"waits": rec.counter_total("log_room_cleaner_waits"), "wait_s": round(cleaners_ns / 1e9, 3),
            "own_s": round(max(rec.counter_total("log_room_wait_ns") - cleaners_ns, 0) / 1e9, 3)}


def flush_waits(rec: Recording, probe: str, kind: str, prefix: str) -> dict | None:
    """One kind of wait: the probe's counters prefix_waits and prefix_wait_ns, its gauges of
    the waits still open, and its rows of the flush_waits table."""
    if not rec.probe_attached(probe):
        return None
    table = rec.flush_waits[rec.flush_waits["kind"] == kind]
    by_role = table.groupby("role")["wait_us"].sum().sort_values(ascending=False)
    heaviest = table.nlargest(STACKS_TOLD, "wait_us")
    return {
        "waits": rec.counter_total(f"{prefix}_waits"),
        "wait_s": round(rec.counter_total(f"{prefix}_wait_ns") / 1e9, 3),
        "by_role_s": {str(role): round(us / 1e6, 3) for role, us in by_role.items() if us > 0},
        "stacks": [{"stack": row.stack, "role": row.role, "waits": int(row.waits),
                    "wait_s": round(row.wait_us / 1e6, 3)} for row in heaviest.itertuples()],
        # still waiting at the last snapshot: counted above only once they end
        "open_at_end": {"waits": last_level(rec, f"{prefix}_waits_open"),
                        "wait_s": round(last_level(rec, f"{prefix}_wait_open_ns") / 1e9, 3)}}


def pages_dirtied(rec: Recording) -> dict | None:
    """Clean pages put on the flush list (probe page_dirtied): {pages, purge_coordinator,
    purge_workers, rest, coverage}, the parts None when purge's spans were not probed; None
    when the probe was not attached (MariaDB 10.6+ has no call to probe)."""
    if not rec.probe_attached("page_dirtied"):
        return None
    pages, seen = rec.counter_total("pages_dirtied"), coverage(rec, "page_dirtied")
    if not rec.probe_attached("purge_batch"):  # purge's spans unseen: its part cannot be told
        return {"pages": pages, "purge_coordinator": None, "purge_workers": None, "rest": None, "coverage": seen}
    coordinator, workers = (rec.counter_total(f"pages_dirtied_purge_{who}") for who in ("coordinator", "workers"))
    return {"pages": pages, "purge_coordinator": coordinator, "purge_workers": workers,
            "rest": pages - coordinator - workers, "coverage": seen}


def last_level(rec: Recording, name: str) -> int:
    """A gauge's value at the last snapshot (0 in recordings made before it was kept)."""
    rows = rec.counters[rec.counters["name"] == name]
    return int(rows.loc[rows["t_s"].idxmax(), "value"]) if len(rows) else 0


def undo_space(table: pd.DataFrame) -> dict | None:
    """The pages the rollback segments hold (their undo logs, history included), over the
    recording, bytes where the page size was read; and how many undo log pages the buffer
    pool held (cached_*: None where the pool was not walked), the last count with the
    rollback segments' size read at the same snapshot."""
    pages, files = table["undo_pages"].dropna(), table["undo_file_bytes"].dropna()
    if pages.empty and files.empty:
        return None
    on_disk = {"file_bytes_max": whole(files.max()), "file_bytes_last": whole(files.iloc[-1])} if len(files) else {}
    if pages.empty:  # by SQL with trx_rseg_current_size disabled: the undo tablespaces' files alone
        return {"pages_max": None, "bytes_max": None, **on_disk}
    page_size = whole(table["page_size"].max())
    most, at = when_max(pages)
    cached = table["undo_cached_pages"].dropna()
    cached_max, cached_at = when_max(cached) if len(cached) else (None, None)
    return {"pages_max": int(most), "pages_max_at_s": at, "pages_first": int(pages.iloc[0]),
            "pages_last": int(pages.iloc[-1]), "page_size": page_size,
            "bytes_max": int(most) * page_size if page_size else None,
            "cached_pages_max": whole(cached_max), "cached_pages_max_at_s": cached_at,
            "cached_pages_last": whole(cached.iloc[-1]) if len(cached) else None,
            "cached_last_of": whole(table.loc[cached.index[-1], "undo_pages"]) if len(cached) else None,
            **on_disk}


def age_reads_per_s(rec: Recording) -> int:
    """How often the recorder read the checkpoint age between snapshots: as meta.json says,
    else 20, the rate of the recordings made before it said (2026-11-30)."""
    state = rec.meta.get("server_state")
    rate = state.get("age_reads_per_s") if isinstance(state, dict) else None
    return rate if isinstance(rate, int) and rate > 0 else 20


def state_read(rec: Recording) -> dict:
    """What of the server's state the recording read: {"read": [gauge ...]}, with "note"
    saying why when nothing was."""
    state = rec.meta.get("server_state")
    if isinstance(state, dict) and isinstance(state.get("read"), list):
        return state
    return {"read": [], "note": "a recording made before innostall read the server's state"}
