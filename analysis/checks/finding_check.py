"""The findings read back against the tables they come from (verdict_check.check runs it):
each finding's figures, recomputed from the counters, histograms and stack tables; the
block a finding names, as the latch table names it; and the server's state read at each
snapshot (server.NAME), which the checkpoint finding and the history's moves are held to.
Apart from verdict_check.py, which checks the verdict's phases, to keep each a module a
reader can hold."""
from __future__ import annotations

import re

import pandas as pd

from .. import estimates
from . import replica_check
from .check_numbers import NUMBER, said
from ..cost import coverage
from ..sampling import EXACT
from ..timeline import per_interval
from ..wording.estimate_words import error_words
from ..wording.findings import HOT_SPOT_WAITS, WRITE_BOUND_SHARE


def finding_problems(told: dict, rec) -> list[str]:
    series = per_interval(rec, ["purge_batches", "purge_empty_batches", "purge_pages"])
    stalled = (series["purge_batches"] > 0) & (series["purge_empty_batches"] == series["purge_batches"])
    working = series[~stalled & (series["purge_pages"] > 0)]
    total = rec.counter_total
    block_waits = sum(total(f"block_waits_{m}") for m in ("s", "x", "sx"))
    block_us = total("block_wait_ns") / 1000
    pages = rec.pages.nlargest(1, "wait_us")
    latches = rec.latches[rec.latches["kind"] == "block"]["name"].astype(str)

    def named(space, page_no, name):
        bare = f"block {space}:{page_no}"
        names = [n for n in latches if n == bare or n.startswith(bare + " ")]
        return name == (max(names, key=len) if names else bare)

    hot = pages.iloc[0] if len(pages) else None
    known = [
        (rf"^In ({NUMBER}) of ({NUMBER}) intervals every purge batch found nothing to purge.*?"
         rf"(?: Purge did its work in ({NUMBER}) interval\(s\): ({NUMBER}) undo pages\.)?"
         rf"(?: \(Of the batches watched, in the ({NUMBER})% of the time their probe was attached\.\))?$",
         lambda g: said(g[0], stalled.sum()) and said(g[1], len(series))
         and (g[2] is None and working.empty or g[2] is not None and said(g[2], len(working))
              and said(g[3], working["purge_pages"].sum()))
         and (g[4] is None) == (coverage(rec, "purge_batch") >= EXACT)
         and (g[4] is None or said(g[4], 100 * coverage(rec, "purge_batch")))),
        (r"^No purge batch ran", lambda g: total("purge_batches") == 0 and rec.probe_attached("purge_batch")
         and coverage(rec, "purge_batch") >= EXACT),
        (rf"^No purge batch was seen in the ({NUMBER})% of the time their probe was attached",
         lambda g: total("purge_batches") == 0 and said(g[0], 100 * coverage(rec, "purge_batch"))),
        (rf"^purge lag throttled DML: ({NUMBER}) inserts/updates slept ({NUMBER}) s",
         lambda g: said(g[0], total("dml_delays")) and said(g[1], total("dml_delay_us") / 1e6)),
        (rf"^({NUMBER}) read\(s\) walked >= ({NUMBER}) row versions; the deepest walked ({NUMBER})",
         lambda g: said(g[0], max(total("deep_walks"), len(rec.walks)))
         and said(g[1], rec.setting("deep_walk_threshold", 100))
         and said(g[2], max([total("version_walk_max_depth"), *rec.walks["depth"]]))),
        (rf"^({NUMBER}) event\(s\) were lost", lambda g: said(g[0], total("drops"))),
        (rf"^version walks read ({NUMBER}) undo pages from disk", lambda g: said(g[0], total("page_reads_walk"))),
        (rf"^Threads waited ({NUMBER}) s in all on buffer-block latches \(({NUMBER}) waits? in ({NUMBER}) s\)"
         rf"(?: while their probes were attached, ({NUMBER})% of the time: about ({NUMBER}) s \(([^)]*)\), "
         rf"({NUMBER}) waits \(([^)]*)\) in all, estimated interval by interval)?\."
         rf"(?: ({NUMBER})% of that time was on one page, (.+?): a hot spot)?"
         rf"(?: ({NUMBER}) s of it \(({NUMBER})%\) was on pages being written to disk)?",
         lambda g: said(g[0], block_us / 1e6) and said(g[1], block_waits) and said(g[2], rec.duration_s)
         and block_estimate_holds(g[3:8], rec)
         and block_words_hold(g[8:], hot, block_us, block_waits, total("block_write_wait_ns") / 1e3, named)),
        (rf"^Purge itself waited ({NUMBER}) s on block latches",
         lambda g: said(g[0], rec.wait_stacks.loc[rec.wait_stacks["stack"].str.contains("row_purge", regex=False),
                                                  "wait_us"].sum() / 1e6)),
        (rf"^({NUMBER}) waits were for a page being read from disk", lambda g: said(g[0], total("block_io_waits"))),
        (rf"^Purge wrote ({NUMBER})% of the redo \(({NUMBER}) of ({NUMBER}) MiB: its coordinator ({NUMBER})%, "
         rf"its workers ({NUMBER})%\)\.$",
         lambda g: said(g[0], 100 * (total("redo_bytes_purge_coordinator") + total("redo_bytes_purge_workers"))
                        / (total("redo_bytes") or 1))
         and said(g[1], (total("redo_bytes_purge_coordinator") + total("redo_bytes_purge_workers")) / 2**20)
         and said(g[2], total("redo_bytes") / 2**20)
         and said(g[3], 100 * total("redo_bytes_purge_coordinator") / (total("redo_bytes") or 1))
         and said(g[4], 100 * total("redo_bytes_purge_workers") / (total("redo_bytes") or 1))),
        (rf"^The checkpoint age reached ({NUMBER}) MiB in the interval ending ({NUMBER}) s, ({NUMBER})% of the "
         rf"async flush point \(({NUMBER}) MiB\)(?:; it reached that point in intervals totalling ({NUMBER}) s)?"
         rf"(?:, the sync flush point \(({NUMBER}) MiB\) in ({NUMBER}) s)?:.*?(?: Dirty pages peaked at ({NUMBER})\.)?$",
         lambda g: checkpoint_holds(g, server_state(rec))),
        (rf"^The page cleaners' slowest batch took ({NUMBER}) s \(their batches wrote ({NUMBER}) pages in "
         rf"({NUMBER}) s in all\)",
         lambda g: said(g[0], total("flush_batch_max_ns") / 1e9)
         and said(g[1], total("flush_list_pages") + total("flush_lru_pages"))
         and said(g[2], (total("flush_list_batch_ns") + total("flush_lru_batch_ns")) / 1e9)),
        (rf"^Writers waited ({NUMBER}) s for the log to make room \(({NUMBER}) waits(?:: (.*))?\): [^;]*"
         rf"(?:; ({NUMBER}) s of it in ({NUMBER}) waits for the page cleaners [^,]*, ({NUMBER}) s writing the log)?",
         lambda g: said(g[0], total("log_room_wait_ns") / 1e9) and said(g[1], total("log_room_waits"))
         and roles_hold(g[2], rec.flush_waits, "log room")
         and (g[3] is None or (said(g[3], total("log_room_cleaner_wait_ns") / 1e9)
                               and said(g[4], total("log_room_cleaner_waits"))
                               and said(g[5], max(total("log_room_wait_ns") - total("log_room_cleaner_wait_ns"), 0)
                                        / 1e9)))),
        (rf"^Threads waited ({NUMBER}) s for a free page in the buffer pool \(({NUMBER}) waits(?:: (.*))?\): ",
         lambda g: said(g[0], total("free_page_wait_ns") / 1e9) and said(g[1], total("free_page_waits"))
         and roles_hold(g[2], rec.flush_waits, "free page")),
        *replica_check.finding_claims(rec, told),
    ]
    problems = []
    for finding in told["findings"]:
        matches = [(re.match(pattern, finding), holds) for pattern, holds in known]
        hit = next(((m, holds) for m, holds in matches if m), None)
        if hit is None:
            problems.append(f"finding the checker does not know: '{finding}'")
        elif not hit[1](hit[0].groups()):
            problems.append(f"finding '{finding}': its tables say otherwise")
    return problems


