"""The purge section: its batches, the history and what pinned it, where its time went,
the DML it delayed (figures under purge in the summary), its findings and its text lines.
The phases and the verdict are phases.py's, phase_figures.py's and wording/phases.py's; the
story they make (summary.purge_story) is handed to figures by the summary."""
from __future__ import annotations

from innostall.format.writer_tables import PURGE_ONLY
from innostall.names import leaf_path

from ..cost import coverage, sampled_note
from ..estimates import estimated_figures
from ..pinning import statements_note
from ..recording import Recording
from ..sampling import EXACT
from ..timeline import per_interval, sparkline
from ..wording.findings import purge_findings, purge_headline, throttle_findings
from ..wording.numbers import seconds, shorten
from ..wording.work_latch_words import work_latch_lines
from ..work_latch_figures import work_latches
from .lines import estimate_line, finding_lines, histogram, latency_summary, log2_text

KEYS = ("purge",)


def figures(rec: Recording, story: dict) -> dict:
    """story: purge_history.story_of over the recording's phases (summary.purge_story)."""
    return {"purge": {
        "batches": rec.counter_total("purge_batches"),
        "empty_batches": rec.counter_total("purge_empty_batches"),
        "pages": rec.counter_total("purge_pages"),
        "records": rec.counter_total("purge_records"),
        "latency_us": latency_summary(rec, "purge_batch_latency"),
        "dml_delays": rec.counter_total("dml_delays"),
        "dml_delay_ms": round(rec.counter_total("dml_delay_us") / 1000, 1),
        "records_coverage": coverage(rec, "purge_record"),
        "records_estimated": estimated_figures(rec, "purge_record", {"records": (["purge_records"], 1)}),
        "dml_delay_coverage": coverage(rec, "dml_delay"),
        **batches_sampled(rec),
        **story,
        "latches": work_latches(rec, PURGE_ONLY),
    }}


def batches_sampled(rec: Recording) -> dict:
    """Where the governor detached the batches' probe for part of the recording (MySQL's
    coordinator spinning on empty batches while a view pins the history): the share of the
    time it watched and the counts estimated from it. Nothing where it watched them all, so
    a report that has no such figure reads as before."""
    share = coverage(rec, "purge_batch")
    if share >= EXACT:
        return {}
    return {"batches_coverage": share, "batches_estimated": estimated_figures(rec, "purge_batch", {
        "batches": (["purge_batches"], 1), "empty_batches": (["purge_empty_batches"], 1),
        "pages": (["purge_pages"], 1)})}


def findings(rec: Recording, told: dict) -> list[str]:
    return purge_findings(rec, told["purge"]) + throttle_findings(told["purge"])


def amount(value) -> str:
    return "unknown" if value is None else f"{value:,}"


def history_lines(purge: dict) -> list[str]:
    h = purge["history"]
    if h["last"] is None:
        return ["  history list length: not recorded"]
    read, at = (f"read from {h['known_from_s']:.1f} s", "at the end") if h["known_to_end"] else (
        f"read from {h['known_from_s']:.1f} to {h['known_to_s']:.1f} s, unknown after: its probes "
        f"were detached by the cost governor", f"at {h['known_to_s']:.1f} s")
    lines = [f"  history list length {h['first']:,} → {h['last']:,} (max {h['max']:,}; {read}); "
             f"{at} pinned {amount(h['pinned'])}, purgeable {amount(h['purgeable'])}"]
    growth = []
    if h["growth_per_s"] is not None:
        growth.append(f"net {h['growth_per_s']:+,.0f}/s over the "
                      f"{'recording' if h['known_to_end'] else 'time it was known'}")
    if h["recent_growth_per_s"] is not None:  # the last readings, wherever they fell
        growth.append(f"{h['recent_growth_per_s']:+,.0f}/s over its last readings "
                      f"({h['recent_from_s']:.1f}–{h['known_to_s']:.1f} s)")
    if growth:
        drain = (f"; drains in ~{h['drain_s']:,.0f} s at that rate" if h["drain_s"] else
                 "; drained" if h["drain_s"] == 0 else "")
        lines.append(f"  history growth {', '.join(growth)}{drain}")
    return lines


def split_line(label: str, split: dict, watched_pct: float | None = None) -> list[str]:
    """'  batch time (coordinator) 1352 ms: cpu 78%, io 11%, latch 5%, other 6%', and the
    share of the time it covers when the sleep tracepoint was sampled."""
    if split["cpu"] is None:
        return []
    total = sum(split.values())
    shares = ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in split.items()) if total else "none"
    sampled = f" [sampled: {watched_pct:.0f}% of the time watched]" if watched_pct is not None \
        and watched_pct < 99.5 else ""
    return [f"  {label} {total:,.1f} ms: {shares}{sampled}"]


