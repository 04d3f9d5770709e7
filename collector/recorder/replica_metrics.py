"""A replica's applier as Prometheus metrics, beside live_metrics.py's (which exports every
counter as it is: innostall_innodb_applier_events_total, _applier_seconds_total ...): the
same counters as a DBA asks of a lagging replica, its events, its busy time and where that
time went, one series per part of the split (a label), so a dashboard stacks them.

    innostall_replica_applier_events_total           events the applier threads applied
    innostall_replica_applier_busy_seconds_total     their wall time applying them
    innostall_replica_applier_split_seconds_total{part="on_cpu|latch|row_lock|io|redo|commit_order|other"}

The split covers the events the scheduler tracepoint watched whole (applier_split_ns); its
"other" is what is left of that time once the measured parts are taken, never below 0, as
the report's (analysis/replica_time.py, whose names these are: a test holds them equal; the
recorder may not import the analysis, which runs elsewhere)."""
from __future__ import annotations

from prometheus_client.core import CounterMetricFamily

PREFIX = "innostall_replica_applier_"
MEASURED = {"on_cpu": "applier_cpu_ns", "latch": "applier_latch_ns", "row_lock": "applier_row_lock_ns",
            "io": "applier_io_ns", "redo": "applier_redo_ns", "commit_order": "applier_commit_wait_ns"}


def split_seconds(counters: dict[str, int]) -> dict[str, float]:
    """The watched time's parts, in seconds."""
    parts = {part: counters.get(name, 0) / 1e9 for part, name in MEASURED.items()}
    return {**parts, "other": max(0.0, counters.get("applier_split_ns", 0) / 1e9 - sum(parts.values()))}


def replica_families(counters: dict[str, int]):
    """The families from a snapshot's cumulative counters; none where the loader keeps no
    applier counters (a build before them)."""
    if "applier_events" not in counters:
        return
    yield CounterMetricFamily(PREFIX + "events", "events the replica's applier threads applied (probe applier_event)",
                              value=counters["applier_events"])
    yield CounterMetricFamily(PREFIX + "busy_seconds", "wall time the replica's applier threads spent applying events",
                              value=counters.get("applier_ns", 0) / 1e9)
    split = CounterMetricFamily(PREFIX + "split_seconds", "the applier's time watched whole by the scheduler "
                                "tracepoint, by where it went (other: asleep for anything else, a sync at commit ...)",
                                labels=["part"])
    for part, value in split_seconds(counters).items():
        split.add_metric([part], value)
    yield split
