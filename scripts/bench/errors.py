"""What a failed step raises, and how far the failure reaches."""


class BenchError(Exception):
    """A step failed; the phase it belongs to is reported as failed and the run goes on."""


class LoadFailed(BenchError):
    """The phase's sysbench ended: no later window of the phase can be measured."""
