"""Flame graphs of deep version walks: folded stacks in Brendan Gregg's format (a;b;c N),
drawn into SVG by inferno-flamegraph (crates.io "inferno", installed by
scripts/setup-report-tools.sh). Any other renderer of folded stacks can read our files."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from innostall.errors import UserError

TOOL = "inferno-flamegraph"
# weight -> what one unit of it is, as the flame graph names it
WEIGHTS = {"walks": "walks", "depth": "row versions"}
NO_STACK = "[no stack]"


def folded(walks: pd.DataFrame, weight: str = "walks") -> pd.Series:
    """Weight per distinct stack (root first, frames joined by ';'), heaviest first: the
    number of walks, or the row versions they built (their total depth)."""
    if weight not in WEIGHTS:
        raise ValueError(f"weight must be one of {', '.join(WEIGHTS)}")
    # a frame holding a newline would end the folded line early
    stacks = walks["stack"].fillna("").astype(str).str.replace("\n", " ", regex=False)
    stacks = stacks.where(stacks.str.strip(";") != "", NO_STACK)
    values = walks["depth"].astype("int64") if weight == "depth" else pd.Series(1, index=walks.index)
    totals = values.groupby(stacks.to_numpy()).sum()
    return totals[totals > 0].sort_values(ascending=False, kind="stable").rename_axis("stack")


def folded_text(stacks: pd.Series) -> str:
    return "".join(f"{stack} {int(n)}\n" for stack, n in stacks.items())


def find_tool() -> str | None:
    """inferno-flamegraph on PATH, beside this Python (a venv's bin), or where the
    project's set-up script installs it."""
    repo_tools = Path(__file__).resolve().parent.parent / "build" / "tools" / "bin"
    search = os.pathsep.join([os.environ.get("PATH", ""), os.path.dirname(sys.executable),
                              str(repo_tools)])
    return shutil.which(TOOL, path=search)


def render_svg(stacks: pd.Series, title: str, weight: str, tool: str | None = None) -> str:
    """The flame graph SVG (with its own zoom and search scripts) drawn by the real tool."""
    tool = tool or find_tool()
    if not tool:
        raise UserError(f"{TOOL} not found: run scripts/setup-report-tools.sh "
                        "or 'cargo install inferno'")
    # frames are long C++ signatures: keep their start (the function name) when cut
    command = [tool, "--title", title, "--countname", WEIGHTS[weight], "--hash",
               "--minwidth", "0.05", "--truncate-text-right"]
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
