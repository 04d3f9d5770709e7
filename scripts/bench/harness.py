"""The state of one run: the server, the load and the tracer alive, the results so far;
and one window of an arm, measured with its tracer attached."""
from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

import pymysql

from fixture_servers import FixtureError

from .errors import BenchError, LoadFailed
from .load import Load, capacity_tps, steady_load
from .log import log
from .measure import measure
from .server import BenchServer, fixture, start_server
from .settings import ATTACH_TIMEOUT_S, RATE_SHARE, SETTLE_S, WINDOW_S
from .tracers import Bpftrace, Recorder, Tracer, bpftrace_script
from .yardstick import Yardstick


class Bench:
    """The state of one run: the server, the tracers alive, the results so far."""

    def __init__(self):
        self.workdir = Path(tempfile.mkdtemp(prefix="innostall-bench-"))
        self.server: BenchServer | None = None
        self.load: Load | None = None
        self.tracer: Tracer | None = None
        self.yardstick: Yardstick | None = None
        self.snapshot_conn: pymysql.Connection | None = None
        self.results: dict = {"errors": []}

    @property
    def bpftrace_script(self) -> Path:
        return self.workdir / "innostall.bt"

    @contextlib.contextmanager
    def traced(self, tracer: Tracer | None):
        """The tracer attached for the body; stopped (SIGINT) however the body ends."""
        if tracer is None:
            yield None
            return
        self.tracer = tracer
        try:
            tracer.start()
            tracer.wait_attached()
            yield tracer
        finally:
            try:
                tracer.stop()
            finally:
                tracer.kill()
                self.tracer = None

    def new_tracer(self, arm: str, cap_s: float, name: str) -> Tracer | None:
        """A recorder for a probe set, bpftrace, or None for the untraced arms."""
        if arm == "bpftrace":
            return Bpftrace(self.workdir, self.server.pid, self.bpftrace_script)
        if arm in ("default", "full"):
            return Recorder(self.workdir, self.server.pid, arm, cap_s, name)
        if arm == "exact":
            return Recorder(self.workdir, self.server.pid, "default", cap_s, name, ("--exact",))
        if arm.startswith("record:"):  # a dev arm, e.g. "record:--probes=purge_batch --no-sql"
            return Recorder(self.workdir, self.server.pid, "default", cap_s, name,
                            tuple(arm.removeprefix("record:").split()))
        return None

    def start_server(self, *options: str) -> None:
        self.server = start_server(*options)
        version = self.server.query("SELECT VERSION()")[0][0]
        self.results.setdefault("server_version", version)

    def write_bpftrace_script(self, probes: str) -> None:
        """For the server as it runs now: the script holds its pid and probe offsets."""
        self.bpftrace_script.write_text(bpftrace_script(self.server.pid, probes))

    def start_steady_load(self, phase: str, seconds: int) -> None:
        """The steady load for a phase, at RATE_SHARE of what the untraced server does flat
        out. A saturated server's CPU per transaction follows its throughput, which swings
        ±15% from one window to the next here; below capacity the same work costs the same CPU."""
        rate = 0
        if RATE_SHARE:
            capacity = capacity_tps()
            rate = max(1, round(capacity * RATE_SHARE))
            self.results.setdefault("capacity", {})[phase] = {"tps": round(capacity, 1), "rate": rate}
            log(f"  capacity {capacity:.0f} tps untraced; steady load at {rate} tps")
        self.load = steady_load(seconds, rate)
        self.yardstick = Yardstick()

    def window(self, phase: str, rnd: int, arm: str) -> dict:
        """One window of the arm under the running load; a tracer that fails is the window's
        error, the load ending is the phase's (LoadFailed)."""
        cap = SETTLE_S + WINDOW_S + ATTACH_TIMEOUT_S + 60
        tracer = self.new_tracer(arm, cap, f"{phase}-{rnd}-{arm}")
        entry = {"phase": phase, "round": rnd, "arm": arm}
        try:
            with self.traced(tracer):
                entry.update(measure(self.server, self.load, tracer, self.yardstick))
        except LoadFailed:
            raise
        except BenchError as e:
            entry["error"] = str(e)
            log(f"  {arm}: {e}")
        if tracer:
            entry["tracer"] = tracer.result
        show_window(entry)
        return entry

    def stop_all(self) -> None:
        """Tracers first (SIGINT, so probes detach), then the load, the snapshot, the server."""
        if self.tracer:
            self.tracer.kill()
        if self.load:
            self.load.stop()
            self.load = None
        if self.yardstick:
            self.yardstick.stop()
            self.yardstick = None
        if self.snapshot_conn:
            with contextlib.suppress(Exception):
                self.snapshot_conn.close()
            self.snapshot_conn = None
        if self.server:
            self.server.close()
            self.server = None

    def cleanup(self) -> None:
        self.stop_all()
        with contextlib.suppress(FixtureError):
            fixture("stop")
        shutil.rmtree(self.workdir, ignore_errors=True)


def show_window(w: dict) -> None:
    if "error" in w:
        return
    extra = ""
    cpu = w.get("tracer_cpu_percent", {}).get("total")
    if cpu is not None:
        extra = f"  tracer {cpu:.1f}% of a core"
    log(f"  {w['phase']} round {w['round']} {w['arm']:<9} cpu/trx {w['cpu_per_trx_us']} us  "
        f"tps {w['tps']}  p95 {w['p95_ms']} ms{extra}")
