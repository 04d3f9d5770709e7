"""The end of a run: what it ran on and with, the targets, bench/results/latest.json and
bench/results/latest.md, and the summary printed to the terminal."""
from __future__ import annotations

import datetime
import json
import os
import platform
import time

from fixture_servers import REPO

from . import accuracy, unsampled
from .markdown import markdown
from .processes import first_line
from .settings import INNOSTALL, OUT_DIR, SERVER, recorded
from .tables import RATIO_HEADER, TARGET_HEADER, comparison_rows, target_rows, text_table
from .targets import targets


def machine_info(version: str | None) -> dict:
    with open("/proc/cpuinfo") as f:
        model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "kernel": platform.release(), "nproc": os.cpu_count(), "cpu": model,
            "server": f"{SERVER} ({version})", "sysbench": first_line("sysbench", "--version"),
            "bpftrace": first_line("bpftrace", "--version"),
            "innostall": first_line(INNOSTALL, "--version"),
            "commit": first_line("git", "-C", str(REPO), "describe", "--always", "--dirty")}


def complete(results: dict, started: float) -> None:
    """Adds the machine, the settings, the run's length (since `started`, on the monotonic
    clock) and the targets to the results."""
    results.update(machine=machine_info(results.pop("server_version", None)), settings=recorded(),
                   run_minutes=round((time.monotonic() - started) / 60, 1))
    results["targets"] = targets(results)


def write_results(results: dict) -> None:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "latest.json").write_text(json.dumps(results, indent=2) + "\n")
    (OUT_DIR / "latest.md").write_text(markdown(results))


def print_summary(results: dict) -> None:
    print("\nRatios (B/A per pair)")
    print(text_table(RATIO_HEADER, comparison_rows(results)))
    print("\nTargets")
    print(text_table(TARGET_HEADER, target_rows(results)))
    print("\nEach recording's estimate against its budget, and the probes outside the sampled groups "
          "over 10% of it (their traps)")
    print("\n".join(unsampled.budget_lines(unsampled.bench_recordings(results))))
    if results.get("accuracy"):
        print("\nAccuracy: the default's figures against --exact at the same moments")
        print("\n".join(accuracy.lines(results["accuracy"]["rows"])))
    for error in results["errors"]:
        print(f"error: {error}")
    print(f"\nwrote {OUT_DIR / 'latest.json'} and {OUT_DIR / 'latest.md'}")
