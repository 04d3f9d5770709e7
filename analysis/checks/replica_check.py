"""The checker of the replica section (verdict_check.check runs it): whether what the report
says of a replica's applier holds against the counters it comes from.

- the section stands exactly where the applier_event probe was attached and the appliers
  applied events, and its summary's figures are the counters' totals;
- the phases tile the recording, and each verdict has a reason in its own intervals (a
  bound phase's part names its split (replica_time.named_part's rule), an idle one has an
  interval without applier time ...);
- each phase's figures and each claim of its sentence, re-derived from the counters of the
  phase's own intervals, and no number left over that no claim accounts for; every part of
  a hundredth of the watched time or more named, saturation said where the appliers were
  busy that much, the sampling said where the probes were detached;
- the findings' figures: the lag's rise and the phases in it (replica_lag_check.py), and a
  finding wherever the lag rose or one waiting part took its share;
- no cause named for a phase its probes were attached less than half of;
- the text carrying each phase's line as JSON words it.
It sums the counters on its own rather than calling the section's code, so a rule or a
sentence drifting from the counters is caught, not repeated. Numbers are read back with
verdict_check's `said`, at the precision they were printed at."""
from __future__ import annotations

import re

import pandas as pd

from innostall.format.writer_tables import APPLIER_ROLE

from . import check_numbers as vc
from ..applier_counts import applier_deltas, applier_totals
from ..cost import coverage
from ..interval_columns import WATCHED_ENOUGH, watched_enough
from ..replica_time import (BOUND, CAUSE_SHARE, DOING, FINDING_SHARE, MEASURED, PARTS, QUIET_SHARE, SATURATED,
                           SHOWN_SHARE, UNSPLIT, UNWATCHED, VERDICTS, WAITS, WATCHED_WHOLE,
                           seen_throughout)
from ..wording.phase_list import shown_phases
from .replica_lag_check import lag_finding_holds, own_rise
from .replica_lag_check import span_list as replica_lag_spans
from ..sampling import EXACT

DURATION = r"({N}) (s|ms|µs)"
UNITS = {"s": 1.0, "ms": 1e3, "µs": 1e6}
DOING_WORDS = "|".join(re.escape(words) for words in DOING.values())
PART_OF = {words: part for part, words in DOING.items()}
MARGIN = 1e-4  # of a share: the words go by figures kept to six places, the checker by the counters


def lasted(number: str, unit: str, real_s: float) -> bool:
    """A duration as printed ('900 ms') is the true one, in seconds, to its precision."""
    return vc.said(number, real_s * UNITS[unit])


# --- the counters, summed on their own -------------------------------------------------

def attached_name(rec) -> str | None:
    """The cost governor's account of the applier's group, where it sampled it."""
    for attachment in rec.meta.get("governor", {}).get("attachments", []):
        if "applier_event" in attachment["probes"]:
            name = f"governor.attached_ns.{attachment['group']}"
            return name if (rec.counters["name"] == name).any() else None
    return None


def counts(rec) -> pd.DataFrame:
    """The applier's counters' deltas by interval end (t_s), each interval of the recording,
    with the events in progress at each snapshot (applier_counts.applier_deltas: the
    measurement's own definition, which the words must follow)."""
    table = applier_deltas(rec)
    sampled = attached_name(rec)
    if sampled:
        rows = rec.counters[rec.counters["name"] == sampled]
        table[sampled] = rows.groupby("t_s")["value"].sum().reindex(table.index, fill_value=0)
        lengths = pd.Series(table.index, index=table.index).diff().fillna(table.index[0])
        attached = (table[sampled] / 1e9 / lengths).clip(upper=1.0)
    else:
        attached = pd.Series(1.0, index=table.index)
    table["seen"] = seen_throughout(attached)
    return table


def applier_threads(rec) -> int:
    """The applier threads a phase's busy share is told against: the appliers table's
    replication appliers (all its rows where none is named so), at least one."""
    appliers = getattr(rec, "appliers", None)
    if appliers is None or not len(appliers):
        return 1
    return max(1, int((appliers["role"] == APPLIER_ROLE).sum()) or len(appliers))


def heaviest(by_name: pd.Series, name: str) -> bool:
    """Whether the latch named so waited the most of these (by_name: time by latch name)."""
    return name in by_name.index and by_name[name] >= by_name.max() * (1 - MARGIN)


