"""Stacks folded as they arrive, while the server's maps still tell which file each address
belongs to, and the journal's records named (read views' owners, latches, walked indexes)."""
from __future__ import annotations

import json
import os

from ..discovery.symbolize import StackSymbolizer
from ..discovery.target import Target
from ..server import latch_names
from ..server.open_views import OpenViews
from ..server.view_names import ViewNames
from innostall.format.tables import Tables, format_4

from .folded_tables import FoldedTables


def processes_running(path: str):
    """Pids of the processes whose executable is path."""
    wanted = os.path.realpath(path)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.path.realpath(f"/proc/{entry}/exe") == wanted:
                    yield int(entry)
            except OSError:
                continue


def history_of(snapshot: dict) -> int | None:
    """The history list length at a snapshot: read from memory, else by the probes."""
    counters = snapshot.get("counters", {})
    if "history" in snapshot.get("server", {}):
        return snapshot["server"]["history"]
    return counters.get("history_length") if counters.get("history_reads") else None


class StackJournal:
    """Stacks are folded now, while the server's maps still tell which file each address
    belongs to; the journal then keeps them symbolized: deep-walk events gain a "folded"
    field, latch tables and read views have each stack's addresses replaced by its folded
    string (the latch tables' rows that fold alike summed: folded_tables.py)."""

    def __init__(self, target: Target, names: ViewNames | None = None,
                 latches: latch_names.LatchNamer | None = None, views: OpenViews | None = None,
                 tables: Tables | None = None):
        self.target = target
        self.names = names  # who holds the read views, by SQL when we may log in
        self.views = views  # the open read views, read from the server's memory
        self.latches = latches  # names the contended latches, from the server's memory
        self.latch_name_at: dict[int, str] = {}  # address -> name, as the latches lines named them
        self._symbolizer = StackSymbolizer(target)
        # the loader's tables (its schema's; format 4's when not given), each stack folded once
        self.tables = FoldedTables(self.fold, tables or format_4())
        # Latch stacks carry no pid: with --binary, any process running the executable
        # has it mapped the same way, so its maps resolve them.
        self.pid = target.pid or next(processes_running(target.path), None)

    def index_executable(self) -> None:
        """Before the probes attach: the executable's symbols, every stack's first need."""
        self._symbolizer.index_executable()

    def fold(self, addresses: list[int], pid: int | None = None) -> str:
        if not addresses:
            return "[unknown]"
        return self._symbolizer.folded(pid or self.pid, addresses)

    def journal_line(self, rec: dict, line: str) -> str:
        if self.views and rec["type"] in ("interval", "final"):
            self.views.note_history(history_of(rec))
        if rec["type"] == "deep_walk":
            rec["folded"] = self.fold(rec["stack"], rec["pid"])
            self.name_walk(rec)
        elif rec["type"] == "latch_tables":
            self.tables.line(rec)
            for holder in rec.get("holders", []):
                holder.append(self.holder_latch_name(holder[0]))
        elif rec["type"] == "latches":
            self.tables.line(rec)
            self.name_latches(rec)
        elif rec["type"] in self.tables.lines:
            self.tables.line(rec)
        elif rec["type"] == "read_views":
            for view in rec["views"]:
                view["folded"] = self.fold(view.pop("stack"), view.get("pid"))
                view["source"] = "probe"
            if self.views:
                self.views.merge(rec)
            for view in rec["views"]:
                view.pop("key", None)
            if self.names:
                self.names.annotate(rec)
        else:
            return line
        return json.dumps(rec, separators=(",", ":")) + "\n"


    def name_walk(self, rec: dict) -> None:
        """The table and index whose records' versions the walk built, read from the
        dict_index_t it was given (left out when that memory is not recognised)."""
        index, scan_index = rec.pop("index", 0), rec.pop("scan_index", 0)
        named = self.latches.index_at(index) if self.latches and index else None
        if named:
            rec["table"], rec["index"] = named
        # the secondary index of the lookup that led to the record, when the walk ran
        # inside that lookup (analysis checks the stack: the BPF side may see a stale one)
        scanned = self.latches.index_at(scan_index) if self.latches and scan_index else None
        if scanned and (not named or scanned[0] == named[0]):
            rec["scan_index"] = scanned[1]

    def name_latches(self, rec: dict) -> None:
        """Each latch row gains its name and kind: [kind, id, mode, waits, ns, max_ns,
        address, slots, name, kind label]. Names are cached, so each latch is read once."""
        for row in rec["latches"]:
            kind, ident, address = row[0], row[1], row[6]
            row += (self.latches.name(kind, ident, address) if self.latches
                    else (latch_names.UNKNOWN, latch_names.KIND_NAMES.get(kind, "latch")))
            self.latch_name_at[address] = row[-2]

    def holder_latch_name(self, address: int) -> str:
        """A holder's latch by the name its waits were given (the latches lines come every
        interval, the holders with the latch tables after them), else by its address."""
        name = self.latch_name_at.get(address)
        if name is None and self.latches:
            name = self.latches.name_address(address)[0]
        return name or latch_names.UNKNOWN
