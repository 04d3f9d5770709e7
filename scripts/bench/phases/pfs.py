"""Phase 3, performance_schema for scale: its latch instruments switched off and on, live,
under the same steady load, bracketed like the tracers."""
from __future__ import annotations

from ..bracketing import comparisons, run_bracketed
from ..errors import BenchError
from ..harness import Bench
from ..load import phase_seconds
from ..log import log
from ..server import BenchServer, fixture
from ..settings import ROUNDS, STEADY_LOAD
from .steady import STEADY_METRICS

LATCH_INSTRUMENTS = "NAME LIKE 'wait/synch/%'"


def pfs_consumers(server: BenchServer) -> dict[str, str]:
    return dict(server.query("SELECT NAME, ENABLED FROM performance_schema.setup_consumers"))


def pfs_switch(server: BenchServer, on: bool, startup_consumers: dict[str, str]) -> None:
    """on: every latch instrument enabled and timed, every consumer on. off: latch
    instruments off, consumers back as the server started."""
    flag = "YES" if on else "NO"
    server.query(f"UPDATE performance_schema.setup_instruments SET ENABLED='{flag}', "
                 f"TIMED='{flag}' WHERE {LATCH_INSTRUMENTS}")
    for name, enabled in startup_consumers.items():
        server.query(f"UPDATE performance_schema.setup_consumers SET ENABLED="
                     f"'{'YES' if on else enabled}' WHERE NAME='{name}'")


def phase_pfs(bench: Bench) -> None:
    log("phase 3: performance_schema latch instruments off/on")
    bench.start_server("--performance-schema=ON")
    fixture("load", *STEADY_LOAD)
    if bench.server.query("SELECT @@performance_schema")[0][0] != 1:
        raise BenchError("the server did not start with performance_schema on")
    consumers = pfs_consumers(bench.server)
    bench.start_steady_load("pfs", phase_seconds(2 * ROUNDS + 1, 0))
    windows = []

    def switched_window(rnd: int, arm: str) -> dict:
        pfs_switch(bench.server, arm == "pfs_on", consumers)
        return bench.window("pfs", rnd, arm)
    try:
        run_bracketed(windows, ("pfs_on",), "pfs_off", switched_window)
    finally:
        bench.results["pfs"] = {
            "windows": windows, "startup_consumers": consumers,
            "comparisons": comparisons(windows, "pfs_off", ("pfs_on",), STEADY_METRICS)}
    bench.stop_all()
