"""`innostall bpftrace` scripts, run by bpftrace against real servers under load."""
import re
import signal
import subprocess
import threading
import time

import pytest

from conftest import INNOSTALL, stop_load
from innostall.collector.discovery import discover, target
from procmem import INT3, code_byte, file_byte


def run_bpftrace(script: str, pid: int, seen, probed: tuple[str, int]) -> tuple[int, str]:
    """bpftrace until seen() says what it measures has happened since its probes were in
    (at most MEASURE_S): a SIGINT before it has set its handler kills it (-2; it took over
    8 s to get there on a loaded machine, and its stdout, a pipe, is block-buffered, so its
    "Attaching" line cannot tell). probed: (path, offset) of a probe of the script, whose
    breakpoint in the server's code says the probes are in. seen: called once they are all
    in, it returns a check, true once the server has done the work the script must count."""
    proc = subprocess.Popen(["bpftrace", "-p", str(pid), "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    proc.stdin.write(script)
    proc.stdin.close()
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.append(proc.stdout.read()), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while proc.poll() is None and code_byte(pid, probed[1]) != INT3 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1)  # the rest of its probes
    done = seen()
    deadline = time.monotonic() + MEASURE_S
    while proc.poll() is None and not done() and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    rc = proc.wait(timeout=60)
    reader.join(timeout=10)
    return rc, "".join(output)


# The longest it measures: before, it measured 8 s whatever happened. It now ends once the
# server has counted two purge calls since the probes were in (purge_calls_since), well
# within this under load; one that never comes still ends, and fails the count.
MEASURE_S = 30


def purge_calls_since(srv):
    """A check, true once the server counted two trx_purge calls (INNODB_METRICS
    purge_invoked, incremented as its last statement) after this call: the second began
    after the first ended, so after the probes were in, and its entry and return were both
    seen by the script's purge probe (@purge_batches, @purge_batch_us)."""
    conn = srv.connect()
    start = srv.metric(conn, "purge_invoked")
    return lambda: srv.metric(conn, "purge_invoked") >= start + 2


def load_running(srv, timeout_s: float = 60) -> None:
    """Until the load's updates have begun (the server's Handler_update moves; MariaDB 11.4
    has no Innodb_rows_updated): the script is run under load, as before with a fixed 2 s."""
    with srv.connect() as conn:
        start, deadline = srv.status(conn, "Handler_update"), time.monotonic() + timeout_s
        while srv.status(conn, "Handler_update") == start and time.monotonic() < deadline:
            time.sleep(0.1)


def counter(output: str, name: str) -> int:
    m = re.search(rf"^@{name}: (\d+)$", output, re.M)
    return int(m.group(1)) if m else 0


@pytest.mark.parametrize("server_name", ["mariadb-11.4.5", "mysql-8.0.15"])
def test_generated_script_runs_under_load(servers, server_name):
    srv = servers(server_name)
    gen = subprocess.run(INNOSTALL + ["bpftrace", "--pid", str(srv.pid)], capture_output=True, text=True)
    assert gen.returncode == 0, gen.stderr
    tgt = target.from_pid(srv.pid)
    attach_points = len(re.findall(r"^u(?:ret)?probe:", gen.stdout, re.M)) + 2  # + BEGIN, END
    purge, = discover.resolve(tgt, ["purge_batch"])
    load = srv.sysbench("oltp_read_write", 30)
    try:
        load_running(srv)
        rc, out = run_bpftrace(gen.stdout, srv.pid, lambda: purge_calls_since(srv), (tgt.path, purge.offset))
    finally:
        stop_load(load)
    print(out[:3000])
    assert rc == 0, out
    m = re.search(r"Attaching (\d+) probes", out)
    assert m and int(m.group(1)) == attach_points  # every probe of the script attached
    assert "ERROR" not in out.replace("ERROR: Unknown error -1: couldn't set RLIMIT_MEMLOCK", "")
    assert counter(out, "purge_batches") > 0
    assert "@purge_batch_us:" in out
    assert "_start[" not in out  # scratch maps were cleared at END
    assert code_byte(srv.pid, purge.offset) == file_byte(tgt.path, purge.offset)
    assert srv.serves()
