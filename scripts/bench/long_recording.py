"""An hours-long recording built from a real one, to measure the report side at full size
without recording for hours (issue 30): every journal line of the source (snapshots, read
views, latch rows, latch tables, deep walks) repeated cycle after cycle, each cycle shifted
in time by the source's length, its cumulative figures advanced by what the source had
counted by its end, so the counters keep climbing as they would on a server under a steady
load; then meta.json and the Parquet tables written as the recorder writes them.

    PYTHONPATH=scripts build/venv/bin/python -m bench.long_recording SOURCE OUT [--hours 8 | --intervals N]

SOURCE is a recording with its journal (build/demo/recording after `make demo`); OUT is
created. At the source's interval, --hours 8 is 28,800 intervals at 1 s.

What stays as it was: gauges (the history length) and each interval's level, so the verdict
sees the source's story again in every cycle; a running maximum stays at the source's
maximum once it has been reached; the read views' threads and stacks. What is not real:
the same story repeated, and latch rows that keep their names and addresses."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from innostall.collector.recorder import store
from innostall.format import journal as fmt, journal_files
from innostall.format.latch_table_rows import MergedTables

# Journal lines written once: the calibration and the attach before the first cycle, the
# loader's end after the last
ONCE_BEFORE, ONCE_AFTER = ("calibration", "attached"), ("end",)
# The governor's figures that count up; the others are its settings (budget_ppm, entry_ns)
COUNTING_ACCOUNTS = fmt.GOVERNOR_ACCOUNTS


def added(now: list, final: list, cycle: int) -> list:
    """A cumulative list (histogram slots, hits) advanced by `cycle` source lengths."""
    return [a + cycle * b for a, b in zip(now, list(final) + [0] * (len(now) - len(final)))]


class Cycles:
    """The source's journal, and what each cumulative figure had reached at its end: the
    amount a figure grows by in each cycle."""

    def __init__(self, records: list[dict], gauges: frozenset[str], maxima: frozenset[str]):
        self.before = [r for r in records if r.get("type") in ONCE_BEFORE]
        self.after = [r for r in records if r.get("type") in ONCE_AFTER]
        self.body = [r for r in records if r.get("type") not in ONCE_BEFORE + ONCE_AFTER]
        self.gauges, self.maxima = gauges, maxima
        snapshots = [r for r in self.body if r["type"] in ("interval", "final")]
        if len(snapshots) < 2:
            raise SystemExit("the source recording needs at least two intervals in its journal")
        self.final = snapshots[-1]
        attached = next((r for r in self.before if r["type"] == "attached"), None)
        start = attached["mono_ns"] if attached else snapshots[0]["mono_ns"] - (
            snapshots[1]["mono_ns"] - snapshots[0]["mono_ns"])
        self.length_ns = self.final["mono_ns"] - start  # one cycle: the attach to the final snapshot
        self.latch_rows = {}  # (kind, id, mode) -> its last row: the latch's totals
        for r in self.body:
            if r["type"] == "latches":
                self.latch_rows.update({tuple(row[:3]): row for row in r["latches"]})
        tables = MergedTables()  # the source's tables at its end, whichever way its lines hold them
        for r in self.body:
            if r["type"] == "latch_tables":
                tables.add(r)
        self.tables = tables.record() or {}

    def snapshot(self, r: dict, cycle: int) -> dict:
        final = self.final
        counters = {}
        for name, value in r["counters"].items():
            if name in self.gauges or not cycle:
                counters[name] = value
            elif name in self.maxima:  # reached in the first cycle: the maximum from then on
                counters[name] = max(value, final["counters"].get(name, 0))
            else:
                counters[name] = value + cycle * final["counters"].get(name, 0)
        out = {**r, "counters": counters,
               "hists": {name: added(slots, final["hists"].get(name, []), cycle)
                         for name, slots in r["hists"].items()}}
        for key in ("hits", "tracepoint_runs"):
            if key in r:
                out[key] = added(r[key], final.get(key, []), cycle)
        if r.get("governor") and final.get("governor"):
            gov, last = r["governor"], final["governor"]
            ends = {group[0]: group for group in last["groups"]}
            out["governor"] = {**gov, **{k: gov[k] + cycle * last[k] for k in COUNTING_ACCOUNTS},
                               "groups": [[g[0], *added(g[1:], ends.get(g[0], [0] * 4)[1:], cycle)]
                                          for g in gov["groups"]]}
        return out

    def latches(self, r: dict, cycle: int) -> dict:
        """[kind, id, mode, waits, ns, max_ns, address, slots, name, label]: waits, ns and
        slots count up; the longest wait stays."""
        rows = []
        for row in r["latches"]:
            end = self.latch_rows[tuple(row[:3])]
            rows.append([*row[:3], row[3] + cycle * end[3], row[4] + cycle * end[4],
                         max(row[5], end[5]) if cycle else row[5], row[6],
                         added(row[7], end[7], cycle), *row[8:]])
        return {**r, "latches": rows}

    def latch_tables(self, r: dict, cycle: int) -> dict:
        """Each table's rows are whole-recording totals: advanced by the source's last
        totals of the same row (its key: every field but the counts)."""
        out = dict(r)
        for table, counts in (("pages", (2, 3)), ("stacks", (1, 2)), ("latch_stacks", (3, 4)),
                              ("holders", (3, 4))):
            ends = {key_of(row, counts): row for row in self.tables.get(table, [])}
            out[table] = [[value + cycle * ends.get(key_of(row, counts), row)[i] if i in counts else value
                           for i, value in enumerate(row)] for row in r.get(table, [])]
        return out

    def read_views(self, r: dict, shift: int) -> dict:
        return {**r, "views": [{**v, "opened_ns": v["opened_ns"] + shift} for v in r["views"]]}

    def line(self, r: dict, cycle: int) -> dict:
        """One journal line of the source as it reads in the given cycle."""
        shift = cycle * self.length_ns
        kind = r["type"]
        if kind in ("interval", "final"):
            r = self.snapshot(r, cycle)
        elif kind == "latches":
            r = self.latches(r, cycle)
        elif kind == "latch_tables":
            r = self.latch_tables(r, cycle)
        elif kind == "read_views":
            r = self.read_views(r, shift)
        r = {**r, **{k: r[k] + shift for k in ("mono_ns", "real_ns") if k in r}}
        return r


def key_of(row: list, counts: tuple[int, int]) -> tuple:
    return tuple(json.dumps(v) if isinstance(v, list) else v for i, v in enumerate(row) if i not in counts)


def long_journal(cycles: Cycles, intervals: int):
    """The journal's lines, in order, for `intervals` snapshots: the last one is the final."""
    yield from cycles.before
    done, cycle, tables, dumped = 0, 0, None, False
    while done < intervals:
        for r in cycles.body:
            line = cycles.line(r, cycle)
            if line["type"] in ("interval", "final"):
                done += 1
                line["type"] = "final" if done == intervals else "interval"
                if done == intervals and tables is not None and not dumped:  # the recorder dumps
                    yield {**tables, "mono_ns": line["mono_ns"]}  # the tables before the final one
                yield line
                if done == intervals:
                    break
                dumped = False
            else:
                if line["type"] == "latch_tables":
                    tables, dumped = line, True
                yield line
        cycle += 1
    yield from cycles.after


