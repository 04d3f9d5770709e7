"""The last snapshot of a recording in progress as Prometheus metrics, for PMM and Grafana:
an HTTP endpoint and/or a file for node_exporter's textfile collector.

Names follow mysqld_exporter's style: innostall_innodb_<counter>_total for counts, times in
seconds (purge_batch_ns: innostall_innodb_purge_batch_seconds_total), gauges as they are
(innostall_innodb_history_length), log2 histograms as Prometheus histograms whose bucket
`le` is a slot's upper bound (in seconds for times), cumulative. A log2 histogram keeps no
exact sum, so _sum is left out rather than made up; _count is there.

The recorder only hands each loader line over (update: one assignment); the HTTP server and
the file writer run on threads of their own, and whatever fails there is one warning line:
the recording goes on.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading

from prometheus_client import CollectorRegistry, Metric, generate_latest, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from innostall.format.journal import governor_counters
from innostall.format.schema import Schema

from .replica_metrics import replica_families

PREFIX = "innostall_"
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3}
GOVERNOR_SECONDS = {"governor.server_cpu_ns": ("server_cpu_seconds_total", "CPU time of the traced server"),
                    "governor.overhead_ns": ("probe_overhead_seconds_total",
                                             "what the probes cost the server, as the governor estimates it"),
                    "governor.budget_ns": ("probe_budget_seconds_total", "what the probes were allowed to cost")}

# The server's state, read from its memory or by SQL (meta.json's server_state.sources says
# which, per figure): (metric, help) by name; all gauges at the snapshot
SERVER_STATE = {
    "lsn": ("innodb_lsn_bytes", "the redo log's sequence number (log_sys.lsn)"),
    "checkpoint_lsn": ("innodb_checkpoint_lsn_bytes", "the last checkpoint's LSN"),
    "log_capacity": ("innodb_log_capacity_bytes", "what the redo log holds before it must be checkpointed"),
    "max_checkpoint_age": ("innodb_max_checkpoint_age_bytes", "the checkpoint age at which the server stops for a checkpoint"),
    "async_flush_age": ("innodb_async_flush_age_bytes", "the checkpoint age from which page cleaners flush furiously"),
    "sync_flush_age": ("innodb_sync_flush_age_bytes", "the checkpoint age from which writers flush themselves"),
    "dirty_pages": ("innodb_buffer_pool_dirty_pages", "pages on the buffer pool's flush list"),
    "free_pages": ("innodb_buffer_pool_free_pages", "pages on the buffer pool's free list"),
    "lru_pages": ("innodb_buffer_pool_data_pages", "pages on the buffer pool's LRU list"),
    "history": ("innodb_history_length_read", "the history list length read from the server's memory or by SQL"),
    "undo_file_bytes": ("innodb_undo_tablespaces_bytes", "the undo tablespaces' size on disk (INFORMATION_SCHEMA.FILES)"),
    "page_size": ("innodb_page_size_bytes", "innodb_page_size"),
    "undo_pages": ("innodb_undo_pages", "pages the rollback segments hold (their undo logs, history included)"),
    "undo_cached_pages": ("innodb_undo_pages_cached", "undo log pages in the buffer pool, at the pool's last walk"),
    "checkpoint_age_peak": ("innodb_checkpoint_age_peak_bytes", "the highest checkpoint age read since the snapshot before"),
    "replica_lag_s": ("replica_lag_seconds", "the replica's lag as it reports it (Seconds_Behind_Master/Source), over SQL"),
}


def counter_name(name: str, unit: str) -> tuple[str, float]:
    """(metric name, factor to its unit) of a counter of the schema."""
    for suffix, scale in TIME_UNITS.items():
        if name.endswith("_" + suffix) and unit == suffix:
            return f"{PREFIX}innodb_{name[:-len(suffix) - 1]}_seconds", scale
    return f"{PREFIX}innodb_{name}", 1.0


def histogram(name: str, unit: str, slots: list[int], help_text: str) -> Metric:
    """A log2 histogram (slot s: values in [2^s, 2^(s+1)), whole units) as cumulative buckets
    le = 2^(s+1) - 1 units, the largest value slot s holds, up to the highest slot used."""
    scale = TIME_UNITS.get(unit)
    metric = Metric(f"{PREFIX}innodb_{name}" + ("_seconds" if scale else ""), help_text, "histogram")
    used = max((s for s, n in enumerate(slots) if n), default=0)
    total = 0
    for slot in range(used + 1):
        total += slots[slot]
        bound = ((1 << (slot + 1)) - 1) * (scale or 1)
        metric.add_sample(metric.name + "_bucket", {"le": f"{bound:.12g}"}, total)
    metric.add_sample(metric.name + "_bucket", {"le": "+Inf"}, sum(slots))
    metric.add_sample(metric.name + "_count", {}, sum(slots))
    return metric


class Snapshot:
    """What the metrics are made of: the loader's last lines, replaced whole as they come."""

    def __init__(self):
        self.attached: dict = {}
        self.last: dict | None = None  # the last interval or final snapshot (cumulative)
        self.views: dict | None = None  # the last read_views line

    def update(self, rec: dict) -> None:
        kind = rec.get("type")
        if kind == "attached":
            self.attached = rec
        elif kind in ("interval", "final"):
            self.last = rec
        elif kind == "read_views":
            self.views = rec


