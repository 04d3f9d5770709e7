"""What the probes cost the server, and what the cost governor sampled to stay in budget.

A sampled group was attached only part of the time: its counts are those of that part
(coverage = time attached / recording time), and its histograms are of that part's events.
A group attached all along is exact (sampling.EXACT); which group a probe was in, and the
share from the group's attached time, are sampling.py's, on plain values."""
from __future__ import annotations

from .recording import Recording
from .sampling import EXACT, covered, group_of, sampled_words


def coverage(rec: Recording, probe: str) -> float:
    """Share of the recording the probe was attached: 1.0 unless it was sampled."""
    group = group_of(rec.meta, probe)
    if not group or not rec.duration_s:
        return 1.0
    return covered(group, rec.counter_total(f"governor.attached_ns.{group}"), rec.duration_s)


def sampled_note(rec: Recording, probe: str) -> str:
    """' [sampled: attached 37% of the time, least when busiest: a floor]', or '' when the
    probe's results are exact. A group is attached at each interval's start until it has
    spent its allowance, so the busier the moment, the sooner it goes: at 18-70% of the time
    attached, recordings saw 3-14% of the events (docs/overhead.md, What sampled means)."""
    return sampled_words(coverage(rec, probe))


def cost_summary(rec: Recording) -> dict:
    gov = rec.meta.get("governor", {})
    duration, cpu_ns = rec.duration_s, rec.counter_total("governor.server_cpu_ns")
    overhead_ns = rec.counter_total("governor.overhead_ns")
    budget_ns = rec.counter_total("governor.budget_ns")
    groups = {}
    for name in gov.get("groups", []):
        attached = rec.counter_total(f"governor.attached_ns.{name}")
        groups[name] = {
            "coverage": round(min(1.0, attached / (duration * 1e9)), 4) if duration else None,
            "windows": rec.counter_total(f"governor.windows.{name}"),
            "overhead_pct": pct(rec.counter_total(f"governor.overhead_ns.{name}"), cpu_ns),
        }
    hits = {name[len("hits."):]: round(rec.counter_total(name) / duration, 1) if duration else None
            for name in rec.counters["name"].unique() if str(name).startswith("hits.")}
    return {
        "budget_pct": gov.get("budget_pct"),
        "budget_ms_per_s": round(budget_ns / duration / 1e6, 3) if duration else None,
        # the governor reckons the budget on at least a quarter of a CPU (governor.c)
        "budget_floored": bool(gov.get("budget_pct")) and budget_ns > 1.05 * cpu_ns * gov["budget_pct"] / 100,
        "hit_cost_ns": gov.get("hit_cost_ns"),
        "server_cpu_s": round(cpu_ns / 1e9, 3),
        "overhead_pct": pct(overhead_ns, cpu_ns),
        # the budget holds when the estimate is within it: ms against ms, since the budget
        # may be reckoned on more CPU than the server used (budget_floored)
        "overhead_ms": round(overhead_ns / 1e6, 3),
        "budget_ms": round(budget_ns / 1e6, 3),
        "sampled": sorted(n for n, g in groups.items() if g["coverage"] is not None
                          and g["coverage"] < EXACT),
        "groups": groups,
        "hits_per_s": dict(sorted(hits.items())),
        "window_cuts": rec.counter_total("window_cuts"),
        "own_cpu_s": own_cpu(rec),
        "signals": signals(rec),
    }


def signals(rec: Recording) -> dict | None:
    """The server's state signals that opened groups at once (the loader's state_signals.c):
    {read: {name: {groups, held_s, windows}}, missing: {name: why}, bank_ms: {put_in,
    paid_out}: what calm intervals saved for stalls and stalls spent}; None in a recording
    made without them (before they were, or --exact)."""
    planned = rec.meta.get("governor", {}).get("signals")
    if not planned:
        return None
    read = {s["name"]: {"groups": s["groups"],
                        "held_s": round(rec.counter_total(f"governor.signal_held_ns.{s['name']}") / 1e9, 3),
                        "windows": rec.counter_total(f"governor.signal_windows.{s['name']}")}
            for s in planned.get("read", [])}
    return {"read": read, "missing": planned.get("missing", {}),
            "bank_ms": {"put_in": round(rec.counter_total("governor.bank_put_in_ns") / 1e6, 3),
                        "paid_out": round(rec.counter_total("governor.bank_paid_out_ns") / 1e6, 3)}}


def signal_line(found: dict | None) -> list[str]:
    """One line: which signal of the server's state held which groups open, and for how
    long; and the signals the build could not give."""
    if not found:
        return []
    held = [f"{name} held {', '.join(s['groups'])} {s['held_s']:.1f} s ({s['windows']} windows)"
            for name, s in found["read"].items() if s["windows"] or s["held_s"]]
    missing = f"; not read: {', '.join(found['missing'])}" if found["missing"] else ""
    bank = found.get("bank_ms") or {}
    saved = (f"; the calm saved {bank['put_in']:.1f} ms of the budget for stalls, which spent "
             f"{bank['paid_out']:.1f} ms of it" if bank.get("put_in") else "")
    return [f"  opened by the server's state: {'; '.join(held) or 'nothing moved'}{saved}{missing}"]