def truth(table: pd.DataFrame, from_s: float, to_s: float, threads: int, sampled: str | None,
          work: pd.DataFrame) -> dict:
    """What a span's figures must be, from its intervals' counters; latch_s, the applier's
    latch waits by latch name in them (work: its work_latches rows)."""
    within = vc.inside(table.index, from_s, to_s)
    rows = table[within]
    if len(rows):  # the snapshots' own times: the phase's from_s and to_s are rounded to the ms
        before = table.index[:within.argmax()]
        from_s, to_s = (float(before[-1]) if len(before) else 0.0), float(rows.index[-1])
    seconds = to_s - from_s
    parts = {part: float(rows[name].sum()) / 1e9 for part, name in MEASURED.items()}
    split_s = rows["applier_split_ns"].sum() / 1e9
    parts["other"] = max(0.0, split_s - sum(parts.values()))
    watched, busy = sum(parts.values()), rows["applier_ns"].sum() / 1e9
    lengths = pd.Series(rows.index, index=rows.index).diff()
    if len(rows):
        lengths.iloc[0] = rows.index[0] - from_s
    attached = (rows[sampled] / 1e9 / lengths).clip(upper=1.0) if sampled else pd.Series(1.0, index=rows.index)
    return {"seconds": seconds, "intervals": len(rows), "threads": threads,
            "events": int(rows["applier_events"].sum()), "events_per_s": rows["applier_events"].sum() / seconds,
            "busy_s": busy, "capacity_s": seconds * threads, "busy_share": busy / (seconds * threads),
            "watched_s": watched, "split_s": parts if watched else None,
            "shares": {p: s / watched for p, s in parts.items()} if watched else None,
            "attached_share": float((attached * lengths).sum() / seconds) if sampled else None,
            "idle_rows": [bool(b == 0) for b in rows["applier_ns"]], "attached_rows": list(rows["seen"]),
            "spread": list((rows["applier_split_ns"] > 0)[rows["applier_ns"] > 0]),
            "latch_s": work[(work["t_s"] > from_s + 1e-6) & (work["t_s"] <= to_s + 1e-6)]
            .groupby("name", observed=True)["wait_us"].sum() / 1e6}


# --- the section -----------------------------------------------------------------------

def problems(rec, told: dict, text: str) -> list[str]:
    """Every contradiction between the replica section (JSON and text) and the counters."""
    replica = told.get("replica")
    totals, attached = applier_totals(rec), rec.probe_attached("applier_event")
    events, busy = totals["applier_events"], totals["applier_ns"]
    if replica is None:
        return [f"the appliers applied {events} events, yet the report says nothing of the replica"] \
            if attached and (events or busy) else []
    if not attached or not (events or busy):
        return ["a replica section, yet its probe (applier_event) was not attached or no event was applied"]
    table, sampled = counts(rec), attached_name(rec)
    threads, work = applier_threads(rec), rec.work_latches[rec.work_latches["owner"] == APPLIER_ROLE]
    # the waits charged whole, whose probes were attached throughout: told even unwatched
    whole = {part for part, probe in (("row_lock", "row_lock_wait"), ("commit_order", "commit_order_wait"))
             if rec.probe_attached(probe) and coverage(rec, probe) >= EXACT}
    found = summary_problems(replica["applier"], rec) + tiling(replica["phases"], table)
    for p in replica["phases"]:
        real = {**truth(table, p["from_s"], p["to_s"], threads, sampled, work), "whole_parts": whole}
        found += [f"replica phase {p['from_s']}–{p['to_s']} s ({p['verdict']}): {x}"
                  for x in figure_problems(p["figures"], real) + reason_problems(p["verdict"], real)
                  + sentence_problems(p, real)]
    lines = text.splitlines()
    return found + [f"the text report lacks the replica phase at {p['from_s']} s as JSON words it"
                    for p in shown_phases(replica["phases"]) if not any(line.endswith(f" s  {p['detail']}")
                                                                         for line in lines)]


