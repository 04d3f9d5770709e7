"""The terminal report of one recording: the header, the verdict, and each section's lines
(analysis/sections/), the findings and the histograms as bcc's tools print them."""
from __future__ import annotations

import datetime as dt

from innostall.names import demangle, server_label

from . import verdict_view
from .recording import Recording
from .summary import ended_by, measured, section_findings, warnings, with_findings
from .window import trigger_words, window_words


def header(rec: Recording) -> list[str]:
    meta, target = rec.meta, rec.meta["target"]
    server = server_label(target.get("family"), target.get("version"))
    started = meta.get("start_real_ns")
    when = (dt.datetime.fromtimestamp(started / 1e9, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
            if started else "unknown time")
    ending = ended_by(rec)
    lines = [f"innostall report: {rec.path}",
             f"  server    {server} (pid {target.get('pid')}, {target.get('exe')})",
             f"  recorded  {when}, {rec.duration_s:.1f} s at {meta['interval_s']:g} s intervals, "
             + (ending if ending.startswith("still") else f"ended by {ending}")]
    if saved := trigger_words(meta):
        lines.append(f"  trigger   {saved}")
    if rec.window:
        lines.append(f"  window    {window_words(rec.window)}")
    for p in meta["probes"]:
        told = p["attached"] or (p["reason"] or "").startswith(("not needed", "not available"))
        state = demangle(p["symbol"]) if p["attached"] else p["reason"] if told else f"missing: {p['reason']}"
        lines.append(f"  probe     {p['name']:<14} {state}")
    lines += [f"  warning   {text}" for text in warnings(rec)]
    return lines


def render_text(rec: Recording) -> str:
    """The header, the verdict, then each section's lines (its findings in it), in the order
    the sections are told."""
    told = measured(rec)
    found = section_findings(rec, told)
    head = header(rec)
    lines = head[:1] + verdict_view.text_lines(with_findings(told, found)) + [""] + head[1:]
    for section, texts in found:
        lines += section.text_lines(rec, told, texts)
    return "\n".join(lines)
