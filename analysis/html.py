"""The HTML report: one self-contained file (plotly.js, styles and flame graphs inline, no
network needed to view it). A thin layer: the tables come from report_tables, the figures from
charts and flamegraph, the words from report; the page is a Jinja template with
autoescaping, so every string from the recording is escaped."""
from __future__ import annotations

import datetime as dt
import os

import jinja2
import pandas as pd
from markupsafe import Markup

from innostall import __version__
from innostall.names import demangle, leaf_first, leaf_path, path, server_label
from innostall.format.schema import prose_unit
from innostall.errors import UserError
from innostall.format import files
from innostall.format.output_path import check_path

from . import charts, cost, flamegraph, metrics, purge_history, redo, report_tables
from .wording.estimate_words import estimate_words
from .wording.numbers import STATEMENT_SHOWN, shorten
from .wording.findings import purge_headline
from .wording.phases import who
from .pinning import statements_note
from .recording import Recording
from .recording_facts import ended_by, warnings
from .wording.phase_list import tally
from .wording import redo_words
from . import verdict_view
from .replica import applier_table
from .replica_timeline import replica_series
from .sections import replica as replica_section
from .window import trigger_words, window_words

TEMPLATES = jinja2.Environment(loader=jinja2.PackageLoader("innostall.analysis", "templates"),
                               autoescape=True, trim_blocks=True, lstrip_blocks=True,
                               undefined=jinja2.StrictUndefined)