class Collector:
    """prometheus_client's custom collector over the last snapshot."""

    def __init__(self, snapshot: Snapshot, schema: Schema, info: dict[str, str]):
        self.snapshot, self.schema, self.info = snapshot, schema, info

    def collect(self):
        info = GaugeMetricFamily(PREFIX + "recording_info", "what is being recorded",
                                 labels=list(self.info))
        info.add_metric(list(self.info.values()), 1)
        yield info
        last, attached = self.snapshot.last, self.snapshot.attached
        if not last:
            return
        yield GaugeMetricFamily(PREFIX + "recording_elapsed_seconds",
                                "seconds from the attach to the last snapshot (t_s in the recording)",
                                value=(last["mono_ns"] - attached.get("mono_ns", last["mono_ns"])) / 1e9)
        yield from self.counters(last["counters"])
        yield from replica_families(last["counters"])
        for name, slots in last["hists"].items():
            yield histogram(name, self.schema.hist_unit(name), slots, self.schema.hist_title(name))
        yield from self.governor(governor_counters(last, attached))
        yield from self.read_views(self.snapshot.views)
        yield from self.server_state(last.get("server", {}))

    def counters(self, counters: dict[str, int]):
        for name, value in counters.items():
            spec = self.schema.counters.get(name, {"kind": "count", "unit": ""})
            metric, scale = counter_name(name, spec["unit"])
            help_text = f"{name}: {spec['kind']}, {spec['unit']} (innostall's measurement schema)"
            if spec["kind"] in ("gauge", "max"):
                yield GaugeMetricFamily(metric, help_text, value=value * scale)
            else:
                yield CounterMetricFamily(metric, help_text, value=value * scale)

    def governor(self, flat: dict[str, int]):
        hits = CounterMetricFamily(PREFIX + "probe_hits", "probe hits, counted before any filter",
                                   labels=["probe"])
        attached = CounterMetricFamily(PREFIX + "probe_group_attached_seconds",
                                       "time a sampling group was attached (its coverage)", labels=["group"])
        for name, value in flat.items():
            if name.startswith("hits."):
                hits.add_metric([name[5:]], value)
            elif name.startswith("governor.attached_ns."):
                attached.add_metric([name[len("governor.attached_ns."):]], value / 1e9)
            elif name in GOVERNOR_SECONDS:
                metric, help_text = GOVERNOR_SECONDS[name]
                yield CounterMetricFamily(PREFIX + metric.removesuffix("_total"), help_text, value=value / 1e9)
        yield hits
        yield attached

    def server_state(self, state: dict[str, int]):
        """The server's state at the snapshot: from its memory (collector/server/state.py) or
        by SQL (collector/server/sql_state.py)."""
        for name, value in state.items():
            metric, help_text = SERVER_STATE.get(name, (f"server_{name}", f"{name}, the server's own figure"))
            yield GaugeMetricFamily(PREFIX + metric, help_text, value=value)
        if "lsn" in state and "checkpoint_lsn" in state:
            yield GaugeMetricFamily(PREFIX + "innodb_checkpoint_age_bytes",
                                    "the redo log's LSN minus the last checkpoint's", value=state["lsn"] - state["checkpoint_lsn"])

    def read_views(self, views: dict | None):
        if views is None:
            return
        yield GaugeMetricFamily(PREFIX + "innodb_read_views_open", "read views open at the last look",
                                value=views.get("open", 0))
        ages = [(views["mono_ns"] - v["opened_ns"]) / 1e9 for v in views.get("views", [])]
        yield GaugeMetricFamily(PREFIX + "innodb_oldest_read_view_age_seconds",
                                "age of the oldest open read view (0: none open)", value=max(ages, default=0))


class LiveMetrics:
    """The HTTP endpoint (port, on addr) and/or the textfile (path), both optional."""

    def __init__(self, schema: Schema, info: dict[str, str], port: int | None = None,
                 addr: str = "127.0.0.1", textfile: str | None = None):
        self.snapshot = Snapshot()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(Collector(self.snapshot, schema, info))
        self.port, self.addr, self.textfile = port, addr, textfile
        self.server = None
        self.changed = threading.Event()
        self.stopping = False
        self.writer: threading.Thread | None = None
        self.warned: set[str] = set()

    def warn(self, text: str) -> None:
        if text not in self.warned:  # once each: a full disk must not print a line a second
            self.warned.add(text)
            print(f"innostall: metrics: {text}; the recording goes on", file=sys.stderr)

    def start(self) -> None:
        if self.port is not None:
            try:
                self.server, _ = start_http_server(self.port, self.addr, registry=self.registry)
            except (OSError, ValueError) as e:
                self.warn(f"cannot serve on {self.addr}:{self.port} ({getattr(e, 'strerror', None) or e})")
        if self.textfile:
            self.writer = threading.Thread(target=self.write_loop, name="metrics-textfile", daemon=True)
            self.writer.start()

    def update(self, rec: dict) -> None:
        self.snapshot.update(rec)
        if self.writer and rec.get("type") in ("interval", "final"):
            self.changed.set()

    def write_loop(self) -> None:
        while not self.stopping:
            self.changed.wait()
            self.changed.clear()
            self.write_textfile()

    def write_textfile(self) -> None:
        """Atomically: node_exporter must never read half a file."""
        tmp = f"{self.textfile}.{os.getpid()}.tmp"
        try:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)  # ours, left by a write that failed; or a link planted there: never followed
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            with os.fdopen(fd, "wb") as f:
                os.fchmod(fd, 0o644)  # node_exporter reads it as its own user; the umask is 077
                f.write(generate_latest(self.registry))
            os.replace(tmp, self.textfile)
        except Exception as e:  # any failure here is the exporter's, never the recording's
            self.warn(f"cannot write {self.textfile} ({getattr(e, 'strerror', None) or e})")

    def close(self) -> None:
        """The textfile gets the final snapshot; the endpoint stops serving."""
        if self.writer:
            self.stopping = True
            self.changed.set()
            self.writer.join(timeout=5)
            self.write_textfile()
        if self.server:
            self.server.shutdown()
            self.server.server_close()
