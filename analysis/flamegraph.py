"""Flame graphs of a recording's stack tables (deep version walks, latch waits): folded
stacks in Brendan Gregg's format (a;b;c N), drawn into SVG by inferno-flamegraph (the Rust crate
"inferno" from the Rust crate registry, installed by scripts/setup.sh). Any other renderer of folded
stacks can read our folded files."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pandas as pd

from innostall import resources
from innostall.errors import UserError

TOOL = "inferno-flamegraph"
NO_STACK = "[no stack]"


@dataclass(frozen=True)
class FlameGraph:
    """One flame graph of one stack table of a recording."""
    name: str  # file stem of its exports; its element id is derived from it
    table: str  # the Recording attribute holding the stacks (a 'stack' column, root first)
    weight: str | None  # the column summed per stack; None counts rows
    unit: str  # what one unit of weight is, as the graph labels it
    title: str
    leaf: str | None = None  # a column appended to each stack as its last frame

    @property
    def element_id(self) -> str:
        return "flame-" + self.name.replace(".", "-")


FLAME_GRAPHS = [
    FlameGraph("deep-walks.by-count", "walks", None, "walks", "Deep version walks, by number of walks"),
    FlameGraph("deep-walks.by-depth", "walks", "depth", "row versions",
               "Deep version walks, by row versions built"),
    FlameGraph("latch-waits.by-count", "wait_stacks", "waits", "waits",
               "Latch waits, by number of waits (leaf: the mode waited for)", leaf="mode"),
    FlameGraph("latch-waits.by-time", "wait_stacks", "wait_us", "µs waited",
               "Latch waits, by time waited (leaf: the mode waited for)", leaf="mode"),
    FlameGraph("latch-waiters.by-time", "latch_stacks", "wait_us", "µs waited",
               "Latch waiters of every latch, by time waited (leaf: the latch's name)", leaf="name"),
    FlameGraph("latch-holders.by-time", "latch_holders", "wait_us", "µs of waiting caused",
               "Latch holders: the stacks that released a latch others waited on, by the time "
               "those waits lasted (leaf: the holder's role)", leaf="role"),
]


def folded(rows: pd.DataFrame, weight: str | None = None, leaf: str | None = None) -> pd.Series:
    """Total weight per distinct stack (frames root first, joined by ';'), heaviest first:
    the rows counted, or a column summed and rounded to whole units."""
    for column in filter(None, [weight, leaf]):
        if column not in rows:
            raise ValueError(f"no column {column!r} to build the flame graph from")
    # a frame holding a newline would end the folded line early
    stacks = rows["stack"].fillna("").astype(str).str.replace("\n", " ", regex=False)
    stacks = stacks.where(stacks.str.strip(";") != "", NO_STACK)
    if leaf:
        stacks = stacks + ";[" + rows[leaf].astype(str) + "]"
    values = rows[weight].astype("float64") if weight else pd.Series(1.0, index=rows.index)
    totals = values.groupby(stacks.to_numpy()).sum().round().astype("int64")
    return totals[totals > 0].sort_values(ascending=False, kind="stable").rename_axis("stack")


def folded_text(stacks: pd.Series) -> str:
    return "".join(f"{stack} {int(n)}\n" for stack, n in stacks.items())


def available(rec, table: str | None = None) -> list[tuple[FlameGraph, pd.Series]]:
    """The flame graphs this recording has stacks for, with their folded stacks: all of
    them, or those drawn from one table (the HTML report asks table by table, and folding
    the others each time was a fifth of its time)."""
    graphs = []
    for graph in FLAME_GRAPHS if table is None else [g for g in FLAME_GRAPHS if g.table == table]:
        rows = getattr(rec, graph.table, None)  # older recordings lack newer tables
        if rows is not None and len(rows):
            stacks = folded(rows, graph.weight, graph.leaf)
            if len(stacks):
                graphs.append((graph, stacks))
    return graphs


def find_tool() -> str | None:
    """inferno-flamegraph on PATH, beside this Python (a venv's bin), or ours: the one an
    installed release carries, or in a checkout where the project's set-up script installs it."""
    search = os.pathsep.join([os.environ.get("PATH", ""), os.path.dirname(sys.executable),
                              str(resources.flamegraph_tool().parent)])
    return shutil.which(TOOL, path=search)


def render_svg(stacks: pd.Series, title: str, unit: str, tool: str | None = None) -> str:
    """The flame graph SVG (with its own zoom and search scripts) drawn by the real tool."""
    tool = tool or find_tool()
    if not tool:
        raise UserError(resources.how_to_get(TOOL) + " (or put one on PATH: 'cargo install inferno')")
    # frames are long C++ signatures: keep their start (the function name) when cut
    command = [tool, "--title", title, "--countname", unit, "--hash", "--minwidth", "0.05",
               "--truncate-text-right"]
    try:
        done = subprocess.run(command, input=folded_text(stacks), capture_output=True,
                              text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UserError(f"{TOOL} failed to run: {e}")
    if done.returncode:
        reason = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise UserError(f"{TOOL} failed (exit {done.returncode}): {reason}")
    return done.stdout


def svg_height(svg: str) -> int:
    """The height the tool gave the drawing, to size the frame that embeds it."""
    found = re.search(r'<svg\b[^>]*?\bheight="(\d+)', svg)
    return int(found.group(1)) if found else 400


def svg_element(svg: str) -> str:
    """The <svg> element alone, without the XML prolog and DOCTYPE of a standalone file."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg
