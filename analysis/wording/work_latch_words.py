"""The latches purge's work or the replica's applier waited on, in words (analysis/
work_latch_figures.py gives the figures): a section's lines, and the clause a finding adds."""
from __future__ import annotations

from .numbers import count

NAME_COLUMN = 40


def ms(x: float) -> str:
    return f"{x:,.1f} ms"


def thread_words(h: dict) -> str:
    """A holder as "buf_dump (buffer pool dump)", its role left out where its name says it."""
    role = f" ({h['role']})" if h["role"] and h["role"] != h["thread"] else ""
    return f"{h['thread']}{role}"


def holder_words(h: dict) -> str:
    """"buf_dump (buffer pool dump) 700.0 ms"."""
    return f"{thread_words(h)} {ms(h['wait_ms'])}"


def work_latch_lines(latches: dict, inside: str) -> list[str]:
    """'  latches waited on inside its events: 1,234.5 ms in 5,120 waits' and one line per
    latch, heaviest first, with the threads that released it to its waiters (anyone's)."""
    if not latches["waits"]:
        return []
    lines = [f"  latches waited on inside {inside}: {ms(latches['wait_ms'])} in {count(latches['waits'])} waits"
             " (released most by: the threads whose release woke any of its waiters)"]
    for latch in latches["latches"]:
        by = ", ".join(holder_words(h) for h in latch["holders"]) or "not seen"
        lines.append(f"    {latch['name'][:NAME_COLUMN]:<{NAME_COLUMN}} {latch['kind']:<8} {ms(latch['wait_ms']):>12}"
                     f" {count(latch['waits']):>8} waits  released most by {by}")
    return lines


def heaviest_latch_words(latches: dict) -> str:
    """' The latch it waited on longest: buf_pool.mutex (900.0 ms of the 1,234.5 ms it waited
    on latches, released most by buf_dump (buffer pool dump)).' or '' where no latch was
    seen under that work."""
    if not latches["latches"]:
        return ""
    top = latches["latches"][0]
    by = f", released most by {thread_words(top['holders'][0])}" if top["holders"] else ""
    return (f" The latch it waited on longest: {top['name']} ({ms(top['wait_ms'])} of the {ms(latches['wait_ms'])} "
            f"it waited on latches{by}).")
