"""The governor's figures in words for make bench, and what each probe the governor never
samples (the catalog's group "") cost in one recording, against its budget. Issue 44 found
free_page_wait, then a uprobe on libc's pthread_cond_timedwait that every timed wait of the
server entered, spending most of the default 1% outside any sampled group and starving the
groups that are sampled: no such probe should take more than a tenth of the budget.

A probe's share is its hits a second times what a hit costs (the calibrated entry, counted
over as the governor counts it: hit_cost_ns.indirect_factor), over the budget a second. The
recording keeps its programs' run times per group, not per probe, and a return costs about
as much as an entry: the share is the traps', a floor of the whole."""
from __future__ import annotations

import json
from functools import cache

from innostall.collector.discovery import discover

LIMIT = 0.10  # of the budget, for any one probe outside the sampled groups


@cache
def never_sampled() -> frozenset[str]:
    return frozenset(name for name, entry in discover.catalog().items() if entry.get("group", name) == "")


def shares(governor: dict) -> dict[str, float]:
    """Probe -> its traps' share of the budget, for the never-sampled probes hit in a budgeted
    recording (the `governor` of `innostall report --json`); {} without a budget (--exact)."""
    hit, budget = governor.get("hit_cost_ns") or {}, governor.get("budget_ms_per_s")
    if not hit.get("entry") or not budget:
        return {}
    hit_ms = hit["entry"] * hit.get("indirect_factor", 1) / 1e6
    return {probe: rate * hit_ms / budget for probe, rate in (governor.get("hits_per_s") or {}).items()
            if probe in never_sampled() and rate}


def over_limit(governor: dict) -> dict[str, float]:
    return {probe: share for probe, share in shares(governor).items() if share > LIMIT}


def named(governor: dict) -> str:
    """'free_page_wait 62%, ...': the probes over the limit, the costliest first."""
    return ", ".join(f"{p} {100 * s:.0f}%" for p, s in sorted(over_limit(governor).items(), key=lambda i: -i[1]))


def text(governor: dict) -> str:
    """'; outside the sampled groups over 10% of the budget: free_page_wait 62%', or ''."""
    return f"; outside the sampled groups over 10% of the budget: {named(governor)}" if over_limit(governor) else ""


def bench_recordings(results: dict) -> list[dict]:
    """Every budgeted recording of a run: steady windows, worst-case scans, stall recordings."""
    entries = (results.get("steady", {}).get("windows", []) + results.get("worst", {}).get("scans", [])
               + results.get("stall", {}).get("recordings", []))
    return [w for w in entries if isinstance(w.get("tracer", {}).get("governor"), dict)
            and w["tracer"]["governor"].get("budget_ms")]


def budget_lines(entries: list[dict]) -> list[str]:
    """Issue 44's item 4, for each budgeted recording: its estimate against its budget, and
    every probe outside the sampled groups over a tenth of the budget (or none)."""
    lines = []
    for w in entries:
        gov = w["tracer"]["governor"]
        share = gov["overhead_ms"] / gov["budget_ms"]
        over = named(gov) or "none"
        emulated = f" [traps x{w['hit_cost_scale']:g}, emulated]" if w.get("hit_cost_scale", 1) != 1 else ""
        lines.append(f"{w['phase']} round {w['round']} {w['arm']}: estimate {gov['overhead_ms']:.1f} ms of "
                     f"{gov['budget_ms']:.1f} ms ({share:.2f} of the budget, {'OVER' if share > 1 else 'within'}); "
                     f"outside the sampled groups over 10%: {over}{emulated}")
    return lines or ["no budgeted recording"]


def recording_lines(results: dict) -> list[str]:
    """One line per bench recording (steady windows, worst-case scans) with a never-sampled
    probe over the limit; a line saying there were none otherwise."""
    budgeted = bench_recordings(results)
    lines = [f"{w['phase']} round {w['round']} {w['arm']}: {named(w['tracer']['governor'])}"
             for w in budgeted if over_limit(w["tracer"]["governor"])]
    return lines or [f"none in {len(budgeted)} recordings"]


def governor_text(governor) -> str:
    """Its top-level figures, and the coverage of each probe group that has one."""
    if not isinstance(governor, dict):
        return json.dumps(governor)
    plain = {k: v for k, v in governor.items() if not isinstance(v, dict)}
    groups = governor.get("groups", {})
    coverage = {name: g["coverage"] for name, g in groups.items()
                if isinstance(g, dict) and "coverage" in g}
    return json.dumps(plain) + (f"; coverage {json.dumps(coverage)}" if coverage else "") + text(governor)
