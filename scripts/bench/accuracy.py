"""How accurate the default budget's figures are (issue 44, item 5): two recordings of the
same server at the same moments, the default (sampled) and --exact, under the bench's
steady load at a fixed rate. For each figure the report gives from a sampled group (counts,
time split, percentiles): the default's estimate (a count scaled interval by interval by the
share its group was attached, analysis/estimates.py; a percentile or a share of a time
split as the report gives it), the --exact figure, and the error. The target is within
ACCURACY_TARGET of --exact; a figure off by more is an estimate with that error, no floor.

    PYTHONPATH=scripts build/venv/bin/python -m bench.accuracy [SECONDS]

The bench's accuracy phase runs the same (bench/phases/accuracy.py). Run as root under the
fixture servers' lock; it starts the bench's server and stops it."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from innostall.analysis import estimates, recording

from .settings import INNOSTALL

ACCURACY_TARGET = 0.15  # issue 44: within +-15% of --exact
COUNTS = [  # (figure, counters, a probe of the group that counts them)
    ("block-latch waits", ["block_waits_s", "block_waits_x", "block_waits_sx"], "block_lock_s"),
    ("block-latch wait ms", ["block_wait_ns"], "block_lock_s"),
    ("other latch waits", ["other_latch_waits"], "latch_sleep"),
    ("other latch wait ms", ["other_latch_wait_ns"], "latch_sleep"),
    ("undo records to purge", ["purge_records"], "purge_record"),
    ("version walks", ["version_walks"], "version_walk"),
    ("versions built", ["version_steps"], "version_step"),
    ("undo page reads", ["page_reads_walk", "page_reads_purge", "page_reads_other"], "undo_read"),
]
PERCENTILES = [  # (figure, path in report --json)
    ("block-latch wait p50 us", ("block_lock", "wait_us", "p50")),
    ("block-latch wait p99 us", ("block_lock", "wait_us", "p99")),
    ("other latch wait p50 us", ("other_latch", "wait_us", "p50")),
    ("other latch wait p99 us", ("other_latch", "wait_us", "p99")),
    ("version walk depth p50", ("version_walk", "depth", "p50")),
    ("version walk depth p99", ("version_walk", "depth", "p99")),
    ("version walk p50 us", ("version_walk", "latency_us", "p50")),
    ("version walk p99 us", ("version_walk", "latency_us", "p99")),
    ("undo page read p50 us", ("undo", "read_latency_us", "p50")),
    ("undo page read p99 us", ("undo", "read_latency_us", "p99")),
]
SPLITS = [("purge batch time", ("purge", "batch_time_ms")), ("purge worker time", ("purge", "worker_time_ms"))]


def record_both(pid: int, seconds: int, out: Path) -> None:
    """Both recorders on the same server over the same seconds."""
    recorders = [subprocess.Popen([INNOSTALL, "record", "--pid", str(pid), "--duration", str(seconds),
                                   *extra, "-o", str(out / name)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
                 for name, extra in (("default", []), ("exact", ["--exact"]))]
    for r in recorders:
        if r.wait(timeout=seconds + 120):
            raise RuntimeError(f"innostall record failed: {r.stderr.read().strip()}")


def report(path: Path) -> dict:
    result = subprocess.run([INNOSTALL, "report", str(path), "--json"], capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"innostall report {path}: {result.stderr.strip()}")
    return json.loads(result.stdout)


def at(found: dict, path: tuple[str, ...]):
    for key in path:
        found = found.get(key) if isinstance(found, dict) else None
    return found


def row(figure: str, kind: str, estimate: float | None, exact: float | None, how: str) -> dict:
    error = None if not exact or estimate is None else estimate / exact - 1
    return {"figure": figure, "kind": kind, "estimate": estimate, "exact": exact, "error": error, "how": how,
            "within": None if error is None else abs(error) <= ACCURACY_TARGET}


def compare(sampled_dir: Path, exact_dir: Path) -> list[dict]:
    sampled, exact = recording.load(str(sampled_dir)), recording.load(str(exact_dir))
    rows = []
    for figure, names, probe in COUNTS:
        scale = 1e-6 if figure.endswith(" ms") else 1
        truth = sum(exact.counter_total(n) for n in names) * scale
        found = estimates.estimated_total(sampled, names, probe)
        seen = sum(sampled.counter_total(n) for n in names) * scale
        rows.append(row(figure, "count", seen if found is None else found["estimated"] * scale, truth,
                        "whole (group not sampled)" if found is None else "scaled by attached share"))
    by_default, by_exact = report(sampled_dir), report(exact_dir)
    for figure, path in PERCENTILES:
        rows.append(row(figure, "percentile", at(by_default, path), at(by_exact, path), "of the events watched"))
    for figure, path in SPLITS:
        ours, theirs = at(by_default, path) or {}, at(by_exact, path) or {}
        total_ours, total_theirs = sum(v or 0 for v in ours.values()), sum(v or 0 for v in theirs.values())
        for part in theirs:
            if total_ours and total_theirs and theirs[part] is not None:
                rows.append(row(f"{figure}: {part} share", "time split", (ours.get(part) or 0) / total_ours,
                                theirs[part] / total_theirs, "of the spans watched whole"))
    return rows


def lines(rows: list[dict]) -> list[str]:
    def num(v):
        return "-" if v is None else (f"{v:,.3f}" if abs(v) < 10 else f"{v:,.0f}")
    out = ["| figure | kind | default (estimate) | --exact | error | within +-15% | how |",
           "|---|---|---:|---:|---:|---|---|"]
    for r in rows:
        error = "-" if r["error"] is None else f"{100 * r['error']:+.0f}%"
        within = "-" if r["within"] is None else ("yes" if r["within"] else "NO")
        out.append(f"| {r['figure']} | {r['kind']} | {num(r['estimate'])} | {num(r['exact'])} | {error} | {within} "
                   f"| {r['how']} |")
    return out


def measure_accuracy(pid: int, seconds: int, out: Path) -> list[dict]:
    """Both recordings on the running server under a load already running; the rows."""
    subprocess.run(["rm", "-rf", str(out)], check=True)
    record_both(pid, seconds, out)
    return compare(out / "default", out / "exact")


def main() -> int:
    from . import load, server
    from .settings import RATE_SHARE, STEADY_LOAD
    seconds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    bench_server = server.start_server()
    try:
        server.fixture("load", *STEADY_LOAD)
        rate = int(load.capacity_tps() * RATE_SHARE)
        steady = load.steady_load(seconds + 60, rate)
        try:
            time.sleep(3)
            rows = measure_accuracy(bench_server.pid, seconds, Path("/tmp/innostall-accuracy"))
        finally:
            steady.stop()
    except RuntimeError as e:
        print(f"accuracy: {e}", file=sys.stderr)
        return 1
    finally:
        server.fixture("stop")
    print(f"steady load at {rate} tps, {seconds} s, default against --exact at the same moments")
    print("\n".join(lines(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
