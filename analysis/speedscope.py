"""A recording's flame graphs as one speedscope file (https://www.speedscope.app, the file
format of its file-format-schema.json): one "sampled" profile per flame graph, each distinct
stack one sample weighted by the graph's total for it, frames shared between the profiles."""
from __future__ import annotations

import pandas as pd

from innostall import __version__

from .flamegraph import FlameGraph

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
# speedscope's units; a weight in any other unit (walks, waits, row versions) is "none"
UNITS = {"µs waited": "microseconds"}


def profile(graph: FlameGraph, stacks: pd.Series, frames: dict[str, int]) -> dict:
    """A sampled profile from folded stacks (root first, as speedscope lists them)."""
    samples = [[frames.setdefault(f, len(frames)) for f in stack.split(";") if f]
               for stack in stacks.index]
    weights = [int(n) for n in stacks]
    return {"type": "sampled", "name": graph.title, "unit": UNITS.get(graph.unit, "none"),
            "startValue": 0, "endValue": sum(weights), "samples": samples, "weights": weights}


def document(rec, graphs: list[tuple[FlameGraph, pd.Series]]) -> dict:
    frames: dict[str, int] = {}
    profiles = [profile(graph, stacks, frames) for graph, stacks in graphs]
    target = rec.meta.get("target", {})
    return {"$schema": SCHEMA,
            "name": f"{target.get('family', '?')} {target.get('version', '?')} on "
                    f"{rec.meta.get('host', '?')} ({rec.path})",
            "exporter": f"innostall {__version__}", "activeProfileIndex": 0,
            "shared": {"frames": [{"name": name} for name in frames]},
            "profiles": profiles}
