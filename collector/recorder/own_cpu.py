"""What innostall's own processes cost the server's machine, beside the probes: CPU seconds
to start, while tracing, and writing the tables. The report shows them."""
from __future__ import annotations

import contextlib
import os
import resource


def process_cpu_s(pid: int) -> float | None:
    """A running (or not yet reaped) process's CPU seconds, from /proc; None once gone."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return None


def self_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def own_cpu_s(loader_pid: int | None = None) -> float:
    """CPU time spent so far by this process and by the loader while it runs (/proc).
    Children reaped are not counted (RUSAGE_CHILDREN): where the recorder runs inside
    another program, every child that program reaps meanwhile would be (in a fresh root's
    suite, the fixtures' downloads reaped during an 8-s recording made it '605.8% of one
    core'). The loader is read at its last snapshot, before it exits (recorder.py)."""
    return self_cpu_s() + ((process_cpu_s(loader_pid) or 0.0) if loader_pid else 0.0)


def own_cpu_accounts(start: dict, traced_cpu_s: float, tables_s: float) -> dict:
    """What innostall's own processes cost, beside the probes: CPU seconds to attach
    (discovery, BPF load, calibration), while tracing, and writing the tables (at idle
    priority, in a child: tables_s, what it and this process spent meanwhile). They run
    on the server's machine, so the report shows them."""
    if "start" not in start:
        return {}
    return {"start": round(start["start"], 3),
            "tracing": round(traced_cpu_s - start["start"], 3),
            "tables": round(tables_s, 3)}
