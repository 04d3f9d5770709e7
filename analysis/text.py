"""The terminal report of one recording: the header, the verdict, and each section's lines
(analysis/sections/), the findings and the histograms as bcc's tools print them. It renders
a Report (report_parts.py, made by summary.report): the figures, the findings and what the
sections show, never the recording."""
from __future__ import annotations

import datetime as dt

from innostall.names import demangle, server_label

from . import verdict_view
from .advice import advise
from .advice.advice_text import render_advice
from .report_parts import Report, with_findings
from .window import trigger_words, window_words


def header(facts: dict) -> list[str]:
    meta, target = facts["meta"], facts["meta"]["target"]
    server = server_label(target.get("family"), target.get("version"))
    started = meta.get("start_real_ns")
    when = (dt.datetime.fromtimestamp(started / 1e9, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
            if started else "unknown time")
    ending = facts["ended_by"]
    lines = [f"innostall report: {facts['path']}",
             f"  server    {server} (pid {target.get('pid')}, {target.get('exe')})",
             f"  recorded  {when}, {facts['duration_s']:.1f} s at {meta['interval_s']:g} s intervals, "
             + (ending if ending.startswith("still") else f"ended by {ending}")]
    if saved := trigger_words(meta):
        lines.append(f"  trigger   {saved}")
    if facts["window"]:
        lines.append(f"  window    {window_words(facts['window'])}")
    for p in meta["probes"]:
        told = p["attached"] or (p["reason"] or "").startswith(("not needed", "not available"))
        state = demangle(p["symbol"]) if p["attached"] else p["reason"] if told else f"missing: {p['reason']}"
        lines.append(f"  probe     {p['name']:<14} {state}")
    lines += [f"  warning   {text}" for text in facts["warnings"]]
    return lines


def text_of(shown: Report) -> str:
    """The header, the verdict, then each section's lines (its findings in it), in the order
    the sections are told."""
    head = header(shown.header)
    lines = head[:1] + verdict_view.text_lines(with_findings(shown.told, shown.found)) + [""] + head[1:]
    for section, texts in shown.found:
        lines += section.text_lines(shown.told, shown.drawn[section], texts)
    return "\n".join(lines + ["", advice_text(with_findings(shown.told, shown.found), shown.header["meta"])])


def advice_text(told: dict, meta: dict) -> str:
    return render_advice(advise(told, meta))

