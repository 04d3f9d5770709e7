"""Errors meant for the user: printed as one line, never as a traceback."""


class UserError(Exception):
    """A problem the user can fix; the message names the fix."""

    exit_code = 1


class NotCovered(UserError):
    """The target is understood but the probes needed are not available."""

    exit_code = 2
