"""Advice on a lagging replica, from its applier's phases (analysis/replica.py): the commit's
flush or parallel appliers where the applier waits for the redo log; the session in its way
where it waits on row locks, and then that the commit's flush would not help (seed 003)."""
from __future__ import annotations

from ..wording.numbers import duration
from .action import Action, Advice, Expect, NotHelping, said
from ..replica_time import SHOWN_SHARE
from .judge import applier_redo_ms_per_wait
from .server_settings import family_of, in_force, number


def bound_phases(summary: dict, verdict: str) -> list[dict]:
    return [p for p in ((summary.get("replica") or {}).get("phases") or []) if p["verdict"] == verdict]


def part_s(phases: list[dict], part: str) -> float:
    return sum(p["figures"]["split_s"][part] for p in phases)


def worst(phases: list[dict], part: str) -> tuple[float, float, dict]:
    """(the part's seconds, the seconds watched whole, all the phase's figures) in the phase
    where the part took most: the figures one phase's words print, which advice may quote."""
    figures = max(phases, key=lambda p: p["figures"]["split_s"][part])["figures"]
    return figures["split_s"][part], figures["watched_s"], figures


def lag_words(summary: dict) -> str:
    lag = (summary.get("replica") or {}).get("lag_s_max")
    return f", and the lag (up to {lag} s here) grows less" if lag else ""


def flush_less_at_commit(summary: dict, advice: Advice, meta: dict) -> None:
    redo = bound_phases(summary, "redo-bound")
    if not redo:
        return
    waited, watched, _ = worst(redo, "redo")
    settings = in_force(meta)
    flush = number(settings, "innodb_flush_log_at_trx_commit")
    workers_name = "slave_parallel_threads" if family_of(meta) == "mariadb" else "replica_parallel_workers"
    workers = number(settings, workers_name)
    if workers is None and family_of(meta) == "mysql":
        workers_name, workers = "slave_parallel_workers", number(settings, "slave_parallel_workers")
    evidence = [p["detail"] for p in redo] + said(summary, "The replica")
    # judged by the wait's mean, not its share of the applier's time: on a slow disk a commit
    # that no longer syncs still waits most on the log's write, its share 95-99% either way,
    # while each wait went from 8-10 ms to 1-3 ms (replica-redo.sh, docs/advice.md)
    per_wait = applier_redo_ms_per_wait(summary)
    expect = Expect("applier_redo_ms_per_wait", per_wait, "down") if per_wait is not None \
        else Expect("applier_redo_share", waited / watched if watched else 0.0, "down")
    # MariaDB 10.8+ writes the log with direct I/O where it can (innodb_log_file_buffering
    # OFF): a commit that no longer syncs still sleeps on that write, so buffering it is the
    # next step; but not one verify may take: MariaDB 11.4.5 did not take it back OFF online
    # (it read ON after SET GLOBAL ... = OFF), so it is named, not applied
    direct = settings.get("innodb_log_file_buffering") == "OFF"
    sql = "SET GLOBAL innodb_flush_log_at_trx_commit = 2"
    undo_sql = f"SET GLOBAL innodb_flush_log_at_trx_commit = {flush if flush is not None else 1}"
    if flush != 2:
        advice.actions.append(Action(
            key="flush_log_at_commit",
            change="Set innodb_flush_log_at_trx_commit = 2 on the replica" + (f" (it is {flush})" if flush is not None
                                                                              else "")
                   + ": each commit writes the redo log, and it is flushed to disk once a second"
                   + ("; if commits still wait on the log's direct writes, innodb_log_file_buffering = ON "
                      "too (the log written through the page cache), which may stay ON until a restart"
                      if direct else ""),
            evidence=evidence,
            expected=f"the applier's waits for the redo log at commit ({duration(waited)} of the "
                     f"{duration(watched)} watched whole) get shorter, each a write of the log without "
                     "its sync" + lag_words(summary),
            risk="an operating-system crash or a power loss loses up to a second of applied transactions: "
                 "the replica must then be rebuilt or re-pointed from its GTID position",
            undo=undo_sql, apply_sql=sql, undo_sql=undo_sql,
            gives_back_s=part_s(redo, "redo"), expect=expect))
    if workers == 0:
        advice.actions.append(Action(
            key="parallel_appliers",
            change=f"Apply in parallel: {workers_name} from 0 to 4, taking effect when the applier restarts "
                   "(STOP then START the replica's SQL thread)",
            evidence=evidence,
            expected=f"the applier's commits wait for the redo log side by side instead of one after another "
                     f"({duration(waited)} of waiting here)" + lag_words(summary),
            risk="transactions that touch the same rows then wait for one another; commit order is kept only "
                 "with the preserve-commit-order setting",
            undo=f"SET GLOBAL {workers_name} = 0, then restart the SQL thread",
            gives_back_s=part_s(redo, "redo") / 2, expect=expect))


def end_the_blocker(summary: dict, advice: Advice, meta: dict) -> None:
    locked = bound_phases(summary, "row-lock-bound")
    if not locked:
        return
    waited, watched, figures = worst(locked, "row_lock")
    # the phase's words name a part from a hundredth of the time watched: below, its figure
    # is one the report never printed (a replica's 10 ms of redo waits beside 6 s of row locks)
    redo = (f"for the redo log at commit {duration(figures['split_s']['redo'])}"
            if figures["shares"]["redo"] >= SHOWN_SHARE else "for the redo log at commit less than a hundredth of it")
    advice.actions.append(Action(
        key="end_replica_blocker",
        change="End the session on the replica that holds the rows its applier waits for, and run no locking "
               "reads or long transactions there (SELECT … FOR UPDATE, reports in one transaction); "
               "sys.innodb_lock_waits names it while it blocks",
        evidence=[p["detail"] for p in locked] + said(summary, "The replica"),
        expected=f"the applier's row-lock waits ({duration(waited)} of the {duration(watched)} watched whole) go"
                 + lag_words(summary),
        risk="the session's transaction is rolled back", undo="nothing to undo",
        gives_back_s=part_s(locked, "row_lock"), expect=Expect("applier_row_lock_s", part_s(locked, "row_lock"),
                                                                "zero")))
    advice.not_helping.append(NotHelping(
        change="Set innodb_flush_log_at_trx_commit = 2 or sync_binlog = 0 on the replica",
        why=f"the applier waited on row locks {duration(waited)} of the {duration(watched)} watched whole, and "
            f"{redo}: a cheaper commit does not release a row lock another session holds."))


def replica_advice(summary: dict, advice: Advice, meta: dict) -> None:
    end_the_blocker(summary, advice, meta)
    flush_less_at_commit(summary, advice, meta)
