"""The recorder's one handler for Ctrl-C, SIGTERM and SIGHUP (collector/recorder/stopping.py),
with a child process in the loader's place: a signal while starting ends the start; once
attached the first asks the loader to stop and a second ends it at once, the loader first;
a signal in a held step is acted on after it, never lost; after the loader's end a signal
skips the tables. The recorder under real signals: test_signals_live.py."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from innostall.collector.recorder import store
from innostall.collector.recorder.stopping import EndedAtOnce, Interrupted, Stopping

# stands for the loader: ends on SIGINT as it does, after saying so. The handler writes with
# os.write: a print could land inside the print of 'ready' still returning (a reentrant
# call into the buffered stdout, which failed the fresh root's run once)
LOADER = ("import os, signal, time\n"
          "signal.signal(signal.SIGINT, lambda *a: (os.write(1, b'stopping\\n'), os._exit(0)))\n"
          "print('ready', flush=True)\n"
          "time.sleep(60)\n")


def loader() -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", LOADER], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout.readline() == "ready\n"
    return proc


def interrupt() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # the handler runs at the next bytecode after the signal's arrival


def test_a_signal_while_starting_ends_the_start_and_the_handlers_are_given_back():
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(Interrupted) as raised:
        with Stopping():
            interrupt()
    assert raised.value.name == "SIGINT" and signal.getsignal(signal.SIGINT) is before


def test_a_signal_in_a_held_step_is_acted_on_after_it():
    with Stopping() as stopping:
        with pytest.raises(Interrupted):
            with stopping.held():
                interrupt()
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
                finished_the_step = True
        assert finished_the_step and stopping.received == ["SIGINT", "SIGTERM"]


def test_the_first_signal_asks_the_loader_to_stop_and_a_second_ends_it_at_once():
    proc = loader()
    try:
        with Stopping() as stopping:
            stopping.proc, stopping.attached = proc, True
            interrupt()
            assert proc.stdout.readline() == "stopping\n"  # asked, and it ends by itself
            proc.wait(5)
        second = loader()
        with Stopping() as stopping:
            stopping.proc, stopping.attached = second, True
            stopping.received.append("SIGINT")  # as if forwarded already: the loader is slow to end
            stopping.acted = 1
            with pytest.raises(EndedAtOnce) as raised:
                interrupt()
            assert raised.value.name == "SIGINT" and second.returncode == -signal.SIGKILL  # ended and waited for
    finally:
        for p in (proc, locals().get("second")):
            if p and p.poll() is None:
                p.kill()
                p.wait()


def test_after_the_loader_a_signal_is_noted_and_skips_the_tables(tmp_path):
    with Stopping() as stopping:
        stopping.attached = True
        stopping.loader_ended()
        assert stopping.after_loader() is None
        interrupt()  # noted, not raised
        assert stopping.after_loader() == "SIGINT"
        (tmp_path / "counters.parquet").write_bytes(b"half")
        assert store.write_tables_aside(str(tmp_path), None, stopping.after_loader) == "SIGINT"
        assert not list(tmp_path.glob("*.parquet"))  # none half-written is left to be read
