"""The report of one recording: a summary (for --json) and its terminal rendering."""
from __future__ import annotations

import datetime as dt

import cxxfilt

from innostall.collector.target import server_label

from .histogram import format_log2, percentile, slot_bounds
from .recording import Recording
from .timeline import per_interval, sparkline


def latency_summary(rec: Recording, name: str) -> dict:
    hist = rec.hist(name)
    if hist.empty or not hist.sum():
        return {"p50": None, "p99": None, "max": None}
    top = int(hist[hist > 0].index.max())
    return {"p50": round(percentile(hist, 0.50), 1), "p99": round(percentile(hist, 0.99), 1),
            "max": slot_bounds(top)[1]}  # an upper bound: the top of the highest slot


def summary(rec: Recording) -> dict:
    batches = rec.counter_total("purge_batches")
    return {
        "server": rec.meta["target"],
        "duration_s": round(rec.duration_s, 3),
        "complete": bool(rec.meta.get("complete")),
        "purge": {
            "batches": batches,
            "empty_batches": rec.counter_total("purge_empty_batches"),
            "pages": rec.counter_total("purge_pages"),
            "latency_us": latency_summary(rec, "purge_batch_latency"),
        },
    }


def findings(series) -> list[str]:
    """Plain-words reading of the purge series (one row per interval)."""
    if not series["purge_batches"].sum():
        return ["No purge batch ran: purge had no history to work on, or it is disabled."]
    stalled = (series["purge_batches"] > 0) & (series["purge_empty_batches"] == series["purge_batches"])
    if stalled.sum() >= max(2, len(series) // 5):
        working = series[~stalled & (series["purge_pages"] > 0)]
        text = (f"In {stalled.sum()} of {len(series)} intervals every purge batch found nothing "
                "to purge: an old read view (a long transaction or consistent snapshot) kept the "
                "history from being purged.")
        if len(working):
            text += (f" Purge did its work in {len(working)} interval(s): "
                     f"{working['purge_pages'].sum()} undo pages.")
        return [text]
    return []


def demangle(symbol: str | None) -> str:
    if not symbol:
        return "-"
    try:
        return cxxfilt.demangle(symbol)
    except cxxfilt.InvalidName:
        return symbol


def header(rec: Recording) -> list[str]:
    meta, target = rec.meta, rec.meta["target"]
    server = server_label(target.get("family"), target.get("version"))
    started = meta.get("start_real_ns")
    when = (dt.datetime.fromtimestamp(started / 1e9, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
            if started else "unknown time")
    ending = meta.get("end_reason") or "cut short (recorder killed)"
    lines = [f"innostall report: {rec.path}",
             f"  server    {server} (pid {target.get('pid')}, {target.get('exe')})",
             f"  recorded  {when}, {rec.duration_s:.1f} s at {meta['interval_s']:g} s intervals, "
             f"ended by {ending}"]
    for p in meta["probes"]:
        state = demangle(p["symbol"]) if p["attached"] else f"missing: {p['reason']}"
        lines.append(f"  probe     {p['name']:<14} {state}")
    return lines


def render_text(rec: Recording) -> str:
    s = summary(rec)["purge"]
    lat = s["latency_us"]
    per_s = s["batches"] / rec.duration_s if rec.duration_s else 0
    per_batch = s["pages"] / s["batches"] if s["batches"] else 0
    lines = header(rec) + [
        "",
        "Purge",
        f"  batches {s['batches']} ({per_s:.1f}/s), empty {s['empty_batches']}, "
        f"undo pages {s['pages']} ({per_batch:.1f} per batch)",
    ]
    if s["batches"]:
        lines.append(f"  batch latency p50 ~{lat['p50']:.0f} us, p99 ~{lat['p99']:.0f} us, "
                     f"max <= {lat['max']} us")
    series = per_interval(rec, ["purge_batches", "purge_empty_batches", "purge_pages"])
    lines += [f"  finding: {text}" for text in findings(series)]
    lines += ["", "Purge over time (one character per interval, scaled to the peak)"]
    for name, label in [("purge_batches", "batches"), ("purge_empty_batches", "empty"),
                        ("purge_pages", "pages")]:
        lines.append(f"  {label:<8} |{sparkline(series[name])}| peak {series[name].max()}")
    lines += ["", "Purge batch latency", format_log2(rec.hist("purge_batch_latency"), "usecs"),
              "", "Undo pages per purge batch", format_log2(rec.hist("purge_batch_pages"), "pages")]
    return "\n".join(lines)
