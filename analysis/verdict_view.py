"""The verdict as the text and HTML reports lead with it: purge's phases and, on a replica,
its applier's beside them, first (a DBA recording a lagging replica must not read purge's
"keeping up" before the replica's story), with the lag it reported in their title; then
the notes on how to learn more than the verdict could say (a probe to add), never inside
a sentence. The phases and notes are summary()'s; this module only lays them out."""
from __future__ import annotations

from .wording.phase_list import phase_lines, shown_phases, tally

# The replica's phases' colours: grey where nothing is known or nothing happened, warm where
# someone was in the applier's way, cool for its own work.
REPLICA_COLORS = {"idle": "#9e9e9e", "unwatched": "#757575", "unsplit": "#757575",
                  "cpu-bound": "#1f77b4", "redo-bound": "#17becf", "off-cpu": "#7f7f7f",
                  "row-lock-bound": "#d62728", "latch-bound": "#ff7f0e", "io-bound": "#8c564b",
                  "commit-order-bound": "#9467bd"}


def lag_words(replica: dict) -> str:
    """'lag at most 23 s (at 30.0 s), 23 s at the end', as the replica reported it, or why it
    is not known."""
    if replica["lag_s_max"] is None:
        return f"lag {replica['lag_note']}"
    return (f"lag, as the replica reported it: at most {replica['lag_s_max']:,} s (at "
            f"{replica['lag_s_max_at_s']:.1f} s), {replica['lag_s_last']:,} s at the end")


def parts(told: dict) -> list[dict]:
    """The verdict's parts in the order they are told: {key, title, phases}; the replica's
    applier first where the recording has one (title None: purge alone needs none)."""
    replica = told.get("replica")
    if not replica:
        return [{"key": "purge", "title": None, "phases": told["purge"]["phases"]}]
    return [{"key": "replica", "title": f"Replica applier ({lag_words(replica)})", "phases": replica["phases"]},
            {"key": "purge", "title": "Purge", "phases": told["purge"]["phases"]}]


def notes(told: dict) -> list[str]:
    return list(told["purge"].get("notes", []))


def text_lines(told: dict) -> list[str]:
    """The text report's Verdict: each part's phases, one line each (a long list cut:
    wording/phase_list.py), then the notes."""
    if not told["purge"]["phases"]:
        return ["Verdict", "  no interval recorded"]
    lines = ["Verdict"]
    for part in parts(told):
        lines += ([f"  {part['title']}"] if part["title"] else []) + phase_lines(part["phases"])
    return lines + [f"  note: {n}" for n in notes(told)]


def html_parts(told: dict, purge_colors: dict[str, str], title_of) -> list[dict]:
    """The HTML verdict's parts: {key, title, tally, phases (each with its colour, label
    and the title its words shortened, title_of(phase))}."""
    out = []
    for part in parts(told):
        colors = purge_colors if part["key"] == "purge" else REPLICA_COLORS
        out.append({"key": part["key"], "title": part["title"], "tally": tally(part["phases"]),
                    "phases": [{**p, "color": colors[p["verdict"]], "title": title_of(p),
                                "label": p["verdict"].replace("_", " ")} for p in shown_phases(part["phases"])]})
    return out
