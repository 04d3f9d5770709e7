"""The report side of a long recording (issue 30's targets for 8 hours at 1 s intervals: the
text report under 5 s, the HTML under 15 s and 20 MB, memory bounded): `innostall report`
as text, --json and --html, each in a process of its own, ROUNDS times; wall time and peak
RSS (the child's ru_maxrss), the journal's and the page's size. Prints a markdown table.

    PYTHONPATH=scripts build/venv/bin/python -m bench.long_report RECORDING [ROUNDS] [-- REPORT ARGS]

RECORDING: one from bench.long_recording (or any). Arguments after -- go to every report
(--from 3600 --to 7200, to time a window)."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from innostall.format import journal_files

from .settings import REPO

INNOSTALL = REPO / "build" / "venv" / "bin" / "innostall"
TARGETS = {"text": "< 5 s", "json": "", "html": "< 15 s, < 20 MB"}


def timed(args: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB and exit status of one `innostall` run (output discarded)."""
    started = time.monotonic()
    with subprocess.Popen([str(INNOSTALL), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace")
    if proc.returncode:
        raise SystemExit(f"innostall {' '.join(args)} failed: {err.strip()}")
    return time.monotonic() - started, usage.ru_maxrss / 1024, proc.returncode


def measure(recording: Path, rounds: int, extra: list[str]) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        for kind, args in (("text", []), ("json", ["--json"]), ("html", ["--html", str(page)])):
            runs = [timed(["report", str(recording), *args, *extra]) for _ in range(rounds)]
            walls, rss = [r[0] for r in runs], [r[1] for r in runs]
            rows.append({"report": kind, "wall_s": statistics.median(walls), "min_s": min(walls),
                         "max_s": max(walls), "rss_mb": max(rss),
                         "html_mb": page.stat().st_size / 1e6 if kind == "html" else None})
    return rows


def markdown(recording: Path, rows: list[dict], rounds: int, extra: list[str]) -> str:
    journal = journal_files.disk_bytes(str(recording))
    tables = sum(p.stat().st_size for p in recording.glob("*.parquet"))
    lines = [f"`{recording}`{' ' + ' '.join(extra) if extra else ''}: journal "
             f"{journal / 1e6:,.1f} MB, Parquet tables {tables / 1e6:,.1f} MB; "
             f"{rounds} run(s) each, median (min–max)", "",
             "| report | wall s | peak RSS MB | HTML MB | target |", "|---|---:|---:|---:|---|"]
    for r in rows:
        size = f"{r['html_mb']:.1f}" if r["html_mb"] is not None else ""
        lines.append(f"| {r['report']} | {r['wall_s']:.2f} ({r['min_s']:.2f}–{r['max_s']:.2f}) | "
                     f"{r['rss_mb']:,.0f} | {size} | {TARGETS[r['report']]} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    if not argv:
        raise SystemExit(__doc__)
    recording, rounds = Path(argv[0]), int(argv[1]) if len(argv) > 1 else 3
    print(markdown(recording, measure(recording, rounds, extra), rounds, extra))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