def utc(ns: int | None) -> str:
    if not ns:
        return "unknown"
    return dt.datetime.fromtimestamp(ns / 1e9, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def header_facts(rec: Recording) -> list[tuple[str, str]]:
    """What was recorded, where and when, as label/value pairs."""
    meta, target = rec.meta, rec.meta.get("target", {})
    intervals = rec.counters["t_s"].nunique()
    return [
        ("server", f"{server_label(target.get('family'), target.get('version'))} "
                   f"(pid {target.get('pid')})"),
        ("executable", str(target.get("exe"))),
        ("build-id", str(target.get("build_id") or "none")),
        ("host", f"{meta.get('host', 'unknown')}, kernel {meta.get('kernel', 'unknown')}"),
        ("started", utc(meta.get("start_real_ns"))),
        ("stopped", utc(meta.get("stop_real_ns"))),
        ("duration", f"{rec.duration_s:.1f} s in {intervals} intervals of "
                     f"{meta.get('interval_s', 0):g} s"),
    ] + ([("trigger", trigger_words(meta))] if trigger_words(meta) else []) + (
        [("window", window_words(rec.window))] if rec.window else []) + [
        ("ended by", ended_by(rec) + ("" if meta.get("complete")
                                                else "; tables rebuilt from the journal")),
        ("events lost", str(rec.counter_total("drops"))),
        ("recorded by", f"innostall {meta.get('tool_version', '?')}, format {meta.get('version')}"),
    ] + [("warning", text) for text in warnings(rec)]


def probe_rows(rec: Recording) -> list[dict]:
    return [{"name": p.get("name"), "attached": bool(p.get("attached")),
             "detail": demangle(p.get("symbol")) if p.get("attached") else p.get("reason"),
             "fallback": bool(p.get("fallback"))} for p in rec.meta.get("probes", [])]


def hist_section(rec: Recording, name: str) -> dict:
    """A histogram's bars over the whole recording, and its heatmap over time."""
    title, unit = report_tables.hist_title(rec, name)
    slots = report_tables.hist_slots(rec, name)
    stats = report_tables.hist_stats(rec, name)
    chart_id = f"hist-{name}"
    figures = [charts.fragment(charts.hist_figure(slots, title, unit), chart_id)]
    if stats["count"] and rec.counters["t_s"].nunique() > 1:
        heat = charts.heatmap_figure(report_tables.hist_over_time(rec, name), slots, f"{title} over time", unit)
        figures.append(charts.fragment(heat, f"{chart_id}-time"))
    return {"name": name, "title": title, "unit": unit, "stats": stats,
            "charts": [Markup(f) for f in figures]}


def hist_group_section(rec: Recording, names: list[str], title: str, chart_id: str) -> dict | None:
    """Histograms of one kind (latch waits by mode) as grouped bars over common ranges, and
    their sum over time; labelled with their titles, in the first one's unit."""
    present = {rec.schema.hist_title(n): n for n in names if n in report_tables.hist_names(rec)}
    unit = prose_unit(rec.schema.hist_unit(names[0])) if names else ""
    total = rec.hist(list(present.values()))
    if not present or not total.sum():
        return None
    top = int(total[total > 0].index.max())
    bars = {lbl: report_tables.hist_slots(rec, name, top) for lbl, name in present.items()}
    figures = [charts.hist_group_figure(bars, title, unit)]
    if rec.counters["t_s"].nunique() > 1:
        over_time = report_tables.hist_over_time(rec, list(present.values()))
        figures.append(charts.heatmap_figure(over_time, report_tables.hist_slots(rec, list(present.values())),
                                             f"{title}, all modes, over time", unit))
    ids = [chart_id, f"{chart_id}-time"]
    return {"title": title, "charts": [Markup(charts.fragment(f, i)) for f, i in zip(figures, ids)]}


def timeline_chart(rec: Recording, told: dict, replica: dict | None) -> Markup | None:
    """The aligned timeline the page leads with; on a replica, its lag and its applier's
    time as rows of it."""
    table = purge_history.purge_table(rec)
    if table.empty:
        return None
    story, extra = report_tables.story_series(table), []
    if replica:
        lanes, extra = replica_series(rec, applier_table(rec), story.index)
        story = story.join(lanes)
    fig = charts.timeline_figure(story, view_spans(rec, told["pinned_by"]), told["phases"], extra)
    return Markup(charts.fragment(fig, "purge-timeline"))


def view_spans(rec: Recording, pinning: list[dict]) -> pd.DataFrame:
    """One row per read view that pinned purge: label, from_s (its opening, or the attach
    if before it), to_s (the last snapshot that saw it open) and a hover text."""
    rows = []
    for v in pinning:
        same = rec.read_views[(rec.read_views["opened_s"] - v["opened_s"]).abs() < 1e-3]
        names = ([f"tid {v['tid']}"] if v["tid"] is not None else []) + \
            ([f"conn {v['connection_id']}"] if v["connection_id"] is not None else [])
        label = " / ".join(names) or f"opened at {v['opened_s']:.1f} s"
        where = shorten(leaf_path(v["stack"]), 160)
        hover = "; ".join(x for x in [
            f"opened at {v['opened_s']:.1f} s", f"held up to {v['pinned_max']:,} transactions",
            f"stack: {where}" if where else "",
            f"running: {shorten(v['statement'], 120)}" if v["statement"] else ""] if x)
        rows.append({"label": label, "from_s": max(0.0, v["opened_s"]),
                     "to_s": float(same["t_s"].max()) if len(same) else v["pinned_to_s"], "hover": hover})
    return pd.DataFrame(rows, columns=["label", "from_s", "to_s", "hover"])


def split_rows(told: dict) -> list[dict]:
    """Where purge's time went, for the coordinator and the workers: ms and share per part."""
    rows = []
    for part, split in (("coordinator (batches)", told["batch_time_ms"]),
                        (f"workers ({told['worker_tasks']:,} tasks)", told["worker_time_ms"])):
        if split["cpu"] is None:
            continue
        total = sum(split.values()) or 1
        rows.append({"who": part, "total": sum(split.values()),
                     "parts": [(k, split[k], 100 * split[k] / total) for k in split]})
    return rows


def shortened(phase: dict) -> str:
    """What a phase's words shortened, in full, for the line's title: the statements of the
    views it names."""
    return "; ".join(f"{who(v)} running {v['statement']}" for v in phase["figures"].get("views", [])
                     if v["statement"] and shorten(v["statement"], STATEMENT_SHOWN)
                     != " ".join(v["statement"].split()))


def story(rec: Recording, summary: dict) -> dict:
    told = summary["purge"]  # what summary() says of purge
    return {"parts": verdict_view.html_parts(summary, charts.VERDICT_COLORS, shortened),
            "notes": verdict_view.notes(summary),
            "timeline": timeline_chart(rec, told, summary.get("replica")), "history": told["history"],
            "splits": split_rows(told),
            "pinned_by": [{**v, "frames": frames, "path": path(frames, 4)}
                          for v in told["pinned_by"] for frames in [leaf_first(v["stack"])]],
            "statements_note": statements_note(told.get("statements", ""), told["pinned_by"])}


def throughput_chart(rec: Recording) -> Markup | None:
    rates = report_tables.purge_throughput(rec)
    if rates.empty:
        return None
    fig = charts.small_multiples(rates, "Purge throughput (per second)")
    return Markup(charts.fragment(fig, "purge-throughput"))


def flush_chart(rec: Recording) -> Markup | None:
    flush = redo.flush_series(rec)
    if flush.dropna(how="all").empty:
        return None
    return Markup(charts.fragment(charts.flush_figure(flush), "redo-flushing"))


def flame_document(svg: str) -> str:
    """The tool's SVG as the whole of a small HTML document, for a srcdoc frame: alone there,
    its script finds its own elements, and it stretches to the frame's width."""
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>html, body { margin: 0 } "
            "svg { display: block; width: 100% }</style></head><body>"
            f"{flamegraph.svg_element(svg)}</body></html>")