def every_line(recording: Path) -> list[dict]:
    """Every whole line of a recording's journal, each latch_tables line as it is (the
    format's reader merges them into one: a report needs no more, but a long recording has
    them all)."""
    return [json.loads(line) for line in journal_files.every_line(str(recording)) if line.endswith(b"\n")]


def generate(source: Path, directory: Path, intervals: int) -> Path:
    """A recording of `intervals` snapshots at `directory`, from the one at `source`."""
    records = every_line(source)
    meta = json.loads((source / fmt.META).read_text())
    schema = fmt.schema_of(meta)
    cycles = Cycles(records, schema.gauges, frozenset(schema.counters_of("max")))
    directory.mkdir(parents=True, exist_ok=True)
    last = None
    journal = journal_files.JournalWriter(str(directory))  # rolled and compressed as the recorder does
    for line in long_journal(cycles, intervals):
        journal.write(json.dumps(line, separators=(",", ":")) + "\n")
        if line["type"] == "interval" and (number := journal.roll()) is not None:
            journal_files.compress_segment(str(directory), number)
        if line["type"] == "final":
            last = line
    journal.close()
    meta = {k: v for k, v in meta.items() if k not in ("format", "version")}
    meta["schema"] = schema.raw  # format 1 kept none: the one it was written with
    start = meta.get("start_real_ns") or 0  # the attach: the long recording ends as long after it
    meta.update(stop_real_ns=start + last["mono_ns"] - fmt.journal_start(records), complete=True)
    store.write_meta(str(directory), meta)
    store.write_tables(str(directory))
    return directory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.long_recording", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path, help="a recording with its journal")
    parser.add_argument("out", type=Path, help="the directory to create")
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--hours", type=float, default=8.0, help="length at the source's interval (8)")
    length.add_argument("--intervals", type=int, help="number of snapshots instead")
    args = parser.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        parser.error(f"{args.out}: not empty")
    interval_s = json.loads((args.source / fmt.META).read_text()).get("interval_s", 1.0)
    intervals = args.intervals or round(args.hours * 3600 / interval_s)
    started = time.monotonic()
    generate(args.source, args.out, intervals)
    size = journal_files.disk_bytes(str(args.out))
    print(f"{args.out}: {intervals} intervals, journal {size / 1e6:,.1f} MB, "
          f"written in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