def block_estimate_holds(g: tuple, rec) -> bool:
    """The block-latch finding's estimate of the whole, said exactly where the latch group
    was sampled: its coverage, and the estimate (estimates.py) of the wait time and of the
    waits, no less than what was seen."""
    share = estimates.attached_share(rec, "block_lock_s")
    seconds = None if share is None else estimates.scaled_total(rec, ["block_wait_ns"], share)
    waits = None if share is None else estimates.scaled_total(rec, [f"block_waits_{m}" for m in ("s", "x", "sx")], share)
    if g[0] is None or seconds is None:
        return g[0] is None and seconds is None
    return (said(g[0], 100 * coverage(rec, "block_lock_s")) and said(g[1], seconds["estimated"] / 1e9)
            and g[2] == error_words(estimates.measured_error("block_lock_s", "total_wait_s"))
            and said(g[3], waits["estimated"]) and seconds["seen"] <= seconds["estimated"]
            and g[4] == error_words(estimates.measured_error("block_lock_s", "waits"))
            and waits["seen"] <= waits["estimated"])


def block_words_hold(g: tuple, hot, block_us: float, block_waits: int, write_us: float, named) -> bool:
    """The block-latch finding's second sentence: the share on pages being written when it
    is the larger part of the wait, else the hottest page's share (a hot spot) from
    HOT_SPOT_WAITS waits; neither when there was no such page."""
    hot_pct, hot_name, write_s, write_pct = g
    if block_us and write_us / block_us >= WRITE_BOUND_SHARE:
        return hot_pct is None and write_s is not None and said(write_s, write_us / 1e6) \
            and said(write_pct, 100 * write_us / block_us)
    if write_s is not None:
        return False
    if hot_pct is None:
        return hot is None or block_waits < HOT_SPOT_WAITS
    return hot is not None and said(hot_pct, 100 * hot.wait_us / (block_us or 1)) \
        and named(int(hot.space), int(hot.page_no), hot_name)


