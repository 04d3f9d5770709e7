"""Advice on purge, from the purge phases of the summary (analysis/phases.py): end the
transaction that pins the history; more purge threads where purge works flat out and falls
behind; a purge lag that bounds the history where DML outruns purge. And the common fix that
would not help: more purge threads while a read view pins the history (seed 000)."""
from __future__ import annotations

from ..wording.numbers import STATEMENT_SHOWN, count, growth, seconds, shorten
from .action import Action, Advice, Expect, NotHelping
from .server_settings import in_force, number, online

MAX_PURGE_THREADS = 32  # both families' ceiling
BUSY_PARTS = ("cpu", "io")  # a batch's time spent so is work more threads share out
# A history below this costs a read view a few undo pages: no setting is worth changing
# for it (the seeds speak of hundreds of thousands to millions).
HISTORY_WORTH = 10_000


def phases_of(summary: dict, verdict: str) -> list[dict]:
    return [p for p in (summary.get("purge") or {}).get("phases") or [] if p["verdict"] == verdict]


def span_words(phases: list[dict]) -> str:
    return ", ".join(f"{p['from_s']:.1f}–{p['to_s']:.1f} s" for p in phases)


def pinning_view(summary: dict) -> dict | None:
    views = (summary.get("purge") or {}).get("pinned_by") or []
    return views[0] if views else None


def who(view: dict) -> str:
    """'connection 9 (user app, running "select …", read view open 19.0 s)' as far as known."""
    parts = [f"user {view['user']}"] if view.get("user") else []
    if view.get("statement"):
        parts.append(f"running \"{shorten(view['statement'], STATEMENT_SHOWN)}\"")
    if view.get("age_s") is not None:
        parts.append(f"read view open {seconds(view['age_s'])}")
    name = f"connection {view['connection_id']}" if view.get("connection_id") is not None \
        else f"the connection on OS thread {view['tid']}"
    return name + (f" ({', '.join(parts)})" if parts else "")


def end_the_pin(summary: dict, advice: Advice, meta: dict) -> None:
    pinned = [p for p in phases_of(summary, "pinned") if (p["figures"].get("held") or {}).get("by_view")]
    view = pinning_view(summary)
    if not pinned or view is None:
        return
    rises = [p["figures"]["pinned_history"] for p in pinned if p["figures"].get("pinned_history")]
    held = max((p["figures"]["held"] for p in pinned), key=lambda h: h["pinned"])
    expected = f"purge may remove the {count(held['pinned'])} transactions of history the view held"
    if rises:
        fastest = max(rises, key=lambda r: r["per_s"])
        expected = f"the history stops growing at {growth(fastest['per_s'])} while the view is open, and " + expected
    kill = f"KILL {view['connection_id']}" if view.get("connection_id") is not None else None
    advice.actions.append(Action(
        key="end_pinning_transaction",
        change=f"End the transaction of {who(view)}, or keep such transactions short (commit consistent "
               "reads, reports and dumps sooner; close transactions a pool leaves open)",
        evidence=[p["detail"] for p in pinned], expected=expected,
        risk="killing the connection rolls its transaction back (as long as it ran, for one that wrote) "
             "and its client sees the connection lost",
        undo="nothing to undo: the client reconnects", apply_sql=kill,
        gives_back_s=sum(p["figures"]["seconds"] for p in pinned),
        expect=Expect("pinned_s", sum(p["figures"]["seconds"] for p in pinned), "down")))
    settings = in_force(meta)
    threads, batch = number(settings, "innodb_purge_threads"), number(settings, "innodb_purge_batch_size")
    idle = [p for p in pinned if p["figures"]["all_empty_intervals"]]
    if idle:
        told = "; ".join(f"in {p['figures']['all_empty_intervals']} of the {p['figures']['intervals']} intervals "
                         f"of {p['from_s']:.1f}–{p['to_s']:.1f} s every purge batch found nothing to purge"
                         for p in idle)
        now = ", ".join(f"{n} {v} now" for n, v in (("innodb_purge_threads", threads),
                                                      ("innodb_purge_batch_size", batch)) if v is not None)
        advice.not_helping.append(NotHelping(
            change="Raise innodb_purge_threads or innodb_purge_batch_size" + (f" ({now})" if now else ""),
            why=f"no purge setting helps while {who(view)} holds its view: {told}; "
                f"at {held['at_s']:.1f} s it held {count(held['pinned'])} of {count(held['history'])} "
                "transactions of history. More threads would find nothing to purge too."))


