"""What a budgeted recording sees of what happened: two recordings of the same server at the
same time, one under the default budget, one --exact, while the long-snapshot scenario runs
(the demo's load: a snapshot pins purge while updates pile up and a scan walks versions).
Both count the same events whenever their probes are attached, so the exact one is the
truth for the sampled one's counts. For each sampled count: the exact total, what the
budgeted recording saw, its group's coverage, and the share of the events it saw.

    build/venv/bin/python scripts/bench/sampled_vs_exact.py [SERVER] [SECONDS]

Issue 29's measure of how much sampling hides, and a base for any estimate made from
sampled counts (run as root; starts and stops the fixture server)."""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from innostall.analysis import cost, estimates, recording

TOP = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TOP / "scripts"))  # run as a script: the bench package beside it
from bench.accuracy import COUNTS  # noqa: E402 - make bench's accuracy phase reads the same counts
FIXTURE = TOP / "scripts" / "fixture.sh"
INNOSTALL = TOP / "build" / "venv" / "bin" / "innostall"


def fixture(server: str, *args: str) -> str:
    return subprocess.run([str(FIXTURE), server, *args], check=True, capture_output=True, text=True).stdout.strip()


def record_both(server: str, seconds: int, out: Path) -> None:
    pid = fixture(server, "pid")
    recorders = [subprocess.Popen([str(INNOSTALL), "record", "--pid", pid, "--duration", str(seconds + 4),
                                   *extra, "-o", str(out / name)], stderr=subprocess.DEVNULL)
                 for name, extra in (("sampled", []), ("exact", ["--exact"]))]
    time.sleep(5)  # both attached
    subprocess.run([str(TOP / "scripts" / "scenarios" / "long-snapshot.sh"), "--fixture", server,
                    "--seconds", str(seconds), "--open-at", str(seconds // 6),
                    "--commit-at", str(seconds * 11 // 20)], check=True, capture_output=True)
    for r in recorders:
        r.wait(timeout=120)


def table(sampled: recording.Recording, exact: recording.Recording) -> list[str]:
    lines = ["| count | exact | seen by the budgeted recording | its group attached | share seen "
             "| estimated (analysis/estimates.py) | estimate / exact |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for what, names, probe in COUNTS:
        scale = 1e-6 if what.endswith(" ms") else 1
        truth = sum(exact.counter_total(n) for n in names) * scale
        seen = sum(sampled.counter_total(n) for n in names) * scale
        share = f"{100 * seen / truth:.1f}%" if truth else "-"
        found = estimates.estimated_total(sampled, names, probe)
        whole = seen if found is None else found["estimated"] * scale
        ratio = f"{whole / truth:.2f}" if truth else "-"
        lines.append(f"| {what} | {truth:,.0f} | {seen:,.0f} | {100 * cost.coverage(sampled, probe):.0f}% | {share} "
                     f"| {whole:,.0f} | {ratio} |")
    return lines


def main() -> int:
    server = sys.argv[1] if len(sys.argv) > 1 else "mariadb-11.4.5"
    seconds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    fixture(server, "init")
    fixture(server, "start", "--innodb-buffer-pool-size=32M")
    try:
        fixture(server, "load", "1", "20000")
        with tempfile.TemporaryDirectory(prefix="innostall-sampled-") as tmp:
            record_both(server, seconds, Path(tmp))
            print("\n".join(table(recording.load(f"{tmp}/sampled"), recording.load(f"{tmp}/exact"))))
    finally:
        fixture(server, "stop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