FLAME_NOTE = (f"{flamegraph.TOOL} is not installed here, so the flame graphs are not drawn "
              "(run scripts/setup.sh, or 'cargo install inferno'); "
              "'innostall export' still writes their folded stacks.")


def flame_graphs(rec: Recording, table: str) -> tuple[list[dict], str | None]:
    """The flame graphs drawn from one stack table, or why they are not drawn."""
    graphs = flamegraph.available(rec, table)
    if not graphs:
        return [], None
    tool = flamegraph.find_tool()
    if not tool:
        return [], FLAME_NOTE
    drawn = []
    for graph, stacks in graphs:
        svg = flamegraph.render_svg(stacks, graph.title, graph.unit, tool)
        drawn.append({"id": graph.element_id, "title": graph.title,
                      "document": flame_document(svg), "height": flamegraph.svg_height(svg)})
    return drawn, None


def hist_sections(rec: Recording, names: list[str]) -> list[dict]:
    present = report_tables.hist_names(rec)
    return [hist_section(rec, n) for n in names if n in present]


def walk_section(rec: Recording, summary: dict) -> dict:
    walks = report_tables.table_of(rec, "walks")
    flames, note = flame_graphs(rec, "walks")
    return {"summary": summary["version_walk"], "hists": hist_sections(rec, rec.schema.hists_of("version_walk")),
            "deepest": None if walks is None else report_tables.deepest_walks(walks).to_dict("records"),
            "flames": flames, "flame_note": note}


def latch_section(rec: Recording, summary: dict) -> dict:
    stacks = report_tables.table_of(rec, "wait_stacks")
    flames, note = flame_graphs(rec, "wait_stacks")
    by_latch, by_latch_note = flame_graphs(rec, "latch_stacks")
    flames, note = flames + by_latch, note or by_latch_note
    holder_flames, holder_note = flame_graphs(rec, "latch_holders")
    flames, note = flames + holder_flames, note or holder_note
    return {"summary": summary.get("block_lock"), "others": summary.get("other_latch"),
            "named": summary.get("latches"),
            "waits": hist_group_section(rec, report_tables.latch_hists(rec), "Latch wait time", "latch-waits"),
            "longest": None if stacks is None else report_tables.top_wait_stacks(stacks).to_dict("records"),
            "flames": flames, "flame_note": note}


def other_counters(rec: Recording) -> dict:
    """Every counter the purge and walk sections do not chart: a table, and a chart of the
    ones that moved."""
    names = [n for n in report_tables.counter_names(rec)
             if n not in report_tables.PURGE_COUNTERS and not report_tables.is_gauge(rec, n)]  # levels: in the timeline
    if not names:
        return {"rows": [], "chart": None}
    overview = report_tables.counter_overview(rec, names)
    moved = [n for n in names if overview.loc[n, "total"]]
    chart = None
    if moved:
        table = report_tables.interval_table(rec, moved)
        series = report_tables.per_second(table)
        for name in (n for n in moved if report_tables.is_running_max(rec, n)):  # drawn as the maximum so far
            series[name] = table[name].cumsum().reindex(series.index)
        fig = charts.small_multiples(series, "Counters (per second; running maxima as they grew)")
        chart = Markup(charts.fragment(fig, "other-counters"))
    rows = overview.reset_index().astype(object).where(overview.reset_index().notna(), None)
    return {"rows": rows.to_dict("records"), "chart": chart}


