"""Plotly figures of the report tables, as the plain dicts plotly.js draws (data, layout),
and their HTML fragments for offline pages. Built without plotly's figure objects: they
validate every property as it is set, which took most of a report's time.

Plotly draws a few HTML tags found in text (<b>, <br>, ...); C++ names are full of < and >,
so every string from a recording goes through label() first (Plotly shows the entities as
the characters they stand for)."""
from __future__ import annotations

import hashlib
import html
import re
from functools import cache

import numpy as np
import pandas as pd
import plotly.io as pio
from plotly.io.json import to_json_plotly

from . import downsample

HEIGHT = 320
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
LAYOUT = dict(height=HEIGHT, margin=dict(l=60, r=20, t=40, b=50),
              hovermode="x unified", legend=dict(orientation="h", y=1.12, x=0))
CONFIG = {"displaylogo": False, "responsive": True}
TEMPLATE = "plotly_white"  # set once in the page (plotly_js), not in every figure
SUBPLOT_TITLE_SIZE = 16  # plotly's own for subplot titles


def label(text: object) -> str:
    return html.escape(str(text), quote=False)


def figure(data: list[dict], **layout) -> dict:
    return {"data": data, "layout": {**LAYOUT, **layout}}


def hist_layout(title: str, unit: str, **more) -> dict:
    return dict(hovermode="closest", margin=dict(l=60, r=20, t=80, b=50), title=dict(text=label(title)),
                updatemenus=[scale_switch()], xaxis=dict(title=dict(text=label(f"{unit} (log2 ranges)")),
                                                          type="category"),
                yaxis=dict(title=dict(text="count")), **more)


def hist_figure(slots: pd.DataFrame, title: str, unit: str) -> dict:
    """A log2 histogram as bars, one per power-of-two range, with a linear/log count switch
    (one large bar otherwise hides the small ones)."""
    bars = dict(type="bar", x=list(slots["label"]), y=slots["count"].tolist(), marker=dict(color=COLORS[0]),
                hovertemplate=f"%{{x}} {label(unit)}: %{{y}}<extra></extra>")
    return figure([bars], **hist_layout(title, unit, bargap=0.05))


def hist_group_figure(groups: dict[str, pd.DataFrame], title: str, unit: str) -> dict:
    """Several log2 histograms over the same ranges as grouped bars, one colour each."""
    bars = [dict(type="bar", x=list(slots["label"]), y=slots["count"].tolist(), name=label(name),
                 marker=dict(color=COLORS[i % len(COLORS)]),
                 hovertemplate=f"{label(name)}: %{{x}} {label(unit)}: %{{y}}<extra></extra>")
            for i, (name, slots) in enumerate(groups.items())]
    return figure(bars, **hist_layout(title, unit, barmode="group", bargap=0.1))


def scale_switch() -> dict:
    return dict(type="buttons", direction="left", x=1, xanchor="right", y=1.02, yanchor="bottom",
                showactive=True, font=dict(size=11),
                buttons=[dict(label="linear", method="relayout", args=[{"yaxis.type": "linear"}]),
                         dict(label="log", method="relayout", args=[{"yaxis.type": "log"}])])


def heatmap_figure(over_time: pd.DataFrame, slots: pd.DataFrame, title: str, unit: str) -> dict:
    """A histogram per interval: time across, log2 range up. Colour is the log of the count,
    so a few events stand out beside a burst; empty cells stay blank; hover shows counts.
    A long recording's intervals are added up in buckets, and the title says so."""
    title += downsample.note(len(over_time), "sum")
    over_time = downsample.bucket_sums(over_time)
    counts = over_time.to_numpy().T
    with np.errstate(divide="ignore"):
        shade = np.where(counts > 0, np.log10(np.maximum(counts, 1)), np.nan)
    top = max(1, int(np.ceil(np.nanmax(shade)))) if np.isfinite(shade).any() else 1
    labels = slots.set_index("slot")["label"].reindex(over_time.columns).fillna("")
    cells = dict(type="heatmap", x=over_time.index.tolist(), y=[label(s) for s in labels], z=shade,
                 customdata=counts, colorscale="Viridis", zmin=0, zmax=top,
                 colorbar=dict(title=dict(text="count"), tickvals=list(range(top + 1)),
                               ticktext=[f"{10 ** i:g}" for i in range(top + 1)]),
                 hovertemplate=f"t %{{x:.1f}} s<br>%{{y}} {label(unit)}: %{{customdata}}<extra></extra>")
    return figure([cells], hovermode="closest", title=dict(text=label(title)),
                  xaxis=dict(title=dict(text="seconds since attach")),
                  yaxis=dict(title=dict(text=label(unit)), type="category"))


