"""What innostall's own processes cost the server's machine, beside the probes: CPU seconds
to start, while tracing, and writing the tables. The report shows them."""
from __future__ import annotations

import contextlib
import os
import resource


def own_cpu_s(loader_pid: int | None = None) -> float:
    """CPU time spent so far by this process and its children: those reaped (the schema
    query; the loader once it has exited), and the loader while it runs (/proc)."""
    spent = sum(getattr(resource.getrusage(who), field) for who in
                (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN) for field in ("ru_utime", "ru_stime"))
    if loader_pid:
        with contextlib.suppress(OSError, IndexError, ValueError):
            with open(f"/proc/{loader_pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            spent += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return spent


def own_cpu_accounts(start: dict, traced_cpu_s: float) -> dict:
    """What innostall's own processes cost, beside the probes: CPU seconds to attach
    (discovery, BPF load, calibration), while tracing, and writing the tables (at idle
    priority). They run on the server's machine, so the report shows them."""
    if "start" not in start:
        return {}
    return {"start": round(start["start"], 3),
            "tracing": round(traced_cpu_s - start["start"], 3),
            "tables": round(own_cpu_s() - traced_cpu_s, 3)}
