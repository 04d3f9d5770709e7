"""A slow disk for one process: its writes throttled by the cgroup v1 blkio controller, so
that a fixture server's page cleaners fall behind its writers as on a saturated disk in
production. Throttled: the disk holding the server's data directory (its whole disk where
that is a partition). Hosts that mount only cgroup v2 would need io.max delegated to a
child group; the tests that need this skip there and say so."""
from __future__ import annotations

import contextlib
import os
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