def more_purge_threads(summary: dict, advice: Advice, meta: dict) -> None:
    behind = [p for p in phases_of(summary, "falling_behind") + phases_of(summary, "throttled")
              if (p["figures"].get("bound") or {}).get("part") in BUSY_PARTS and p["figures"].get("history")
              and p["figures"]["history"]["to"] >= HISTORY_WORTH]
    threads = number(in_force(meta), "innodb_purge_threads")
    if not behind or (threads is not None and threads >= MAX_PURGE_THREADS):
        return
    to = min(MAX_PURGE_THREADS, 2 * threads) if threads else None
    fastest = max((p["figures"]["history"] for p in behind), key=lambda h: h["per_s"])
    delayed_s = sum(p["figures"]["dml_delay_us"] for p in behind) / 1e6
    change = (f"Raise innodb_purge_threads from {threads} to {to}" if to
              else "Raise innodb_purge_threads (its value was not read: the recording had no SQL access)")
    dynamic = to is not None and online("innodb_purge_threads", meta)
    advice.actions.append(Action(
        key="purge_threads", change=change + ("" if dynamic or to is None else " (at the next restart: "
                                              "this server reads it at start only)"),
        evidence=[p["detail"] for p in behind],
        expected=f"the history grows slower than {growth(fastest['per_s'])} in "
                 f"{span_words(behind)}" + (f", and DML is delayed less than {seconds(delayed_s)}"
                                            if delayed_s else ""),
        risk="purge threads take CPU and I/O from the queries; on a saturated machine they slow them",
        undo=f"SET GLOBAL innodb_purge_threads = {threads}" if dynamic else "set it back at the next restart",
        apply_sql=f"SET GLOBAL innodb_purge_threads = {to}" if dynamic else None,
        undo_sql=f"SET GLOBAL innodb_purge_threads = {threads}" if dynamic else None,
        gives_back_s=sum(p["figures"]["seconds"] for p in behind) + delayed_s,
        # the rise, not the recording's net growth: a load that lets purge catch up at its end
        # (runs starting alike) nets near 0 whatever the threads
        expect=Expect("history_rise_per_s", fastest["per_s"], "down")))


def bound_the_history(summary: dict, advice: Advice, meta: dict) -> None:
    """innodb_max_purge_lag, where the history rose under DML with no limit set: a safeguard
    that trades DML speed for a bounded history; it gives no time back, so it ranks last."""
    behind = [p for p in phases_of(summary, "falling_behind")
              if p["figures"].get("history") and p["figures"]["history"]["to"] >= HISTORY_WORTH]
    lag = number(in_force(meta), "innodb_max_purge_lag")
    if not behind or lag != 0:
        return
    top = max(p["figures"]["history"]["to"] for p in behind)
    advice.actions.append(Action(
        key="max_purge_lag",
        change=f"Set innodb_max_purge_lag to about {count(top)} (the history's top here) with "
               "innodb_max_purge_lag_delay at a few thousand µs, so that DML waits while purge catches up",
        evidence=[p["detail"] for p in behind],
        expected=f"the history stays near {count(top)} instead of rising; each DML statement is delayed "
                 "while it is above it",
        risk="every INSERT, UPDATE and DELETE is slowed while the history is over the limit",
        undo="SET GLOBAL innodb_max_purge_lag = 0", apply_sql=f"SET GLOBAL innodb_max_purge_lag = {top}",
        undo_sql="SET GLOBAL innodb_max_purge_lag = 0", gives_back_s=0.0,
        expect=Expect("history_max", top, "down")))


def purge_advice(summary: dict, advice: Advice, meta: dict) -> None:
    end_the_pin(summary, advice, meta)
    more_purge_threads(summary, advice, meta)
    bound_the_history(summary, advice, meta)
