"""Ctrl-C, SIGTERM and SIGHUP for the whole of a recording, from before its directory is
made to its last meta.json: one handler, installed first and given back last, so no
signal falls between two handlers.

- While it starts (until the loader says its probes are attached), a signal ends the
  start: the loader, if there is one, is ended (SIGKILL: the kernel detaches whatever it
  had attached as its descriptors close) and waited for, and the directory the recording
  made is taken back, by the code that catches Interrupted.
- Once attached, the first signal asks the loader to stop (it prints its last snapshot and
  the recording ends as usual); a second ends it at once: the loader is ended and waited
  for, so no probe outlives it, then EndedAtOnce is raised where the recorder is.
- A few steps must not be cut in the middle (the loader's start, between its fork and its
  handle being kept; making the directory): they are `held()`, and a signal that comes
  then is acted on as the hold ends, never lost.

The loader runs in a session of its own (collector/loader/loader.py): the terminal's
Ctrl-C reaches only us, and what reaches the loader is what we forward."""
from __future__ import annotations

import contextlib
import signal
import subprocess

from innostall.errors import UserError

ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
LOADER_END_WAIT_S = 10  # for the loader, once killed, to be gone (a process in D state waits for its I/O)


class Interrupted(BaseException):
    """A signal while the recording starts: the caller takes back what it made. A
    BaseException, as KeyboardInterrupt is: no `except Exception` on the way swallows it."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class EndedAtOnce(BaseException):
    """A second signal once the probes were attached: the loader is already ended."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class EndedBySignal(UserError):
    """One line, and the exit status of a command a signal ended (128 + SIGINT)."""

    exit_code = 130


class Stopping:
    """The ending signals' handler for one recording (a context manager)."""

    def __init__(self):
        self.received: list[str] = []  # every ending signal, in order
        self.acted = 0  # how many of them were acted on
        self.holding = 0
        self.proc: subprocess.Popen | None = None
        self.attached, self.attached_at = False, None  # attached_at: time.monotonic() at the attach
        self.quiet = False  # signals only noted: after the loader's end, or while a start is taken back
        self.loader_end_mark = None  # how many signals had come when the loader ended
        self.previous: dict = {}

    def __enter__(self) -> "Stopping":
        self.previous = {s: signal.signal(s, self.on_signal) for s in ENDING}
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self.previous.items():
            signal.signal(s, handler)

    def on_signal(self, signum, frame) -> None:
        self.received.append(signal.Signals(signum).name)
        if not self.holding:
            self.act()

    @contextlib.contextmanager
    def held(self):
        """A step no signal cuts in the middle: one that comes meanwhile is acted on after."""
        self.holding += 1
        try:
            yield
        finally:
            self.holding -= 1
        if not self.holding:
            self.act()

    def act(self) -> None:
        """What the signals not yet acted on ask for."""
        while self.acted < len(self.received):
            self.acted += 1
            name = self.received[self.acted - 1]
            if self.quiet:
                continue
            if not self.attached:
                raise Interrupted(name)
            if self.acted == 1:
                self.forward()
            else:
                self.end_loader()
                raise EndedAtOnce(name)

    def forward(self) -> None:
        """Ask the loader to stop: its last snapshot still comes."""
        if self.proc:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGINT)

    def end_loader(self) -> None:
        """The loader ended now and waited for: no probe outlives the recorder."""
        if self.proc is None or self.proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=LOADER_END_WAIT_S)

    def loader_ended(self) -> None:
        """From the loader's end, signals are only noted: what is left (the tables, a
        watch's saves) asks after_loader() whether to skip it."""
        self.quiet = True
        if self.loader_end_mark is None:
            self.loader_end_mark = len(self.received)

    def after_loader(self) -> str | None:
        """The name of the first signal since the loader ended, if one came: the tables not
        yet written are skipped (the report reads the journal instead)."""
        mark = self.loader_end_mark
        return self.received[mark] if mark is not None and len(self.received) > mark else None
