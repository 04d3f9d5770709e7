"""Plotly figures of the report tables, and their HTML fragments for offline pages.

Plotly draws a few HTML tags found in text (<b>, <br>, ...); C++ names are full of < and >,
so every string from a recording goes through label() first (Plotly shows the entities as
the characters they stand for)."""
from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

HEIGHT = 320
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
LAYOUT = dict(template="plotly_white", height=HEIGHT, margin=dict(l=60, r=20, t=40, b=50),
              hovermode="x unified", legend=dict(orientation="h", y=1.12, x=0))
CONFIG = {"displaylogo": False, "responsive": True}


def label(text: object) -> str:
    return html.escape(str(text), quote=False)


def hist_figure(slots: pd.DataFrame, title: str, unit: str) -> go.Figure:
    """A log2 histogram as bars, one per power-of-two range, with a linear/log count switch
    (one large bar otherwise hides the small ones)."""
    bars = go.Bar(x=slots["label"], y=slots["count"], marker_color=COLORS[0],
                  hovertemplate=f"%{{x}} {label(unit)}: %{{y}}<extra></extra>")
    fig = go.Figure(bars)
    fig.update_layout(**{**LAYOUT, "hovermode": "closest", "margin": dict(l=60, r=20, t=80, b=50)},
                      title=label(title), bargap=0.05, updatemenus=[scale_switch()])
    fig.update_xaxes(title=label(f"{unit} (log2 ranges)"), type="category")
    fig.update_yaxes(title="count")
    return fig


def hist_group_figure(groups: dict[str, pd.DataFrame], title: str, unit: str) -> go.Figure:
    """Several log2 histograms over the same ranges as grouped bars, one colour each."""
    fig = go.Figure()
    for i, (name, slots) in enumerate(groups.items()):
        fig.add_trace(go.Bar(x=slots["label"], y=slots["count"], name=label(name),
                             marker_color=COLORS[i % len(COLORS)],
                             hovertemplate=f"{label(name)}: %{{x}} {label(unit)}: %{{y}}<extra></extra>"))
    fig.update_layout(**{**LAYOUT, "hovermode": "closest", "margin": dict(l=60, r=20, t=80, b=50)},
                      title=label(title), barmode="group", bargap=0.1, updatemenus=[scale_switch()])
    fig.update_xaxes(title=label(f"{unit} (log2 ranges)"), type="category")
    fig.update_yaxes(title="count")
    return fig


def scale_switch() -> dict:
    return dict(type="buttons", direction="left", x=1, xanchor="right", y=1.02, yanchor="bottom",
                showactive=True, font=dict(size=11),
                buttons=[dict(label="linear", method="relayout", args=[{"yaxis.type": "linear"}]),
                         dict(label="log", method="relayout", args=[{"yaxis.type": "log"}])])


def heatmap_figure(over_time: pd.DataFrame, slots: pd.DataFrame, title: str, unit: str) -> go.Figure:
    """A histogram per interval: time across, log2 range up. Colour is the log of the count,
    so a few events stand out beside a burst; empty cells stay blank; hover shows counts."""
    counts = over_time.to_numpy().T
    with np.errstate(divide="ignore"):
        shade = np.where(counts > 0, np.log10(np.maximum(counts, 1)), np.nan)
    top = max(1, int(np.ceil(np.nanmax(shade)))) if np.isfinite(shade).any() else 1
    labels = slots.set_index("slot")["label"].reindex(over_time.columns).fillna("")
    cells = go.Heatmap(x=over_time.index, y=[label(s) for s in labels], z=shade, customdata=counts,
                       colorscale="Viridis", zmin=0, zmax=top,
                       colorbar=dict(title="count", tickvals=list(range(top + 1)),
                                     ticktext=[f"{10 ** i:g}" for i in range(top + 1)]),
                       hovertemplate=f"t %{{x:.1f}} s<br>%{{y}} {label(unit)}: %{{customdata}}<extra></extra>")
    fig = go.Figure(cells)
    fig.update_layout(**{**LAYOUT, "hovermode": "closest"}, title=label(title))
    fig.update_xaxes(title="seconds since attach")
    fig.update_yaxes(title=label(unit), type="category")
    return fig


def small_multiples(rates: pd.DataFrame, title: str) -> go.Figure:
    """One row per column, sharing the time axis: series of unrelated scales stay readable."""
    rows = len(rates.columns)
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.3 / rows,
                        subplot_titles=[label(c) for c in rates.columns])
    for i, column in enumerate(rates.columns, start=1):
        fig.add_trace(go.Scatter(x=rates.index, y=rates[column], name=label(column), mode="lines",
                                 line=dict(color=COLORS[(i - 1) % len(COLORS)], width=1.5),
                                 hovertemplate="%{y:.4g}"), row=i, col=1)
    fig.update_layout(**{**LAYOUT, "height": 100 + 140 * rows, "margin": dict(l=60, r=20, t=70, b=50)},
                      title=label(title), showlegend=False)
    fig.update_xaxes(title="seconds since attach", row=rows, col=1)
    fig.update_yaxes(rangemode="tozero")  # a steady 1/s must not look like noise
    return fig


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