def summary_problems(a: dict, rec) -> list[str]:
    """The summary's totals against the counters', each to the precision it is kept at
    (the split in ms to one decimal)."""
    total = applier_totals(rec).get
    measured = {part: total(name) for part, name in MEASURED.items()}
    measured["other"] = max(0, total("applier_split_ns") - sum(measured.values()))
    duration = rec.duration_s
    expected = {"events": total("applier_events"), "busy_s": total("applier_ns") / 1e9,
                "events_per_s": total("applier_events") / duration if duration else None,
                **{f"split_ms.{p}": measured[p] / 1e6 if total("applier_split_ns") else None for p in PARTS}}
    told = {"events": a["events"], "busy_s": a["busy_s"], "events_per_s": a["events_per_s"],
            **{f"split_ms.{p}": a["split_ms"][p] for p in PARTS}}
    found = [f"replica applier {k} is {told[k]}, its counters say {vc.shown(v)}" for k, v in expected.items()
             if not (vc.same(told[k], v) if told[k] is None or v is None else vc.said(f"{told[k]}", v))]
    tids = sorted(int(t) for t in rec.appliers["tid"]) if getattr(rec, "appliers", None) is not None else []
    if not set(a["tids"]) <= set(tids):
        found.append(f"replica applier tids {a['tids']} are not the appliers table's {tids}")
    return found


def tiling(phases: list[dict], table: pd.DataFrame) -> list[str]:
    found = [f"replica phase at {p['from_s']} s: unknown verdict {p['verdict']}" for p in phases
             if p["verdict"] not in VERDICTS]
    bounds = [0.0] + [p["to_s"] for p in phases]
    if [p["from_s"] for p in phases] != bounds[:-1]:
        found.append("the replica phases do not follow one another without gaps or overlaps")
    if not phases or abs(bounds[-1] - table.index[-1]) > vc.TOLERANCE:
        found.append(f"the replica phases end at {bounds[-1]} s, the recording at {table.index[-1]:.3f} s")
    return found


def figure_problems(figures: dict, real: dict) -> list[str]:
    found = [f"{k} is {figures[k]}, its intervals say {vc.shown(real[k])}"
             for k in ("seconds", "intervals", "threads", "events", "events_per_s", "busy_s", "capacity_s",
                       "busy_share", "watched_s", "attached_share") if not vc.same(figures[k], real[k])]
    for k in ("split_s", "shares"):
        told, of = figures[k], real[k]
        if (told is None) != (of is None) or (told and not all(vc.same(told[p], of[p]) for p in PARTS)):
            found.append(f"{k} is {told}, its intervals say {vc.shown(of)}")
    latch = figures.get("latch")
    if latch and not (heaviest(real["latch_s"], latch["name"])
                      and vc.same(latch["wait_s"], real["latch_s"][latch["name"]])):
        found.append(f"latch is {latch}, its intervals' heaviest is {real['latch_s'].idxmax() if len(real['latch_s']) else None}")
    if figures["saturated"] != (real["busy_share"] >= SATURATED):
        found.append(f"saturated is {figures['saturated']}, its appliers were busy {real['busy_share']:.1%}")
    return found


def quiet(real: dict) -> bool:
    """A phase its appliers were too little busy in to be named by its split."""
    attached = 1.0 if real["attached_share"] is None else real["attached_share"]
    return not real["busy_s"] or real["busy_share"] < (QUIET_SHARE + MARGIN) * attached


def attached_enough(real: dict, margin: float) -> bool:
    """Whether a phase's probes were attached enough of it to name a cause
    (interval_columns.watched_enough), its share taken `margin` higher; true where never sampled."""
    return real["attached_share"] is None or watched_enough(real["attached_share"] + margin, real["spread"])


def too_little_watched(real: dict) -> bool:
    """What makes a phase unwatched: not attached enough of it (interval_columns.watched_enough)
    while its appliers were busy, or quiet with intervals of its own not watched whole. The
    second is a quiet stretch that took in a short busy run (phases.debounce): attached 55%
    of a 6-s phase, its busy seconds watched, its quiet ones 28% each, it is unwatched and
    says so."""
    pairs = zip(real["idle_rows"], real["attached_rows"])
    # not attached enough of it: nothing may name a cause (within the margin)
    unwatched = not attached_enough(real, -MARGIN)
    return (quiet(real) and any(idle and seen < WATCHED_WHOLE for idle, seen in pairs)) \
        or (unwatched and real["busy_s"] > 0)


