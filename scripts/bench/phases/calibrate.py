"""Phase 1, the microbenchmark: what a probe hit costs on this kernel, as the loader itself
measures it at start (innostall-loader --calibrate)."""
from __future__ import annotations

import contextlib
import json
import subprocess

from ..harness import Bench
from ..log import log
from ..settings import CALIBRATE_TIMEOUT_S, LOADER


def calibrate() -> dict:
    """The loader's calibration line, or why there is none."""
    try:
        result = subprocess.run([LOADER, "--calibrate"], capture_output=True, text=True,
                                timeout=CALIBRATE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"status": "missing", "error": str(e)}
    for line in result.stdout.splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if isinstance(record, dict) and record.get("type") == "calibration":
                return {"status": "ok", **record}
    error = result.stderr.strip() or f"exit status {result.returncode}, no calibration line"
    return {"status": "missing", "error": error}


def phase_calibrate(bench: Bench) -> None:
    log("phase 1: microbenchmark (innostall-loader --calibrate)")
    found = calibrate()
    bench.results["calibration"] = found
    if found["status"] != "ok":
        log(f"  calibration missing: {found['error']}")
    else:
        log("  " + json.dumps(found))
