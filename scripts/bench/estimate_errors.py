"""The measured error of each estimated count, for the report to say beside it (issue 44,
item 5): from make bench's accuracy rows (bench/accuracy.py), kept in dated results, to
analysis/measured_errors.json, which the package ships and analysis/estimates.py reads.

    PYTHONPATH=scripts build/venv/bin/python -m bench.estimate_errors RESULT.json ...

Each RESULT.json holds {"date", "accuracy": {"rate_tps", "seconds", "rows"}} (make bench's
latest.json, or a dated copy). A figure's error is its range over the runs given: one run
of one load says little, several say how far this estimator strays on that load. Only
counts are kept: they are what the report estimates ("about N in all")."""
from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "analysis" / "measured_errors.json"


def errors_of(results: list[dict]) -> dict:
    figures: dict[str, list[float]] = {}
    for result in results:
        for row in result["accuracy"]["rows"]:
            if row["kind"] == "count" and row["error"] is not None and row["how"] != "whole (group not sampled)":
                figures.setdefault(row["figure"], []).append(row["error"])
    return {name: {"low": round(min(e), 3), "high": round(max(e), 3), "runs": len(e)}
            for name, e in sorted(figures.items())}


def main(paths: list[str]) -> int:
    if not paths:
        print("usage: python -m bench.estimate_errors RESULT.json ...", file=sys.stderr)
        return 2
    try:
        results = [json.loads(Path(p).read_text()) for p in paths]
        figures = errors_of(results)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"estimate_errors: {e}", file=sys.stderr)
        return 1
    OUT.write_text(json.dumps({
        "what": "each estimated count against --exact at the same moments, make bench's accuracy phase",
        "load": "sysbench oltp_read_write, 8 threads, pareto, at a fixed rate of half the untraced capacity",
        "runs": [{"date": r.get("date") or r.get("machine", {}).get("date"), "tps": r["accuracy"]["rate_tps"],
                  "seconds": r["accuracy"]["seconds"]} for r in results],
        "figures": figures}, indent=1) + "\n")
    print(f"wrote {OUT}: {len(figures)} figures from {len(results)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