def reason_problems(verdict: str, real: dict) -> list[str]:
    """A verdict with nothing in its intervals to stand on."""
    split, pairs = real["split_s"], list(zip(real["idle_rows"], real["attached_rows"]))
    reasons = {"idle": quiet(real) and any(idle and seen >= WATCHED_WHOLE for idle, seen in pairs),
               "unwatched": too_little_watched(real),
               "unsplit": real["busy_s"] > 0 and not split}
    if verdict in BOUND.values() and not attached_enough(real, MARGIN):
        return [f"names a cause, yet its probes were attached {real['attached_share']:.0%} of it"]
    watched = sum(split.values()) if split else 0.0
    cause = max((split[w] for w in WAITS), default=0.0) if split else 0.0
    # a tenth of the time someone in its way (within the margin either side of the line)
    may_name, must_name = (watched > 0 and cause >= CAUSE_SHARE * watched * (1 + m) for m in (-MARGIN, MARGIN))
    for part, bound in BOUND.items():
        if not split or not real["busy_s"] > 0:
            reasons[bound] = False
        elif part in WAITS and split[part] >= cause - 1e-9 and may_name:
            reasons[bound] = True
        else:  # no waiting part names it: the largest part
            reasons[bound] = not must_name and split[part] >= max(split.values()) - 1e-9
    return [] if reasons.get(verdict, False) else [f"nothing in its intervals makes it {verdict}"]


# --- the sentence ----------------------------------------------------------------------

def claims(real: dict, named: set[str]) -> list[tuple]:
    """(pattern, test of its match) for every claim a phase's sentence makes; named
    collects the parts it names."""
    n, d = vc.NUMBER, DURATION.format(N=vc.NUMBER)

    def part_holds(g) -> bool:
        part = PART_OF[g[1]]
        named.add(part)
        return bool(real["split_s"]) and vc.said(g[0], 100 * real["shares"][part]) \
            and lasted(g[2], g[3], real["split_s"][part])
    return [
        (rf"the ({n}) applier threads(?= applied)", lambda g: real["threads"] > 1 and vc.said(g[0], real["threads"])),
        (r"the applier(?= applied)", lambda g: real["threads"] == 1),
        (rf"applied ({n}) events \(({n})/s\)",
         lambda g: vc.said(g[0], real["events"]) and vc.said(g[1], real["events_per_s"])),
        (r"no event (?:applied|seen)", lambda g: real["events"] == 0 and real["busy_s"] == 0),
        (rf"busy {d} of (?:their )?{d} \(({n})%(: saturated, (?:it|they) cannot apply faster)?\)",
         lambda g: lasted(g[0], g[1], real["busy_s"]) and lasted(g[2], g[3], real["capacity_s"])
         and vc.said(g[4], 100 * real["busy_share"]) and (g[5] is not None) == (real["busy_share"] >= SATURATED)),
        (rf"of the {d} watched whole", lambda g: lasted(g[0], g[1], real["watched_s"])
         and real["watched_s"] < real["busy_s"]),
        (rf"({n})% (?:of it )?({DOING_WORDS}) \({d}\)", part_holds),
        (r"its time was not split \(no event was watched whole\)",
         lambda g: real["busy_s"] > 0 and not real["split_s"]),
        (rf"counted busy {d}", lambda g: lasted(g[0], g[1], real["busy_s"])),
        (r"no event was watched whole: where its time went is not known",
         lambda g: real["busy_s"] > 0 and not real["split_s"]),
        (r"too little watched to say what (?:else )?held it back", lambda g: too_little_watched(real)),
        (rf", {d} of it ({DOING_WORDS}) \(their probe attached throughout\)",
         lambda g: PART_OF[g[2]] in real["whole_parts"] and bool(real["split_s"])
         and lasted(g[0], g[1], real["split_s"][PART_OF[g[2]]])),
        (rf"; the latch it waited on most: (.+?) \({d}\)(?=;|$)",
         lambda g: heaviest(real["latch_s"], g[0]) and lasted(g[1], g[2], real["latch_s"][g[0]])),
        (rf"its probes were attached ({n})% of the phase",
         lambda g: real["attached_share"] is not None and vc.said(g[0], 100 * real["attached_share"])),
    ]


