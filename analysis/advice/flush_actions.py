"""Advice on the redo log and the page cleaners, from the summary's flushing figures
(analysis/redo.py): a larger redo log where writers waited for room in it; more page-cleaner
I/O where threads waited for a free page."""
from __future__ import annotations

from .action import Action, Advice, Expect, said
from .server_settings import family_of, in_force, number, online

MIB = 2**20
MAX_LOG = 128 << 30  # MySQL's largest innodb_redo_log_capacity (MariaDB's log goes to 512 GiB)
WAITED_S = 0.1  # the wait a finding says (wording/findings.py's STALL_SAID_S): less is no advice


def redo_capacity(meta: dict) -> tuple[str, int | None]:
    """The setting that sizes the redo log here, and its value in bytes (None: not read)."""
    settings = in_force(meta)
    if family_of(meta) == "mysql" and "innodb_redo_log_capacity" in settings:
        return "innodb_redo_log_capacity", number(settings, "innodb_redo_log_capacity")
    size, files = number(settings, "innodb_log_file_size"), number(settings, "innodb_log_files_in_group") or 1
    return "innodb_log_file_size", size if family_of(meta) == "mariadb" or size is None else size * files


def held_back(summary: dict, now: int) -> tuple[int, str] | None:
    """The size at which the sync flush point lies past the age this load would have reached,
    had its writers not been stopped: the age they were stopped at, plus the redo they write
    at their peak rate over the time the age sat at that point (an upper bound: the page
    cleaners free some room meanwhile). The point is the same share of the size in a larger
    log. Rounded up to a power of two MiB, with why; None where the recording did not read
    the age or its points."""
    checkpoint, redo = summary.get("checkpoint") or {}, summary.get("redo") or {}
    sync, age = checkpoint.get("sync_flush_age"), checkpoint.get("age_max_bytes")
    sync_s, peak = checkpoint.get("sync_s"), redo.get("peak_per_s")
    if not sync or age is None or not sync_s or not peak:
        return None
    wanted = (age + peak * sync_s) * now / sync
    size = min(MIB << max(int(wanted - 1).bit_length() - 20, 0), MAX_LOG)
    return size, (f"the age writers were stopped at, {age / MIB:.1f} MiB, and {peak / MIB:.1f} MiB/s of redo "
                  f"(the peak) over the {sync_s:.1f} s it sat at the sync flush point")


def larger_redo_log(summary: dict, advice: Advice, meta: dict) -> None:
    room = (summary.get("flushing") or {}).get("log_room") or {}
    if room.get("wait_s", 0) < WAITED_S:
        return
    name, now = redo_capacity(meta)
    dynamic = now is not None and online(name, meta)
    sized = held_back(summary, now) if now else None
    to = 2 * now if now else None
    if sized and sized[0] > to:  # the stall held back more redo than twice the log holds
        to = sized[0]
        change = f"Enlarge the redo log: {name} from {now // MIB:,} MiB to {to // MIB:,} MiB, room for {sized[1]}"
        room_for = "its sync flush point lies past the age this load would reach"
    elif now:
        change = f"Double the redo log: {name} from {now // MIB:,} MiB to {to // MIB:,} MiB"
        room_for = "the checkpoint age has twice the room before InnoDB stops them"
    else:
        change = f"Enlarge the redo log ({name}; its size was not read: the recording had no SQL access)"
        room_for = "the checkpoint age has more room before InnoDB stops them"
    advice.actions.append(Action(
        key="redo_log_size",
        change=change + ("" if dynamic or now is None else " (at the next restart: this server sizes it at start only)"),
        evidence=said(summary, "Writers waited") + said(summary, "The checkpoint age reached"),
        expected=f"writers' {room['waits']:,} waits for room in the log ({room['wait_s']:.1f} s) fall to near none: "
                 + room_for,
        risk="a longer crash recovery (more redo to apply) and the disk space of the larger log",
        undo=f"SET GLOBAL {name} = {now}" if dynamic else "set it back at the next restart",
        apply_sql=f"SET GLOBAL {name} = {to}" if dynamic else None,
        undo_sql=f"SET GLOBAL {name} = {now}" if dynamic else None,
        gives_back_s=room["wait_s"], expect=Expect("log_room_wait_s", room["wait_s"], "zero")))


def more_cleaner_io(summary: dict, advice: Advice, meta: dict) -> None:
    free = (summary.get("flushing") or {}).get("free_page") or {}
    if free.get("wait_s", 0) < WAITED_S:
        return
    settings = in_force(meta)
    capacity, ceiling = number(settings, "innodb_io_capacity"), number(settings, "innodb_io_capacity_max")
    to = 2 * capacity if capacity else None
    change = (f"Raise innodb_io_capacity from {capacity:,} to {to:,}" if to
              else "Raise innodb_io_capacity (its value was not read: the recording had no SQL access)")
    if to and ceiling is not None and to > ceiling:
        change += f" and innodb_io_capacity_max from {ceiling:,} to {to:,}"
    advice.actions.append(Action(
        key="io_capacity",
        change=change + ", so the page cleaners keep clean pages at the LRU list's tail; or a larger buffer pool",
        evidence=said(summary, "Threads waited", "for a free page"),
        expected=f"the {free['waits']:,} waits for a free page ({free['wait_s']:.1f} s) fall to near none",
        risk="more background writes: on a disk already saturated they slow reads",
        undo=f"SET GLOBAL innodb_io_capacity = {capacity}" if to else "set it back",
        apply_sql=f"SET GLOBAL innodb_io_capacity = {to}" if to and (ceiling is None or to <= ceiling) else None,
        undo_sql=f"SET GLOBAL innodb_io_capacity = {capacity}" if to else None,
        gives_back_s=free["wait_s"], expect=Expect("free_page_wait_s", free["wait_s"], "zero")))


def flush_advice(summary: dict, advice: Advice, meta: dict) -> None:
    larger_redo_log(summary, advice, meta)
    more_cleaner_io(summary, advice, meta)
