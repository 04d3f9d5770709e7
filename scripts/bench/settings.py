"""Every knob of the benchmark in one place: durations, sizes, arms, paths. The ones a dev
run may want shorter read a BENCH_* environment variable (listed by --help)."""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from fixture_servers import REPO

OVERRIDES: dict[str, str] = {}  # BENCH_* variable -> what it sets, for --help


def env_number(name: str, default: float, what: str) -> float:
    OVERRIDES[name] = f"{what} (default {default:g})"
    return float(os.environ.get(name, default))


def env_text(name: str, default: str, what: str) -> str:
    OVERRIDES[name] = f"{what} (default {default!r})"
    return os.environ.get(name, default)


ROUNDS = int(env_number("BENCH_ROUNDS", 7, "A/B pairs per comparison (>= 5)"))
WINDOW_S = env_number("BENCH_WINDOW", 12, "measured seconds per steady window")
SETTLE_S = env_number("BENCH_SETTLE", 2, "seconds after an arm switch, before measuring")
SCAN_TARGET_S = env_number("BENCH_SCAN", 5, "untraced worst-case scan seconds to build up to")
MAX_UPDATE_S = env_number("BENCH_MAX_UPDATE", 240, "cap on seconds spent growing the version chains")
RECORD_LEAD_S = env_number("BENCH_RECORD_LEAD", 2, "seconds the recorder is attached before a scan")

SERVER = "mariadb-11.4.5"
STEADY_LOAD = ("2", "20000")                           # fixture.sh load TABLES ROWS
SYSBENCH_THREADS = 8
RATE_SHARE = env_number("BENCH_RATE_SHARE", 0.5,
                        "steady load's rate, as a share of the untraced capacity; 0: flat out")
CAPACITY_S = 15                                        # the capacity run, warm-up included
CAPACITY_WARMUP_S = 4
WORST_ROWS = 200000                                    # the seed's table size
WORST_POOL = "2G"                                      # buffer pool of the worst-case phase
HOT_ROWS = 2000                                        # the updates cycle over ids 1..HOT_ROWS
UPDATE_BATCH = 500                                     # rows per UPDATE (one transaction)
QUIET_CORES = 0.1                                      # an idle server uses less than this
QUIET_MAX_S = 60
ATTACH_TIMEOUT_S = 60
STOP_TIMEOUT_S = 60
CALIBRATE_TIMEOUT_S = 300
STARTUP_ROUNDS = int(env_number("BENCH_STARTUP_ROUNDS", 20, "recordings started under load (startup phase)"))
STARTUP_STRETCH_S = env_number("BENCH_STARTUP_STRETCH", 5, "seconds of each untraced and traced stretch (startup phase)")
ACCURACY_S = int(env_number("BENCH_ACCURACY", 30, "seconds of the default and --exact recordings (accuracy phase)"))
STALL_ROUNDS = int(env_number("BENCH_STALL_ROUNDS", 2, "recordings of the hot-row stall per arm (stall phase)"))
STALL_CALM_S = int(env_number("BENCH_STALL_CALM", 6, "seconds of steady load before the stall (stall phase)"))
STALL_HOT_S = int(env_number("BENCH_STALL_HOT", 8, "seconds of the hot-row stall (stall phase)"))
# Issue 44's Intel VM calibrated a trap at 2,897 ns, about three times the AMD machine's: the
# stall phase runs again with the governor charging each trap this many times its calibration
HIT_COST_EMULATION = 3.0
PHASES = env_text("BENCH_PHASES", "calibrate,startup,steady,pfs,worst,stall,accuracy",
                  "the phases to run, a subset for dev runs").split(",")
RECORD_ARGS = shlex.split(env_text("BENCH_RECORD_ARGS", "", "more innostall record arguments"))
# The bpftrace arm traces the same probes as the default set, so the two compare like for like.
BPFTRACE_PROBES = env_text("BENCH_BPFTRACE_PROBES", "default",
                           "--probes of the bpftrace script; empty: every probe")
# default: the default set within the cost budget; exact: the same with the governor off
# (--exact), what the budget saves; full: every probe; bpftrace: the default set's script;
# record:ARGS, for a dev run: the default set with these record arguments (--budget=0.01)
def arm_list(text: str) -> tuple[str, ...]:
    """Arms split on ';' where there is one (a record:ARGS may hold commas), else on ','."""
    return tuple(arm for arm in text.split(";" if ";" in text else ",") if arm)


STEADY_ARMS = arm_list(env_text("BENCH_STEADY_ARMS", "default,exact,full,bpftrace",
                                "the traced arms of the steady phase (or record:ARGS), split "
                                "on ';' instead of ',' when an ARGS holds commas"))
SCAN_ARMS = ("default", "full", "bpftrace")

TOOLS = Path(sys.prefix).parent                        # the build dir whose venv runs us
INNOSTALL = str(Path(sys.prefix) / "bin" / "innostall")
LOADER = str(TOOLS / "innostall-loader")
YARDSTICK = str(TOOLS / "bench-yardstick")              # built by make bench (yardstick.c)
OUT_DIR = REPO / "bench" / "results"  # latest.*: the last run; dated folders: the runs kept


def recorded() -> dict:
    """The settings as bench/results/latest.json keeps them, with how two figures are read."""
    return {"phases": PHASES, "rounds": ROUNDS, "window_s": WINDOW_S, "settle_s": SETTLE_S,
            "scan_target_s": SCAN_TARGET_S, "max_update_s": MAX_UPDATE_S,
            "record_lead_s": RECORD_LEAD_S, "steady_load": STEADY_LOAD,
            "sysbench_threads": SYSBENCH_THREADS, "rate_share": RATE_SHARE,
            "startup_rounds": STARTUP_ROUNDS, "startup_stretch_s": STARTUP_STRETCH_S,
            "stall_rounds": STALL_ROUNDS, "stall_calm_s": STALL_CALM_S, "stall_hot_s": STALL_HOT_S,
            "hit_cost_emulation": HIT_COST_EMULATION, "accuracy_s": ACCURACY_S,
            "worst_rows": WORST_ROWS, "hot_rows": HOT_ROWS,
            "update_batch": UPDATE_BATCH, "record_args": RECORD_ARGS,
            "bpftrace_probes": BPFTRACE_PROBES,
            "transactions": "server counters Com_commit + Com_rollback, read with the CPU time",
            "p95": "median of sysbench's per-second p95 lines that fall wholly inside the window",
            "recorder_cpu": "python + loader utime+stime over the measured window, % of one core"}
