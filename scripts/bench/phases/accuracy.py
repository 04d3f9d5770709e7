"""Phase: the default budget's figures against --exact's at the same moments, under the
steady load at a fixed rate (issue 44, item 5; bench/accuracy.py says what is measured)."""
from __future__ import annotations

from ..accuracy import measure_accuracy
from ..errors import BenchError
from ..harness import Bench
from ..load import capacity_tps, steady_load
from ..log import log
from ..server import fixture, start_server
from ..settings import ACCURACY_S, RATE_SHARE, STEADY_LOAD


def phase_accuracy(bench: Bench) -> None:
    log(f"phase: accuracy, default against --exact over the same {ACCURACY_S} s")
    server = start_server()
    try:
        fixture("load", *STEADY_LOAD)
        rate = int(capacity_tps() * RATE_SHARE)
        load = steady_load(ACCURACY_S + 60, rate)
        try:
            rows = measure_accuracy(server.pid, ACCURACY_S, bench.workdir / "accuracy")
        except RuntimeError as e:
            raise BenchError(str(e)) from e
        finally:
            load.stop()
    finally:
        server.close()
        fixture("stop")
    bench.results["accuracy"] = {"rate_tps": rate, "seconds": ACCURACY_S, "rows": rows}
    off = [r["figure"] for r in rows if r["within"] is False]
    log(f"  {len(rows) - len(off)} of {len(rows)} figures within 15% (or not given); off: {', '.join(off) or 'none'}")
