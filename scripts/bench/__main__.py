"""python -m bench, with scripts/ on the path (`make bench` runs it): a fresh datadir, then each phase
BENCH_PHASES selects, then the results. Needs root; --help lists the BENCH_* overrides."""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import pymysql

from fixture_servers import FixtureError

from . import __doc__ as ABOUT
from .errors import BenchError
from .harness import Bench
from .log import log
from .phases import IN_ORDER, short_name
from .results import complete, print_summary, write_results
from .server import fixture
from .settings import OVERRIDES, PHASES, SERVER

# A phase that fails with one of these is reported as failed, and the run goes on.
PHASE_FAILURES = (BenchError, FixtureError, pymysql.MySQLError)


def parse_args(argv: list[str] | None) -> None:
    """No options: --help only, to say what a run does and what the environment changes."""
    overrides = "\n".join(f"  {name:<22} {what}" for name, what in OVERRIDES.items())
    parser = argparse.ArgumentParser(prog="python -m bench", description=ABOUT,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="environment overrides:\n" + overrides)
    parser.parse_args(argv)


def exit_on_signal(signum, frame):
    raise KeyboardInterrupt  # SIGTERM and SIGHUP clean up like Ctrl-C


def run_phase(bench: Bench, phase) -> None:
    try:
        phase(bench)
    except PHASE_FAILURES as e:
        bench.results["errors"].append(f"{phase.__name__}: {e}")
        log(f"{phase.__name__} failed: {e}")
        bench.stop_all()


def run(bench: Bench) -> None:
    log(f"fresh {SERVER} datadir (fixture.sh init)")
    fixture("init")
    for phase in IN_ORDER:
        if short_name(phase) in PHASES:
            run_phase(bench, phase)


def main(argv: list[str] | None = None) -> int:
    parse_args(argv)
    if os.geteuid() != 0:
        print("bench: needs root (uprobes, BPF and bpftrace)", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, exit_on_signal)
    signal.signal(signal.SIGHUP, exit_on_signal)
    bench = Bench()
    started = time.monotonic()
    try:
        run(bench)
    except KeyboardInterrupt:
        log("interrupted: stopping tracers, load and server; results not written")
        return 130
    except (BenchError, FixtureError) as e:
        log(f"bench: {e}")
        return 1
    finally:
        bench.cleanup()
    results = bench.results
    complete(results, started)
    write_results(results)
    print_summary(results)
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
