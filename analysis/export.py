"""A recording's views as plain files for other tools: the summary (JSON and CSV), the
tables (CSV), per flame graph its folded stacks and the SVG drawn from them, the stacks as
pprof profiles (one per family of flame graphs) and as one speedscope file."""
from __future__ import annotations

import json
import os

from innostall.errors import UserError
from innostall.format import files
from innostall.format.output_path import check_path

from . import flamegraph, metrics, pprof, speedscope, report_tables
from .summary import summary
from .recording import Recording

EVENT_TABLES = ["walks", "pages", "wait_stacks", "read_views", "latch_holders"]  # Recording attributes, one CSV each


def export(rec: Recording, out: str) -> tuple[list[str], list[str]]:
    """Write every export into out (created if needed); returns (files written, notes about
    what was left out and why)."""
    check_path(out)  # as record -o: no link or other user's directory to redirect the files
    _make_dir(out)
    written, notes = [], []

    def write(name: str, text: str | bytes) -> None:
        """Never through a link (or into a FIFO) planted where the file goes: files.py."""
        path = os.path.join(out, name)
        try:
            with files.create_regular(path) as f:
                f.write(text if isinstance(text, bytes) else text.encode())
        except OSError as e:
            raise UserError(f"{path}: cannot write ({e.strerror})")
        written.append(path)

    told = summary(rec)
    write("summary.json", json.dumps(told, indent=2) + "\n")
    write("summary.csv", metrics.summary_rows(told).to_csv(index=False))
    write("intervals.csv", report_tables.interval_table(rec).to_csv())
    write("counters.csv", rec.counters.to_csv(index=False))
    write("hists.csv", rec.hists.to_csv(index=False))
    for name in EVENT_TABLES:
        table = report_tables.table_of(rec, name)
        if table is not None:
            write(f"{name}.csv", table.to_csv(index=False))
    graphs = flamegraph.available(rec)
    if not graphs:
        notes.append("no stacks recorded (deep walks, latch waits): no flame graphs")
        return written, notes
    tool = flamegraph.find_tool()
    if not tool:
        notes.append(f"{flamegraph.TOOL} not found: folded stacks written, SVGs not drawn "
                     "(run scripts/setup.sh, or 'cargo install inferno')")
    for graph, stacks in graphs:
        write(f"{graph.name}.folded", flamegraph.folded_text(stacks))
        if tool:
            write(f"{graph.name}.svg", flamegraph.render_svg(stacks, graph.title, graph.unit, tool))
    for family, profile in pprof.profiles(rec):
        write(f"{family}.pb.gz", profile)
    write("speedscope.json", json.dumps(speedscope.document(rec, graphs)) + "\n")
    return written, notes


def _make_dir(out: str) -> None:
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise UserError(f"{out}: cannot create the export directory ({e.strerror})")
