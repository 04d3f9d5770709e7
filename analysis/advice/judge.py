"""Whether a change had the effect expected, from the recordings of verify's runs: a figure of
each run's summary, the runs as they were (at least two: their spread is the noise), and the
run with the change. A change is confirmed only where the figure moved the expected way by
more than both the noise and MIN_EFFECT of its level, or, for a figure expected to fall to
near none, where it fell below NEAR_ZERO of every run without the change."""
from __future__ import annotations

from statistics import mean

MIN_EFFECT = 0.10  # of the baseline's level: less is no effect on a noisy machine
NEAR_ZERO = 0.10  # 'falls to near none': at most this share of the baseline's level


def hot_block_wait_s(summary: dict) -> float:
    blocks = [t["wait_ms"] for t in (summary.get("latches") or {}).get("top") or [] if t.get("kind") == "block"]
    return max(blocks, default=0.0) / 1e3


def replica_part_s(part: str):
    return lambda s: ((s.get("replica") or {}).get("applier") or {}).get("split_ms", {}).get(part, 0.0) / 1e3


def pinned_s(summary: dict) -> float:
    """The recording's time in purge phases a read view pinned: the figure ending the pin moves
    whatever the load's rate (the history's level moves with it)."""
    return sum(p["to_s"] - p["from_s"] for p in summary["purge"].get("phases") or [] if p["verdict"] == "pinned")


def applier_share(part: str):
    """A part's share of the applier's time watched whole: unlike its seconds, the same
    whatever share of the run the governor attached the applier's probes."""
    def share(summary: dict):
        split = ((summary.get("replica") or {}).get("applier") or {}).get("split_ms") or {}
        whole = sum(v or 0.0 for v in split.values())  # None: no event was split
        return (split.get(part) or 0.0) / whole if whole else None
    return share


def applier_redo_ms_per_wait(summary: dict) -> float | None:
    """The applier's wait for the redo log at commit, its mean in ms over the waits watched
    whole: what the commit's flush changes. Less bound to the share of the run the governor
    attached the applier's probes than its seconds, or a mean per event (the windows miss the
    long events more, cut at their edges: on replica-redo.sh's replica, 3.0 ms an event
    watched whole, 1.6 ms in a run attached 67%); but noisy between runs alike where a wait
    lasts 0.1 or 100 ms, as on a throttled disk (docs/advice.md). Unlike the redo wait's share
    of the applier's time, it falls where a commit's wait shrinks but stays its largest part
    (a log write without its sync, on a slow disk)."""
    applier = (summary.get("replica") or {}).get("applier") or {}
    waits, redo = applier.get("redo_waits"), (applier.get("split_ms") or {}).get("redo")
    return redo / waits if waits and redo is not None else None


def history_rise_per_s(summary: dict) -> float | None:
    """How fast the history rose while purge worked behind the load: from its reading at the
    first phase that was not idle to its highest phase end, per second; 0 where it never rose.
    Not the recording's first-to-last growth: a load that waits at its end for purge to
    catch up (so that the next run starts alike) ends every run near 0."""
    busy = [p["figures"]["history"] for p in summary["purge"].get("phases") or []
            if p["verdict"] not in ("idle", "not_recorded") and p["figures"].get("history")]
    if not busy:
        return None
    start, top = busy[0], max(busy, key=lambda h: h["to"])
    span = top["to_s"] - start["from_s"]
    return max(0.0, (top["to"] - start["from"]) / span) if span > 0 else 0.0


FIGURES = {
    "pinned_s": pinned_s,
    "history_max": lambda s: (s["purge"].get("history") or {}).get("max"),
    "history_growth_per_s": lambda s: (s["purge"].get("history") or {}).get("growth_per_s"),
    "history_rise_per_s": history_rise_per_s,
    "log_room_wait_s": lambda s: ((s.get("flushing") or {}).get("log_room") or {}).get("wait_s", 0.0),
    "free_page_wait_s": lambda s: ((s.get("flushing") or {}).get("free_page") or {}).get("wait_s", 0.0),
    "applier_redo_s": replica_part_s("redo"),
    "applier_row_lock_s": replica_part_s("row_lock"),
    "applier_redo_share": applier_share("redo"),
    "applier_redo_ms_per_wait": applier_redo_ms_per_wait,
    "lag_s_max": lambda s: (s.get("replica") or {}).get("lag_s_max"),
    "hot_block_wait_s": hot_block_wait_s,
    "purge_batch_p99_us": lambda s: (s["purge"].get("latency_us") or {}).get("p99"),
}


def figure_of(summary: dict, name: str) -> float | None:
    value = FIGURES[name](summary)
    return None if value is None else float(value)


def gone_from_every_run(baselines: list[float], changed: float) -> bool:
    """A wait expected to go ("zero") went where each run without the change had it, and
    NEAR_ZERO of the least of them is still more than the run with it. Their spread is not
    the noise here: a stall's length varies widely between runs alike (5 and 44 s of log
    waits, redo-room.sh), while what the change removes is the stall itself, which every run
    without it showed."""
    return min(baselines) > 0 and changed <= NEAR_ZERO * min(baselines)


def judge(name: str, towards: str, baselines: list[float | None], changed: float | None) -> dict:
    """{verdict: confirmed | not confirmed | unknown, words, baseline, changed, noise_pct}."""
    known = [b for b in baselines if b is not None]
    if len(known) < 2 or changed is None:
        return {"verdict": "unknown", "words": f"unknown: {name} was not measured in every run",
                "baseline": known, "changed": changed, "noise_pct": None}
    level = mean(known)
    noise = max(known) - min(known)
    noise_pct = 100 * noise / abs(level) if level else 0.0
    moved = changed - level
    needed = max(noise, MIN_EFFECT * abs(level))
    right_way = moved < -needed and (towards != "zero" or changed <= NEAR_ZERO * level)
    gone = towards == "zero" and gone_from_every_run(known, changed)
    shown = f"{name} {level:,.1f} → {changed:,.1f}" + (f" ({100 * moved / level:+.0f}%)" if level else "")
    if right_way:
        words = f"confirmed: {shown}; the runs without the change differ by {noise_pct:.0f}%"
    elif gone:
        words = (f"confirmed: {shown}; every run without the change had {1 / NEAR_ZERO:.0f} times as much or more "
                 f"({', '.join(f'{b:,.1f}' for b in known)})")
    elif abs(moved) <= needed:
        words = (f"not confirmed: {shown}, unchanged within the {max(noise_pct, 100 * MIN_EFFECT):.0f}% "
                 "the runs without the change differ by (or the least effect counted)")
    else:
        words = f"not confirmed: {shown}, not the way expected ({towards})"
    return {"verdict": "confirmed" if right_way or gone else "not confirmed", "words": words, "baseline": known,
            "changed": changed, "noise_pct": round(noise_pct, 1)}