def sentence_problems(p: dict, real: dict) -> list[str]:
    """Each claim of the phase's words against its intervals, every part of the split that
    matters named, and no number left over."""
    prefix = f"{p['verdict']}: "
    if not p["detail"].startswith(prefix):
        return [f"its words do not open with its verdict ('{prefix}')"]
    text, found, named = p["detail"][len(prefix):], [], set()
    for pattern, holds in claims(real, named):
        for match in re.finditer(pattern, text):
            if not holds(match.groups()):
                found.append(f"says '{match.group(0)}': its intervals say otherwise")
        text = re.sub(pattern, "·", text)
    found += [f"says {x} that no claim accounts for, in '{text}'" for x in re.findall(vc.NUMBER, text)]
    if p["verdict"] in (UNWATCHED, UNSPLIT):  # not watched: what was counted, no share, no cause
        return found + [f"gives a share of a phase not watched: '{m}'"
                        for m in re.findall(rf"{vc.NUMBER}% (?!of the phase)", p["detail"])]
    if (p["verdict"] == BOUND["latch"] and real["latch_s"].sum() > 0) != ("the latch it waited on most" in p["detail"]):
        found.append("names the latch it waited on most only, and always, where it is latch-bound and one was tabled")
    shares = real["shares"] or {}
    found += [f"does not name {DOING[part]}, {100 * share:.1f}% of its watched time" for part, share in shares.items()
              if share >= SHOWN_SHARE + MARGIN and part not in named]
    if real["split_s"] and real["watched_s"] < real["busy_s"] * (1 - MARGIN) and "watched whole" not in p["detail"]:
        found.append(f"does not say its split covers {real['watched_s']:.3f} s of its {real['busy_s']:.3f} s busy")
    if real["attached_share"] is not None and real["attached_share"] < EXACT - MARGIN \
            and "its probes were attached" not in p["detail"]:
        found.append(f"does not say its probes were attached {real['attached_share']:.0%} of it")
    return found


# --- the finding -----------------------------------------------------------------------

def whole_split(rec) -> dict | None:
    total = applier_totals(rec).get
    parts = {part: total(name) / 1e9 for part, name in MEASURED.items()}
    parts["other"] = max(0.0, total("applier_split_ns") / 1e9 - sum(parts.values()))
    return parts if total("applier_split_ns") else None


def named_a_phase(told: dict, part: str) -> bool:
    """Whether a phase's verdict names the part (the phases are checked on their own)."""
    return any(p["verdict"] == BOUND[part] for p in (told.get("replica") or {}).get("phases", []))


def applier_latches(rec) -> tuple[pd.Series, float]:
    """The applier's latch waits by latch name (ms), and their total."""
    table = rec.work_latches
    mine = table[table["owner"] == APPLIER_ROLE]
    by_name = mine.groupby("name", observed=True)["wait_us"].sum() / 1e3
    return by_name, float(by_name.sum())


def latch_words_hold(rec, g) -> bool:
    """'The latch it waited on longest: NAME (X ms of the Y ms it waited on latches, released
    most by THREAD (ROLE))': the heaviest of the applier's latches, its time and the total,
    and a thread among those that released it."""
    name, x, y, holder = g
    by_name, total = applier_latches(rec)
    if not heaviest(by_name, name):
        return False
    if not (vc.said(x.replace(",", ""), by_name[name]) and vc.said(y.replace(",", ""), total)):
        return False
    holders = rec.latch_holders
    return holder is None or bool(len(holders)) and any(
        holder in (t, f"{t} ({r})") for t, r in zip(holders.loc[holders["name"] == name, "thread"],
                                                    holders.loc[holders["name"] == name, "role"]))