def opened_when(opened_s: float) -> str:
    """When a view opened, from the attach: 'opened at 12.5 s', or 'opened 4.6 s before the
    recording' (a moment, never said as a negative time)."""
    return f"opened at {opened_s:7.1f} s" if opened_s >= 0 else f"opened {seconds(-opened_s)} before the recording"


def pinning_lines(views: list[dict], kept: str | None = None) -> list[str]:
    """The views that pinned purge, and how their statements were kept (kept: summary's
    purge.statements)."""
    if not views:
        return []
    lines = ["  read views that pinned purge (oldest open, holding history):"]
    for v in views:
        who = "".join([f", connection {v['connection_id']}" if v["connection_id"] is not None else "",
                       f", user {v['user']}" if v["user"] else ""])
        lines.append(f"    tid {v['tid'] if v['tid'] is not None else '?':<8} {opened_when(v['opened_s'])}, open {seconds(v['age_s'])}, "
                     f"held up to {v['pinned_max']:,}{who}")
        if v["stack"]:
            lines.append(f"      opened at {leaf_path(v['stack'], 5)}")
        if v["statement"]:
            lines.append(f"      running {shorten(v['statement'], 100)}")
    if note := statements_note(kept or "", views):
        lines.append(f"    {note}")
    return lines


def dml_delay_line(drawn: dict, s: dict) -> list[str]:
    """The DML delay's line, when its probe was attached."""
    if not drawn["dml_delay"]:
        return []
    return [f"  DML delayed by innodb_max_purge_lag: {s['dml_delays']} row operations, "
            f"{s['dml_delay_ms']:.1f} ms in all{drawn['dml_delay_sampled']}"]


HISTOGRAMS = (("purge_batch_latency", "Purge batch latency"), ("purge_batch_pages", "Undo pages per purge batch"),
              ("purge_batch_records", "Undo records per purge batch"))


def shown(rec: Recording) -> dict:
    """What its lines show beyond the summary's figures: the recording's length, which probes
    were attached and how much of the time, its counts per interval, its histograms."""
    records = rec.probe_attached("purge_record")  # its histogram is drawn only then
    return {"duration_s": rec.duration_s,  # unrounded, for the rates (the summary's is to the ms)
            "records": records, "dml_delay": rec.probe_attached("dml_delay"),
            "records_sampled": sampled_note(rec, "purge_record"), "dml_delay_sampled": sampled_note(rec, "dml_delay"),
            "series": per_interval(rec, ["purge_batches", "purge_empty_batches", "purge_pages"]),
            "hists": [(title, histogram(rec, name)) for name, title in HISTOGRAMS[:3 if records else 2]]}


def text_lines(told: dict, drawn: dict, found: list[str]) -> list[str]:
    """Its batches, history, time split, findings and histograms."""
    s = told["purge"]
    if not s["recorded"]:  # the DML delay may be, on its own
        return ["", "Purge: not recorded (probe purge_batch)"] + dml_delay_line(drawn, s) + finding_lines(found)
    lines = ["", "Purge", f"  {purge_headline(s, drawn['duration_s'])}"]
    lines += history_lines(s)
    watched = s.get("split_watched_pct", {})
    lines += split_line("batch time (coordinator)", s["batch_time_ms"], watched.get("batch"))
    lines += split_line(f"worker time ({s['worker_tasks']:,} tasks)", s["worker_time_ms"],
                        watched.get("worker"))
    lines += work_latch_lines(s["latches"], "its batches and tasks")
    lines += pinning_lines(s["pinned_by"], s.get("statements"))
    if drawn["records"]:
        lines.append(f"  undo records handed to purge {s['records']}{drawn['records_sampled']}"
                     + (f" ({s['records'] / s['batches']:.1f} per batch)" if s["batches"] else ""))
        lines += estimate_line(s.get("records_estimated"), {"records": "undo records"})
    lines += dml_delay_line(drawn, s)
    series = drawn["series"]
    lines += finding_lines(found)
    lines += ["", "Purge over time (one character per interval, scaled to the peak)"]
    for name, label in [("purge_batches", "batches"), ("purge_empty_batches", "empty"),
                        ("purge_pages", "pages")]:
        lines.append(f"  {label:<8} |{sparkline(series[name])}| peak {series[name].max()}")
    for title, hist in drawn["hists"]:
        lines += ["", title, log2_text(hist)]
    return lines
