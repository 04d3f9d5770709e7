"""Advice on a hot page: where one buffer block's latch takes most of the latch waits, the
rows on it are updated by many sessions at once. No setting changes that; the application
does (fewer writers on the same rows, batched updates, another key), so the advice names the
table, the index and the page, and applies nothing itself."""
from __future__ import annotations

from ..wording.numbers import duration
from .action import Action, Advice, Expect, said

HOT_SHARE = 0.5  # of all latch waiting on one block: a hot spot, not a busy pool
WAITED_S = 0.1


def hot_block(summary: dict) -> dict | None:
    latches = summary.get("latches") or {}
    top, total_ms = latches.get("top") or [], latches.get("wait_ms") or 0
    blocks = [t for t in top if t.get("kind") == "block"]
    if not blocks or not total_ms:
        return None
    hottest = max(blocks, key=lambda t: t["wait_ms"])
    if hottest["wait_ms"] < HOT_SHARE * total_ms or hottest["wait_ms"] / 1e3 < WAITED_S:
        return None
    return hottest


def spread_hot_rows(summary: dict, advice: Advice, meta: dict) -> None:
    block = hot_block(summary)
    if block is None:
        return
    waited = block["wait_ms"] / 1e3
    evidence = said(summary, "Threads waited", "buffer-block latches")
    if not evidence:  # the report did not say it (a short stall): neither does the advice
        return
    advice.actions.append(Action(
        key="hot_rows",
        change=f"Spread the writes to the rows on {block['name']}: fewer sessions updating the same rows at "
               "once (queue or batch them in the application), or a key that spreads new rows over the index",
        evidence=evidence,
        expected=f"the {block['waits']:,} waits on its latch ({duration(waited)} watched) fall",
        risk="an application change: test it under the same load", undo="revert the application change",
        gives_back_s=waited, expect=Expect("hot_block_wait_s", waited, "down")))


def latch_advice(summary: dict, advice: Advice, meta: dict) -> None:
    spread_hot_rows(summary, advice, meta)