def timeline_figure(story: pd.DataFrame, spans: pd.DataFrame, phases: list[dict]) -> go.Figure:
    """The recording at a glance: one row per measure, all on one time axis; the history
    stacked as its pinned and purgeable parts (a line where the split is unknown), the read
    views that pinned purge as spans, and the phases as coloured bands with their verdict."""
    titles = [t for t, _, _ in TIMELINE_ROWS] + ["Read views that pinned purge"]
    span_rows = max(1, len(spans))
    heights = [2.2, 1, 1, 1, 1, 0.35 + 0.3 * span_rows]
    fig = make_subplots(rows=len(titles), cols=1, shared_xaxes=True, vertical_spacing=0.05,
                        row_heights=heights, subplot_titles=[label(t) for t in titles])
    for row, (_, columns, colors) in enumerate(TIMELINE_ROWS, start=1):
        stacked = row == 1
        for column, color in zip(columns, colors):
            # a stack draws a gap as 0: give it only the intervals whose split is known
            series = story[column].dropna() if stacked else story[column]
            fig.add_trace(go.Scatter(
                x=series.index, y=series, name=label(column), mode="lines",
                # a rate holds over its interval, which ends at its time: drawn as steps
                line=dict(color=color, width=1.5, shape="linear" if stacked else "vh"),
                stackgroup="history" if stacked else None,
                fillcolor=translucent(color) if stacked else None, connectgaps=False,
                hovertemplate=f"{label(column)} %{{y:,.4~g}}<extra></extra>"), row=row, col=1)
    fig.add_trace(go.Scatter(x=story.index, y=story["history"], name="history", mode="lines",
                             line=dict(color="#1d2330", width=1, dash="dot"), connectgaps=False,
                             hovertemplate="history %{y:,.0f}<extra></extra>"), row=1, col=1)
    add_spans(fig, spans, len(titles))
    add_phase_bands(fig, phases)
    if story["history"].isna().all():
        fig.add_annotation(text="history length not recorded", xref="x domain", yref="y domain",
                           x=0.5, y=0.5, showarrow=False, font=dict(color="#5c6475"))
        fig.update_yaxes(range=[0, 1], showticklabels=False, row=1, col=1)
    fig.update_layout(**{**LAYOUT, "height": 260 + 520 + 60 * span_rows,
                         "margin": dict(l=130, r=20, t=100, b=50),
                         "legend": dict(orientation="h", yanchor="bottom", y=1.03, x=0)},
                      showlegend=True)
    fig.update_yaxes(rangemode="tozero")
    fig.update_yaxes(type="category", rangemode="normal", row=len(titles), col=1)
    fig.update_xaxes(title="seconds since attach", row=len(titles), col=1)
    fig.update_xaxes(range=[0, max(story.index.max() if len(story) else 1, 1)])
    return fig


def translucent(color: str, alpha: float = 0.35) -> str:
    red, green, blue = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def add_spans(fig: go.Figure, spans: pd.DataFrame, row: int) -> None:
    """Each view as a thick bar from its opening to the last snapshot that saw it."""
    if spans.empty:
        fig.add_trace(go.Scatter(x=[0], y=["none"], mode="markers", marker=dict(opacity=0),
                                 showlegend=False, hoverinfo="skip"), row=row, col=1)
        fig.add_annotation(text="no read view pinned purge", xref=f"x{row} domain",
                           yref=f"y{row} domain", x=0.5, y=0.5, showarrow=False,
                           font=dict(color="#5c6475"))
        return
    for span in spans.itertuples():
        fig.add_trace(go.Scatter(x=[span.from_s, span.to_s], y=[label(span.label)] * 2, mode="lines",
                                 line=dict(color="#d62728", width=12), showlegend=False,
                                 name=label(span.label), hovertemplate=label(span.hover) + "<extra></extra>"),
                      row=row, col=1)


def add_phase_bands(fig: go.Figure, phases: list[dict]) -> None:
    """Each phase as a band over every row, its verdict written at the top of the first.
    Set in one layout update: adding shapes one by one re-checks the whole layout each
    time, and an hour of phases took minutes."""
    shapes = [dict(type="rect", xref="x", yref="paper", x0=p["from_s"], x1=p["to_s"], y0=0, y1=1,
                   fillcolor=VERDICT_COLORS.get(p["verdict"], "#cccccc"), opacity=0.12,
                   line_width=0, layer="below") for p in phases]
    notes = [dict(x=(p["from_s"] + p["to_s"]) / 2, y=1.0, xref="x", yref="y domain", yanchor="top",
                  showarrow=False, text=label(p["verdict"].replace("_", " ")),
                  font=dict(size=11, color=VERDICT_COLORS.get(p["verdict"], "#555555")),
                  hovertext=label(p["detail"])) for p in phases]
    fig.update_layout(shapes=list(fig.layout.shapes) + shapes,
                      annotations=list(fig.layout.annotations) + notes)


def fragment(fig: go.Figure, div_id: str) -> str:
    """The figure as a <div> and its drawing script; plotly.js itself goes in once per page
    (see plotly_js). Plotly writes its JSON with <, > and / escaped, safe inside <script>."""
    return pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=div_id,
                       config=CONFIG, default_height=f"{fig.layout.height or HEIGHT}px")


def plotly_js() -> str:
    """The plotly.js bundle shipped inside the Python package, to inline in the page."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()
