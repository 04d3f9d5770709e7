"""What each of innostall's BPF programs costs under the steady load: runs a second and
nanoseconds a run, as the kernel times them (run_cnt and run_time_ns, which the loader
turns on with BPF_ENABLE_STATS), over the middle of one recording; then the governor's
accounts of the whole recording (coverage and cost per group).

    PYTHONPATH=scripts build/venv/bin/python -m bench.program_costs [SECONDS] [record args]

Issue 29's measure of each trap's own work, before and after a change to a program: the
governor counts the same figures per group, but not per program, and not apart from the
trap. Run as root on a quiet machine; it starts the bench's server and load and stops
both."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench import load, server
from bench.unsampled import governor_text
from bench.server import fixture
from bench.settings import STEADY_LOAD
from bench.tracers import recording_summary
from fixture_servers import REPO
from innostall.analysis import recording

INNOSTALL = REPO / "build" / "venv" / "bin" / "innostall"
OUT = Path("/tmp/innostall-program-costs")
SETTLE_S = 8


def program_stats() -> dict[str, tuple[int, int]]:
    """(run_cnt, run_time_ns) of every loaded BPF program, by name."""
    shown = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], check=True,
                                      capture_output=True, text=True).stdout)
    return {p["name"]: (p.get("run_cnt", 0), p.get("run_time_ns", 0)) for p in shown}


def table(before: dict, after: dict, seconds: float) -> list[str]:
    lines = ["| program | runs/s | ns a run | ms/s |", "|---|---:|---:|---:|"]
    rows = []
    for name, (runs, ns) in after.items():
        runs0, ns0 = before.get(name, (0, 0))
        if runs > runs0:
            rows.append((name, (runs - runs0) / seconds, (ns - ns0) / (runs - runs0),
                         (ns - ns0) / seconds / 1e6))
    for name, rate, each, ms in sorted(rows, key=lambda r: -r[3]):
        lines.append(f"| {name} | {rate:,.0f} | {each:,.0f} | {ms:.3f} |")
    return lines


def main() -> int:
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    extra = sys.argv[2:]
    shutil.rmtree(OUT, ignore_errors=True)
    bench_server = server.start_server()
    fixture("load", *STEADY_LOAD)
    rate = int(load.capacity_tps() / 2)
    steady = load.steady_load(seconds + 60, rate)
    recorder = subprocess.Popen([str(INNOSTALL), "record", "--pid", str(bench_server.pid),
                                 "--duration", str(seconds + 2 * SETTLE_S), *extra,
                                 "-o", str(OUT)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(SETTLE_S)
        before, start = program_stats(), time.monotonic()
        time.sleep(seconds)
        after, took = program_stats(), time.monotonic() - start
        recorder.wait(timeout=120)
    finally:
        steady.stop()
    print(f"steady load at {rate} tps, record {' '.join(extra) or '(default)'}, {took:.0f} s")
    print("\n".join(table(before, after, took)))
    taken = recording.load(str(OUT))
    waits = sum(taken.counter_total(n) for n in ("block_waits_s", "block_waits_x", "block_waits_sx",
                                                 "other_latch_waits"))
    unstacked, waited_ns = taken.counter_total("latch_waits_unstacked"), sum(
        taken.counter_total(n) for n in ("block_wait_ns", "other_latch_wait_ns"))
    if waits > unstacked:
        print(f"latch stacks: {taken.counter_total('latch_extra_ns') / (waits - unstacked):,.0f} ns a "
              f"stacked wait (latch_extra_ns over {waits - unstacked:,.0f} waits); {unstacked:,.0f} of "
              f"{waits:,.0f} waits too short for one, "
              f"{100 * taken.counter_total('latch_unstacked_ns') / max(waited_ns, 1):.1f}% of the time waited")
    print("governor:", governor_text(recording_summary(OUT).get("governor", {})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