def rows_layout(titles: list[str], heights: list[float], spacing: float) -> dict:
    """Axes for charts stacked in rows over one shared time axis (plotly's make_subplots
    with shared_xaxes, cols=1): row i (from 1, the top) draws on axes x{i}/y{i}; the bottom
    axis carries the ticks and the others follow it; each row's title above it."""
    rows, total = len(titles), sum(heights)
    scale = (1 - spacing * (rows - 1)) / total
    layout, top = {"annotations": []}, 1.0
    for i, (title, height) in enumerate(zip(titles, heights), start=1):
        bottom = top - height * scale
        layout[axis("xaxis", i)] = dict(anchor=axis("y", i), domain=[0.0, 1.0],
                                        **({} if i == rows else {"matches": axis("x", rows),
                                                                 "showticklabels": False}))
        layout[axis("yaxis", i)] = dict(anchor=axis("x", i), domain=[max(0.0, bottom), top])
        layout["annotations"].append(dict(text=title, x=0.5, y=top, xref="paper", yref="paper",
                                          xanchor="center", yanchor="bottom", showarrow=False,
                                          font=dict(size=SUBPLOT_TITLE_SIZE)))
        top = bottom - spacing
    return layout


def axis(name: str, row: int) -> str:
    """Row 1's axes are x, y (xaxis, yaxis); row i's x{i}, y{i}."""
    return name if row == 1 else f"{name}{row}"


def small_multiples(rates: pd.DataFrame, title: str) -> dict:
    """One row per column, sharing the time axis: series of unrelated scales stay readable."""
    rows = len(rates.columns)
    title += downsample.note(len(rates))
    layout = rows_layout([label(c) for c in rates.columns], [1] * rows, 0.3 / rows)
    data = [dict(type="scatter", x=series.index.tolist(), y=series.tolist(), name=label(column),
                 mode="lines", xaxis=axis("x", i), yaxis=axis("y", i),
                 line=dict(color=COLORS[(i - 1) % len(COLORS)], width=1.5), hovertemplate="%{y:.4g}")
            for i, column in enumerate(rates.columns, start=1) for series in [downsample.envelope(rates[column])]]
    for i in range(1, rows + 1):
        layout[axis("yaxis", i)]["rangemode"] = "tozero"  # a steady 1/s must not look like noise
    layout[axis("xaxis", rows)]["title"] = dict(text="seconds since attach")
    return figure(data, **layout, height=100 + 140 * rows, margin=dict(l=60, r=20, t=70, b=50),
                  title=dict(text=label(title)), showlegend=False)


# The phases' colours: calm for idle and keeping up, warm for what needs a look.
VERDICT_COLORS = {"idle": "#9e9e9e", "keeping_up": "#2ca02c", "pinned": "#d62728",
                  "catching_up": "#1f77b4", "falling_behind": "#ff7f0e", "throttled": "#9467bd",
                  "not_recorded": "#e0e0e0"}
TIMELINE_ROWS = [  # title, columns of the story table drawn in it, colours
    ("History list (transactions)", ["pinned", "purgeable"], ["#d62728", "#1f77b4"]),
    ("Purge: undo pages/s", ["purge pages/s"], ["#2ca02c"]),
    ("DML delay (innodb_max_purge_lag), ms/s", ["DML delay ms/s"], ["#9467bd"]),
    ("Deep version walks/s", ["deep walks/s"], ["#8c564b"]),
    ("Latch wait, ms/s", ["block-lock wait ms/s", "other latch wait ms/s"], ["#ff7f0e", "#bcbd22"]),
]