def summary_rows(rec: Recording, summary: dict) -> list[dict]:
    """The summary's figures as rows; a long recording's phases, thousands of them, are
    said in the verdict above and listed by report --json, not repeated here."""
    rows = metrics.summary_rows(summary).to_dict("records")
    for metric, phases in (("purge.phases", summary["purge"]["phases"]),
                           ("replica.phases", (summary.get("replica") or {}).get("phases", []))):
        if said := tally(phases):
            rows = [{**r, "value": said} if r["metric"] == metric else r for r in rows]
    return rows


def context(rec: Recording, summary: dict) -> dict:
    """What the page shows; summary is the recording's (summary.summary), which its callers
    make: the page stands below the summary, as the text does (views.py joins them)."""
    purge_hists = rec.schema.hists_of("purge")
    known = set(purge_hists) | set(rec.schema.hists_of("version_walk")) | set(report_tables.latch_hists(rec))
    target = rec.meta.get("target", {})
    return {
        "title": f"innostall report: {server_label(target.get('family'), target.get('version'))}",
        "path": rec.path,
        "facts": header_facts(rec),
        "probes": probe_rows(rec),
        "findings": summary["findings"],
        "advice": summary["advice"],
        "story": story(rec, summary),
        "purge_headline": purge_headline(summary["purge"], rec.duration_s),
        "summary_rows": summary_rows(rec, summary),
        "throughput": throughput_chart(rec),
        "flushing": flush_chart(rec),
        "flushing_lines": redo_words.redo_body(summary),
        "age_reads_per_s": redo.age_reads_per_s(rec),
        # the text's section, without its blank line and title
        "replica_lines": replica_section.text_lines(summary, replica_section.shown(rec), [])[2:],
        "flushing_note": (summary["server_state"].get("note") if not summary["server_state"].get("read") else None),
        "purge_hists": hist_sections(rec, purge_hists),
        "walks": walk_section(rec, summary),
        "latches": latch_section(rec, summary),
        "other_hists": [hist_section(rec, n) for n in report_tables.hist_names(rec) if n not in known],
        "counters": other_counters(rec),
        "cost": [line.strip() for line in cost.render_cost(summary["governor"])[2:]],
        "sampled": {"walks": cost.sampled_note(rec, "version_walk") + estimated_note(
                        summary["version_walk"].get("estimated"), {"reads": "reads that built versions"}),
                    "latches": cost.sampled_note(rec, "block_lock_s") + estimated_note(
                        summary["block_lock"].get("estimated"), {"waits": "waits", "total_wait_s": "s"})},
        "plotly_js": Markup(charts.plotly_js()),
        "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "version": __version__,
    }


def estimated_note(estimated: dict | None, units: dict[str, str]) -> str:
    """' [in all, estimated interval by interval: about ...]' beside a sampled section's title."""
    words = estimate_words(estimated, units)
    return f" [in all, estimated interval by interval: {words}]" if words else ""


def render_html(rec: Recording, summary: dict) -> str:
    return TEMPLATES.get_template("report.html.j2").render(context(rec, summary))


def write_html(rec: Recording, summary: dict, path: str) -> int:
    """Write the page; returns its size in bytes. An unwritable path is one line, and so is
    one through which another user could redirect it (as record -o: output_path.py), or a
    link, a FIFO or another file's hard link where the page goes (files.create_regular)."""
    check_path(os.path.dirname(os.path.abspath(path)))
    page = render_html(rec, summary).encode()
    try:
        with files.create_regular(path) as f:
            f.write(page)
    except OSError as e:
        raise UserError(f"{path}: cannot write the HTML report ({e.strerror})")
    except UserError as e:  # its open refused: said as the page's
        raise UserError(str(e).replace(f"{path}: cannot write (", f"{path}: cannot write the HTML report (", 1))
    return len(page)