def own_cpu(rec: Recording) -> dict | None:
    """innostall's own processes (recorder and loader), from meta.json: seconds of CPU to
    start, while tracing (also as % of one core), and writing the tables."""
    spent = rec.meta.get("own_cpu_s")
    if not spent:
        return None
    duration = rec.duration_s
    if "tracing" not in spent:  # ended by a full disk: only the start was counted
        return {**spent, "tracing": None, "tables": None, "tracing_pct_of_core": None}
    share = round(100 * spent["tracing"] / duration, 2) if duration else None
    return {**spent, "tracing_pct_of_core": share}


def pct(part: float, whole: float) -> float | None:
    return round(100 * part / whole, 3) if whole else None


def budget_rate(cost: dict) -> str:
    """' (2.5 ms/s, ...)': the budget in probe time per second, and why when it is more."""
    if not cost.get("budget_ms_per_s"):
        return ""
    why = (", reckoned on a quarter of a CPU: the server used less, and a share of an idle server"
           " would sample away single long reads") if cost.get("budget_floored") else ""
    # in time, which is what the governor keeps: a floored budget lets the share pass 1%
    spent = (f"; the probes took {cost['overhead_ms']:,.1f} ms of the {cost['budget_ms']:,.1f} ms it allowed"
             if cost.get("budget_ms") else "")
    return f" ({cost['budget_ms_per_s']:.1f} ms/s{why}){spent}"


def calibration_spread(hit: dict) -> str:
    """' (rounds 898-2132 ns)': the middle five rounds' entry costs; and whether the median
    was raised to the floor."""
    if "entry_range" not in hit:
        return ""
    low, high = hit["entry_range"]
    floored = ", raised to the least a trap costs" if hit.get("floored") else ""
    return f" (rounds {low:.0f}–{high:.0f} ns{floored})"


def overhead_words(pct: float, cpu_s: float) -> str:
    """'overhead 0.84% of 60.0 s server CPU'. The probes run on the server's CPU, so an
    estimate above it (an idle server, each hit costed at its calibrated price) is an
    estimate too high, said in seconds rather than as a share above its whole."""
    if pct <= 100:
        return f"overhead {pct:.2f}% of {cpu_s:.1f} s server CPU"
    return (f"overhead estimated at {pct * cpu_s / 100:.1f} s, more than the {cpu_s:.1f} s of CPU the server "
            "ran: the calibrated cost of a hit overstates it here")


def group_share(pct: float) -> str:
    return f"{pct:.2f}% CPU" if pct <= 100 else "estimated above the server's CPU"


def render_cost(cost: dict) -> list[str]:
    if cost["overhead_pct"] is None and not cost["hits_per_s"]:
        return ["", "Probe cost: not recorded (a recording from before the cost governor)"]
    budget = cost["budget_pct"]
    hit = cost["hit_cost_ns"] or {}
    lines = ["", "Probe cost (estimated: hits x cost per hit, against the server's CPU time)",
             f"  {overhead_words(cost['overhead_pct'] or 0, cost['server_cpu_s'])}; "
             + (f"budget {budget:g}%{budget_rate(cost)}" if budget else "no budget (--exact)")
             + (f"; a hit costs {hit.get('entry', 0):.0f} ns{calibration_spread(hit)}, "
                f"a return {hit.get('return', 0):.0f} ns more" if hit else "")
             + (f", a scheduler tracepoint's run {hit['tracepoint']:.0f} ns"
                if hit.get("tracepoint") else "")
             + (f"; a uprobe hit and its program counted {hit['indirect_factor']:g} times over, "
                "for what the server pays around them" if hit.get("indirect_factor") else "")]
    for name, g in cost["groups"].items():
        if g["coverage"] is not None and g["coverage"] < EXACT:
            lines.append(f"  sampled: {name} attached {100 * g['coverage']:.0f}% of the time "
                         f"({g['windows']} windows, {group_share(g['overhead_pct'] or 0)}); its counts "
                         "cover that time only")
    lines += signal_line(cost.get("signals"))
    if cost["window_cuts"]:
        lines.append(f"  spans cut by a window edge (not measured): {cost['window_cuts']}")
    own = cost.get("own_cpu_s")
    if own and own["tracing"] is not None:
        lines.append(f"  innostall's own CPU: {own['start']:.2f} s to start (discovery, BPF load, "
                     f"calibration), {own['tracing_pct_of_core'] or 0:.1f}% of one core while "
                     f"tracing, {own['tables']:.2f} s writing the tables (idle priority)")
    elif own:
        lines.append(f"  innostall's own CPU: {own['start']:.2f} s to start (discovery, BPF load, "
                     "calibration); the rest was not counted, the recording having been cut short")
    busiest = sorted(cost["hits_per_s"].items(), key=lambda kv: -(kv[1] or 0))[:6]
    lines.append("  hits/s: " + ", ".join(f"{name} {rate:,.0f}" for name, rate in busiest))
    return lines