def timeline_figure(story: pd.DataFrame, spans: pd.DataFrame, phases: list[dict],
                    extra_rows: list[tuple] = ()) -> dict:
    """The recording at a glance: one row per measure, all on one time axis; the history
    stacked as its pinned and purgeable parts (a line where the split is unknown), the read
    views that pinned purge as spans, and the phases as coloured bands with their verdict.
    extra_rows: more rows as TIMELINE_ROWS gives them (a replica's lag and its applier's
    time), drawn above the views from columns of story."""
    rows = [*TIMELINE_ROWS, *extra_rows]
    titles = [t for t, _, _ in rows] + ["Read views that pinned purge"]
    whole, stacked_rows = len(story), downsample.envelope_rows(story, "history")
    span_rows = max(1, len(spans))
    last = len(titles)
    layout = rows_layout([label(t) for t in titles], [2.2] + [1] * (len(rows) - 1) + [0.35 + 0.3 * span_rows],
                         0.05 if len(rows) <= len(TIMELINE_ROWS) else 0.035)
    data = []
    for row, (_, columns, colors) in enumerate(rows, start=1):
        stacked = row == 1
        for column, color in zip(columns, colors):
            # a stack draws a gap as 0: give it only the intervals whose split is known
            series = stacked_rows[column].dropna() if stacked else downsample.envelope(story[column])
            data.append(dict(
                type="scatter", x=series.index.tolist(), y=series.tolist(), name=label(column), mode="lines",
                xaxis=axis("x", row), yaxis=axis("y", row),
                # a rate holds over its interval, which ends at its time: drawn as steps
                line=dict(color=color, width=1.5, shape="linear" if stacked else "vh"),
                connectgaps=False, hovertemplate=f"{label(column)} %{{y:,.4~g}}<extra></extra>",
                **(dict(stackgroup="history", fillcolor=translucent(color)) if stacked else {})))
    data.append(dict(type="scatter", x=stacked_rows.index.tolist(), y=stacked_rows["history"].tolist(),
                     name="history",
                     mode="lines", line=dict(color="#1d2330", width=1, dash="dot"), connectgaps=False,
                     xaxis="x", yaxis="y", hovertemplate="history %{y:,.0f}<extra></extra>"))
    for row in range(1, last):
        layout[axis("yaxis", row)]["rangemode"] = "tozero"
    layout[axis("yaxis", last)].update(type="category", rangemode="normal")
    if story["history"].isna().all():
        layout["annotations"].append(dict(text="history length not recorded", xref="x domain",
                                          yref="y domain", x=0.5, y=0.5, showarrow=False,
                                          font=dict(color="#5c6475")))
        layout["yaxis"].update(range=[0, 1], showticklabels=False)
    data += spans_traces(spans, last, layout)
    layout["shapes"], notes = phase_bands(phases, story.index.max() if len(story) else 1)
    layout["annotations"] += notes
    end = max(story.index.max() if len(story) else 1, 1)
    for row in range(1, last + 1):
        layout[axis("xaxis", row)]["range"] = [0, end]
    layout[axis("xaxis", last)]["title"] = dict(text="seconds since attach" + downsample.note(whole))
    return figure(data, **layout, height=260 + 520 + 110 * len(extra_rows) + 60 * span_rows,
                  margin=dict(l=130, r=20, t=100, b=50),
                  legend=dict(orientation="h", yanchor="bottom", y=1.03, x=0), showlegend=True)


FLUSH_ROWS = [  # title, (column of the flush table, colour, dash) drawn in it
    ("Checkpoint age and the flush points, MiB", [("checkpoint age (peak)", "#d62728", "solid"),
                                                  ("async flush point", "#ff7f0e", "dash"),
                                                  ("sync flush point", "#9467bd", "dot")]),
    ("Redo written, MiB/s", [("redo MiB/s", "#1f77b4", "solid"),
                             ("purge coordinator redo MiB/s", "#ff7f0e", "dash"),
                             ("purge worker redo MiB/s", "#2ca02c", "dot")]),
    ("Buffer pool pages", [("dirty pages", "#8c564b", "solid"), ("free pages", "#2ca02c", "solid")]),
    ("Pages written by the page cleaners, per second", [("flush list pages/s", "#e377c2", "solid"),
                                                        ("LRU list pages/s", "#7f7f7f", "dash")]),
    ("Undo log pages", [("undo log pages", "#17becf", "solid"), ("undo pages cached", "#bcbd22", "dash")]),
]


def flush_figure(flush: pd.DataFrame) -> dict:
    """Redo and flushing on the recording's time axis (analysis/redo.py's flush_series):
    the checkpoint age against the server's own points, the redo rate, the buffer pool's
    dirty and free pages, the pages the page cleaners wrote, the undo logs' size; a row whose columns were never read is left
    out."""
    rows = [(title, [c for c in columns if c[0] in flush and flush[c[0]].notna().any()])
            for title, columns in FLUSH_ROWS]
    rows = [(title, columns) for title, columns in rows if columns]
    layout = rows_layout([label(t) for t, _ in rows], [1.4] + [1] * (len(rows) - 1), 0.3 / len(rows))
    data = [dict(type="scatter", x=series.index.tolist(), y=series.tolist(), name=label(column), mode="lines",
                 xaxis=axis("x", i), yaxis=axis("y", i), line=dict(color=color, width=1.5, dash=dash),
                 connectgaps=False, hovertemplate=f"{label(column)} %{{y:,.4~g}}<extra></extra>")
            for i, (_, columns) in enumerate(rows, start=1) for column, color, dash in columns
            for series in [downsample.envelope(flush[column])]]
    for i in range(1, len(rows) + 1):
        layout[axis("yaxis", i)]["rangemode"] = "tozero"
    layout[axis("xaxis", len(rows))]["title"] = dict(text="seconds since attach" + downsample.note(len(flush)))
    return figure(data, **layout, height=150 + 170 * len(rows), margin=dict(l=60, r=20, t=110, b=50),
                  legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0), showlegend=True)


