"""The line a recording shows on a terminal while it runs."""
from __future__ import annotations

import sys
import time

from innostall.format.schema import Schema


class LiveLine:
    """On a terminal: elapsed time, events per second and the probes' estimated cost in the
    last interval, the groups being sampled with their coverage, and drops."""

    def __init__(self, groups: list[str], schema: Schema):
        self.started = time.monotonic()
        self.groups = groups  # sampling group names, by loader number - 1
        self.events = schema.counters_of("event")  # one per traced occurrence
        self.losses = schema.counters_of("loss")
        self.last: dict | None = None  # the previous snapshot

    def show(self, record: dict) -> None:
        counters = record["counters"]
        events = sum(counters.get(name, 0) for name in self.events)
        rate, cost, sampled = 0.0, "", ""
        last = self.last
        if last and record["mono_ns"] > last["mono_ns"]:
            wall = record["mono_ns"] - last["mono_ns"]
            rate = (events - sum(last["counters"].get(n, 0) for n in self.events)) * 1e9 / wall
            cost, sampled = self.governor_text(record.get("governor"), last.get("governor"), wall)
        self.last = record
        sys.stderr.write(f"\rrecording {time.monotonic() - self.started:6.0f} s  "
                         f"{rate:9.0f} events/s{cost}  purge batches {counters.get('purge_batches', 0):>6}  "
                         f"drops {sum(counters.get(n, 0) for n in self.losses):>4}{sampled}\x1b[K")
        sys.stderr.flush()

    def governor_text(self, now: dict | None, before: dict | None, wall_ns: int) -> tuple[str, str]:
        if not now or not before:
            return "", ""
        cpu = now["server_cpu_ns"] - before["server_cpu_ns"]
        overhead = now["overhead_ns"] - before["overhead_ns"]
        cost = f"  cost {100 * overhead / cpu:5.2f}% of server CPU" if cpu > 0 else ""
        partial = [f"{self.groups[g - 1]} {100 * (ns - b[1]) / wall_ns:.0f}%"
                   for (g, ns, *_), b in zip(now["groups"], before["groups"])
                   if ns - b[1] < 0.999 * wall_ns]
        return cost, "  sampled: " + ", ".join(partial) if partial else ""