def roles_hold(text: str | None, waits: pd.DataFrame, kind: str) -> bool:
    """'user connection 3.1 s, master thread 0.2 s' against the flush_waits table's rows of
    that kind."""
    by_role = waits[waits["kind"] == kind].groupby("role")["wait_us"].sum() / 1e6
    said_roles = dict(part.rsplit(" ", 2)[:2] for part in (text or "").split(", ") if part)
    return (set(said_roles) == {r for r, s in by_role.items() if s > 0}
            and all(said(s, by_role[r]) for r, s in said_roles.items()))


def server_state(rec) -> pd.DataFrame:
    """The server's state at each snapshot (server.NAME counters), one column per name."""
    rows = rec.counters[rec.counters["name"].isin([n for n in rec.counters["name"].unique()
                                                    if str(n).startswith("server.")])]
    return rows.assign(name=rows["name"].astype(str).str[len("server."):]).pivot_table(
        index="t_s", columns="name", values="value", aggfunc="last")


def checkpoint_holds(g: tuple, state: pd.DataFrame) -> bool:
    """The checkpoint finding's figures, from the LSNs, the age's peaks and the points the
    server gave: the largest age and when, its share of the async point, the seconds of the
    intervals whose age reached each point, and the dirty pages' peak."""
    if not {"lsn", "checkpoint_lsn", "async_flush_age"} <= set(state.columns):
        return False
    age = state["lsn"] - state["checkpoint_lsn"]
    if "checkpoint_age_peak" in state:
        age = pd.concat([age, state["checkpoint_age_peak"]], axis=1).max(axis=1).where(age.notna())
    age = age.dropna()
    sync = state["sync_flush_age"] if "sync_flush_age" in state else state.get("max_checkpoint_age")
    lengths = pd.Series(state.index, index=state.index).diff()
    mib, async_point = 2**20, state["async_flush_age"].get(age.idxmax())  # the points when it peaked

    def seconds_reaching(limit) -> float:
        return float(lengths[(age >= limit.reindex(age.index)).reindex(lengths.index, fill_value=False)].sum())

    holds = (said(g[0], age.max() / mib) and said(g[1], age.idxmax()) and said(g[2], 100 * age.max() / async_point)
             and said(g[3], async_point / mib) and said(g[4] or "0", seconds_reaching(state["async_flush_age"])))
    if g[5] is not None:
        holds = holds and sync is not None and said(g[5], sync.get(age.idxmax()) / mib) and said(g[6], seconds_reaching(sync))
    elif sync is not None:
        holds = holds and seconds_reaching(sync) == 0
    if g[7] is not None:
        holds = holds and said(g[7], state["dirty_pages"].max())
    return holds