def translucent(color: str, alpha: float = 0.35) -> str:
    red, green, blue = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def spans_traces(spans: pd.DataFrame, row: int, layout: dict) -> list[dict]:
    """Each view as a thick bar from its opening to the last snapshot that saw it."""
    on_row = dict(xaxis=axis("x", row), yaxis=axis("y", row))
    if spans.empty:
        layout["annotations"].append(dict(text="no read view pinned purge", xref=f"x{row} domain",
                                          yref=f"y{row} domain", x=0.5, y=0.5, showarrow=False,
                                          font=dict(color="#5c6475")))
        return [dict(type="scatter", x=[0], y=["none"], mode="markers", marker=dict(opacity=0),
                     showlegend=False, hoverinfo="skip", **on_row)]
    return [dict(type="scatter", x=[span.from_s, span.to_s], y=[label(span.label)] * 2, mode="lines",
                 line=dict(color="#d62728", width=12), showlegend=False, name=label(span.label),
                 hovertemplate=label(span.hover) + "<extra></extra>", **on_row)
            for span in spans.itertuples()]


LABELED_WIDTH = 1 / 60  # of the time axis: a narrower phase's band has no verdict written on it


def phase_bands(phases: list[dict], end: float) -> tuple[list[dict], list[dict]]:
    """Each phase as a band over every row (shapes), its verdict written at the top of the
    first (annotations) where the band is wide enough to hold it: a long recording's
    thousands of short phases would write over each other (their bands still show)."""
    shapes = [dict(type="rect", xref="x", yref="paper", x0=p["from_s"], x1=p["to_s"], y0=0, y1=1,
                   fillcolor=VERDICT_COLORS.get(p["verdict"], "#cccccc"), opacity=0.12,
                   line=dict(width=0), layer="below") for p in phases]
    notes = [dict(x=(p["from_s"] + p["to_s"]) / 2, y=1.0, xref="x", yref="y domain", yanchor="top",
                  showarrow=False, text=label(p["verdict"].replace("_", " ")),
                  font=dict(size=11, color=VERDICT_COLORS.get(p["verdict"], "#555555")),
                  hovertext=label(p["detail"])) for p in phases
             if len(phases) <= 1 / LABELED_WIDTH or p["to_s"] - p["from_s"] >= LABELED_WIDTH * end]
    return shapes, notes


def element_id(name: str) -> str:
    """An element id from a name that may hold anything (a histogram's, from a recording),
    safe in an attribute and a script's string: letters, digits, - and _ kept, anything else
    as _, and then a hash of the name to keep two names apart."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    if safe == name:
        return name
    return f"{safe[:80]}-{hashlib.sha1(name.encode('utf-8', 'replace')).hexdigest()[:8]}"


def fragment(fig: dict, div_id: str) -> str:
    """The figure as a <div> and its drawing call; plotly.js and the template go in once per
    page (plotly_js). The JSON is plotly's own encoding (NaN as null) with <, > and / escaped,
    so that nothing in it can close the <script>."""
    div_id = element_id(div_id)
    spec = to_json_plotly({"data": fig["data"], "layout": fig["layout"]})
    spec = spec.replace("<", "\\u003c").replace(">", "\\u003e").replace("/", "\\/")
    height = fig["layout"].get("height", HEIGHT)
    return (f'<div id="{div_id}" class="plotly-graph-div" style="height:{height}px; width:100%;"></div>\n'
            f'<script>innostallPlot("{div_id}", {spec});</script>')


@cache
def plotly_js() -> str:
    """The plotly.js bundle shipped inside the Python package, to inline in the page, and
    the one function every chart is drawn with, under the page's template."""
    from plotly.offline import get_plotlyjs

    template = to_json_plotly(pio.templates[TEMPLATE].to_plotly_json()).replace("/", "\\/")
    return (get_plotlyjs() + f"\nvar innostallTemplate = {template};\n"
            "function innostallPlot(id, fig) {\n"
            "  fig.layout.template = innostallTemplate;\n"
            f"  Plotly.newPlot(id, fig.data, fig.layout, {to_json_plotly(CONFIG)});\n"
            "}\n")
