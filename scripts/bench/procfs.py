"""What /proc says about a process and the machine: CPU time, peak RSS, children, perf events."""
from __future__ import annotations

import contextlib
import os

TICKS = os.sysconf("SC_CLK_TCK")


def proc_stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat after the name: state first (field 3 of proc(5) is index 0)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()  # the name in () may hold spaces


def cpu_seconds(pid: int) -> float:
    """utime + stime of every thread of pid so far: uprobe and BPF time is charged here."""
    fields = proc_stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / TICKS


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def machine_ticks() -> tuple[int, int]:
    """(busy, all) CPU ticks of the whole machine, to see what else ran in a window."""
    with open("/proc/stat") as f:
        ticks = [int(t) for t in f.readline().split()[1:9]]  # user .. steal; guest is in user
    idle = ticks[3] + ticks[4]  # idle + iowait
    return sum(ticks) - idle, sum(ticks)


def children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if entry.isdigit() and int(proc_stat_fields(int(entry))[1]) == pid:
                kids.append(int(entry))
    return kids


def alive(pid: int) -> bool:
    """Running, and not a zombie waiting to be reaped."""
    try:
        return proc_stat_fields(pid)[0] != "Z"
    except OSError:
        return False


def perf_events(pid: int) -> int:
    """Perf event file descriptors the process holds."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:[perf_event]"
    return count
