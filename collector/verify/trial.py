"""verify's runs in order: the load as it is, `repeats` times (their spread is the noise),
then once per change, each change undone before the next run whatever happens. A run's
recording is kept under the output directory: baseline-1, baseline-2, change-1, ..."""
from __future__ import annotations

import os
import signal
from dataclasses import dataclass, field

from innostall.errors import UserError

from .changes import with_change
from .runs import recorded_run


@dataclass
class Trial:
    baselines: list[str] = field(default_factory=list)
    changed: list[tuple[str, str]] = field(default_factory=list)  # (recording, what was set and restored)


def terminate_as_interrupt(signum, frame):
    raise KeyboardInterrupt  # through every finally: each change is undone


def run_trial(pid: int, dsn: str | None, load: str, changes: list, out: str, repeats: int,
              record_args: list[str], say=print) -> Trial:
    try:
        os.makedirs(out)
    except FileExistsError:
        raise UserError(f"verify: {out} exists: give a new directory")
    previous = signal.signal(signal.SIGTERM, terminate_as_interrupt)
    trial = Trial()
    try:
        for n in range(1, repeats + 1):
            say(f"verify: run {n} of {repeats} as the server is")
            trial.baselines.append(recorded_run(pid, load, os.path.join(out, f"baseline-{n}"), record_args))
        for n, change in enumerate(changes, start=1):
            say(f"verify: the run with {change.words}")
            run = os.path.join(out, f"change-{n}")
            trial.changed.append(with_change(change, pid, dsn, lambda: recorded_run(pid, load, run, record_args)))
            say(f"verify: {trial.changed[-1][1]}")
    finally:
        signal.signal(signal.SIGTERM, previous)
    return trial
