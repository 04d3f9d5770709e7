"""The phases of a run, in order. Each takes the Bench, writes its section of the results,
and leaves nothing running; a failure ends the phase, not the run."""
from .accuracy import phase_accuracy
from .calibrate import phase_calibrate
from .pfs import phase_pfs
from .stall import phase_stall
from .startup import phase_startup
from .steady import phase_steady
from .worst import phase_worst

IN_ORDER = (phase_calibrate, phase_startup, phase_steady, phase_pfs, phase_worst, phase_stall, phase_accuracy)


def short_name(phase) -> str:
    """The name BENCH_PHASES uses: phase_steady -> steady."""
    return phase.__name__.removeprefix("phase_")
