"""How long discovery takes to read a build's struct layouts from its DWARF (issue 26's
targets: under 10 s the first time, under 0.3 s once cached), per fixture with DWARF.

    make bench-layouts            # or: PYTHONPATH=scripts python -m bench.layouts [ROUNDS]

First: an empty cache and the binary dropped from the page cache (posix_fadvise
DONTNEED; a file another process keeps mapped may stay resident, as on a live server).
Cached: the answer read back from the cache, in a fresh process each time, as a new
`innostall record` would. Medians and ranges of ROUNDS runs (default 5), printed as a
markdown table."""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

from .settings import REPO

FIXTURES = {"MariaDB 11.4.5": "mariadb-11.4.5/dist/bin/mariadbd",
            "MariaDB 10.11.5": "mariadb-10.11.5/dist/bin/mariadbd",
            "MariaDB 10.2.11": "mariadb-10.2.11/dist/bin/mysqld"}
PROBE = ("from innostall.collector.discovery import layouts, target; import sys; "
         "t = target.from_binary(sys.argv[1]); import time; s = time.perf_counter(); "
         "found = layouts.from_dwarf(t.elf, t.debug); print(time.perf_counter() - s, len(found['members']))")


def evict(path: str) -> None:
    with open(path, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def timed(binary: str, cache: str) -> tuple[float, int]:
    """Seconds from_dwarf took in a fresh process (its imports and the ELF opening aside)."""
    done = subprocess.run([sys.executable, "-c", PROBE, binary], capture_output=True, text=True,
                          env={**os.environ, "INNOSTALL_CACHE": cache}, check=True)
    seconds, members = done.stdout.split()
    return float(seconds), int(members)


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s ({min(values):.3f}–{max(values):.3f})"


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, {rounds} rounds\n")
    print("| build | file size | first | cached | members |")
    print("|---|---|---|---|---|")
    for label, relative in FIXTURES.items():
        binary = str(REPO / "build" / "fixtures" / relative)
        if not os.path.exists(binary):
            print(f"| {label} | not fetched | | | |")
            continue
        first, cached = [], []
        for _ in range(rounds):
            with tempfile.TemporaryDirectory() as cache:
                evict(binary)
                seconds, members = timed(binary, cache)
                first.append(seconds)
                cached.append(timed(binary, cache)[0])
        size = os.path.getsize(binary) / 1e6
        print(f"| {label} | {size:.0f} MB | {spread(first)} | {spread(cached)} | {members} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