def finding_claims(rec, told: dict) -> list[tuple]:
    """The replica findings' (pattern, test) for verdict_check.finding_problems."""
    n, d = vc.NUMBER, DURATION.format(N=vc.NUMBER)
    split, busy = whole_split(rec), applier_totals(rec)["applier_ns"] / 1e9
    waits = "|".join(re.escape(DOING[p]) for p in (*WAITS, "redo"))

    def holds(g) -> bool:
        part, watched = PART_OF[g[1]], sum(split.values()) if split else 0.0
        partial = g[4] is not None
        largest = bool(split) and (part == "redo" or split[part] == max(split[w] for w in WAITS)) \
            and split[part] / watched >= FINDING_SHARE - MARGIN \
            and (told.get("replica") or {}).get("applier", {}).get("coverage", 1.0) >= WATCHED_ENOUGH
        return bool(split) and rec.probe_attached("applier_event") and (largest or named_a_phase(told, part)) \
            and vc.said(g[0], 100 * split[part] / watched) \
            and lasted(g[2], g[3], split[part]) and partial == (watched < busy) \
            and (not partial or lasted(g[4], g[5], watched)) and lasted(g[6], g[7], busy) \
            and vc.said(g[8], applier_totals(rec)["applier_events"]) \
            and (g[9] is None or part == "latch" and latch_words_hold(rec, g[9:]))
    spans = rf"{n}–{n} s(?:, {n}–{n} s)*"
    lag = (rf"^The replica fell behind: its lag grew from ({n}) s at ({n}) s to ({n}) s at ({n}) s\."
           rf"(?: Of the applier's time watched whole in that span \(({spans})\), the largest part was "
           rf"({DOING_WORDS}) \({d} of ({n}) (s|ms|µs)\))?(?:;? ({spans}) (?:was|were) too little watched to say "
           rf"what held it back(, beyond .+ \(their probe attached throughout\))?)?\.?$")
    table, threads, sampled = counts(rec), applier_threads(rec), attached_name(rec)
    work = rec.work_latches[rec.work_latches["owner"] == APPLIER_ROLE]

    def phase_split(p: dict) -> dict[str, float]:
        return truth(table, p["from_s"], p["to_s"], threads, sampled, work)["split_s"] or dict.fromkeys(PARTS, 0.0)
    def whole_holds(tail: str | None, unwatched_spans: str | None) -> bool:
        """', beyond 6.0 s waiting on row locks ...': each part's time in the unwatched
        phases named, from their intervals' counters, its probe attached throughout."""
        said = {PART_OF[w]: (x, u) for x, u, w in re.findall(rf"{d} ({DOING_WORDS})", tail or "")}
        phases = [p for p in (told.get("replica") or {}).get("phases", [])
                  if any(vc.said(f"{a:.1f}", p["from_s"]) and vc.said(f"{b:.1f}", p["to_s"])
                         for a, b in replica_lag_spans(unwatched_spans))]
        whole = {part for part, probe in (("row_lock", "row_lock_wait"), ("commit_order", "commit_order_wait"))
                 if rec.probe_attached(probe) and coverage(rec, probe) >= EXACT}
        real = {part: sum(phase_split(p)[part] for p in phases) for part in whole}
        return set(said) == {part for part, s in real.items() if s > 0} \
            and all(lasted(x, u, real[part]) for part, (x, u) in said.items())
    return [(lag, lambda g: lag_finding_holds(rec, told, (*g[:8], (g[8], g[9]), g[10]), phase_split, lasted, MARGIN)
             and whole_holds(g[11], g[10])),
            (rf"^The replica's applier spent ({n})% of its time ({waits}) \({d} of (?:the {d} watched whole, of )?"
             rf"{d} busy, in ({n}) events\): .*?(?: The latch it waited on longest: (.+) \(([\d,.]+) ms of the "
             rf"([\d,.]+) ms it waited on latches(?:, released most by (.+))?\)\.)?$", holds)]


def missing_finding(rec, told: dict) -> list[str]:
    """A rise of the lag, or a waiting part that took FINDING_SHARE of the watched time of a
    recording watched WATCHED_ENOUGH of it or named a phase, with no finding saying it."""
    rise = own_rise(rec) if told.get("replica") else None
    lag_said = any(f.startswith("The replica fell behind: its lag grew") for f in told["findings"])
    found = [] if (rise is not None) == lag_said else [
        f"the replica's lag rose {rise[2] - rise[0]:.0f} s and no finding says so" if rise
        else "a finding says the replica's lag grew, yet it did not rise"]
    split = whole_split(rec)
    if not told.get("replica") or not split or not sum(split.values()):
        return found
    watched = sum(split.values())
    part = max(WAITS, key=lambda w: split[w])
    covered = told["replica"]["applier"]["coverage"] >= WATCHED_ENOUGH
    wanted = [p for p in (part, "redo") if covered and split[p] / watched >= FINDING_SHARE + MARGIN] \
        + [p for p in (*WAITS, "redo") if named_a_phase(told, p)]
    said = [f for f in told["findings"] if f.startswith("The replica's applier spent")]
    return found + [f"the applier spent {split[p] / watched:.0%} of its watched time {DOING[p]}, and no finding "
                    f"says so" for p in dict.fromkeys(wanted) if not any(DOING[p] in f.split(" (")[0] for f in said)]
