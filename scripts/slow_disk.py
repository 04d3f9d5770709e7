"""A slow disk for one process: its writes throttled by the cgroup v1 blkio controller, so
that a fixture server's page cleaners fall behind its writers as on a saturated disk in
production. Throttled: the disk holding the server's data directory (its whole disk where
that is a partition). Hosts that mount only cgroup v2 would need io.max delegated to a
child group; the tests that need this skip there and say so.

Run as a command (scripts/scenarios/checkpoint-age.sh --slow-disk does), it holds the
limit until it is sent SIGTERM or SIGINT:  slow_disk.py PID DATA_DIR IOPS"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from pathlib import Path

BLKIO = Path("/sys/fs/cgroup/blkio")
LIMIT = "blkio.throttle.write_iops_device"
GROUP = BLKIO / "innostall-slow-disk"


def available() -> bool:
    return (BLKIO / LIMIT).exists()


def whole_disk(path: Path) -> str:
    """MAJ:MIN of the disk holding path (throttles are set on disks, not partitions)."""
    dev = os.stat(path).st_dev
    block = Path("/sys/dev/block") / f"{os.major(dev)}:{os.minor(dev)}"
    if (block / "partition").exists():
        return (block.resolve().parent / "dev").read_text().strip()
    return f"{os.major(dev)}:{os.minor(dev)}"


def blkio_group(pid: int) -> Path:
    line = next(line for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()
                if line.split(":")[1] == "blkio")
    return BLKIO / line.split(":", 2)[2].lstrip("/")


@contextlib.contextmanager
def slow_writes(pid: int, data_dir: Path, iops: int):
    """pid's writes to the disk of data_dir at most iops a second, until the block ends;
    then the limit is lifted before pid goes back (the writes it holds go at once: moved
    out under the limit, they would drain at its pace)."""
    disk, home = whole_disk(data_dir), blkio_group(pid)
    GROUP.mkdir(exist_ok=True)
    try:
        (GROUP / LIMIT).write_text(f"{disk} {iops}\n")
        (GROUP / "cgroup.procs").write_text(f"{pid}\n")
        yield
    finally:
        for step in (lambda: (GROUP / LIMIT).write_text(f"{disk} 0\n"),
                     lambda: (home / "cgroup.procs").write_text(f"{pid}\n"), GROUP.rmdir):
            with contextlib.suppress(OSError):
                step()


def hold(pid: int, data_dir: Path, iops: int) -> int:
    """The command line's work: slow pid's writes until SIGTERM or SIGINT, then lift it."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with slow_writes(pid, data_dir, iops):
        print(f"slow_disk: {pid}'s writes to {whole_disk(data_dir)} at most {iops}/s", flush=True)
        stop.wait()
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not all(a.isdigit() for a in (argv[0], argv[2])):
        print("usage: slow_disk.py PID DATA_DIR IOPS (until SIGTERM or SIGINT)", file=sys.stderr)
        return 2
    pid, data_dir, iops = int(argv[0]), Path(argv[1]), int(argv[2])
    if not available():
        print(f"slow_disk: needs the cgroup v1 blkio controller ({BLKIO / LIMIT} is missing)", file=sys.stderr)
        return 1
    try:
        return hold(pid, data_dir, iops)
    except (OSError, StopIteration) as err:
        print(f"slow_disk: cannot slow {pid}'s writes: {err or 'it has no blkio group'}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
