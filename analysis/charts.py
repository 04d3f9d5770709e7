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
    return fig


def fragment(fig: go.Figure, div_id: str) -> str:
    """The figure as a <div> and its drawing script; plotly.js itself goes in once per page
    (see plotly_js). Plotly writes its JSON with <, > and / escaped, safe inside <script>."""
    return pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=div_id,
                       config=CONFIG, default_height=f"{fig.layout.height or HEIGHT}px")


def plotly_js() -> str:
    """The plotly.js bundle shipped inside the Python package, to inline in the page."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()
