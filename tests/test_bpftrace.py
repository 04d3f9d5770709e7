"""`innostall bpftrace` scripts, run by bpftrace against real servers under load."""
import re
import signal
import subprocess
import time

import pytest

from conftest import INNOSTALL, stop_load
from innostall.collector import discover, target
from procmem import code_byte, file_byte


def run_bpftrace(script: str, pid: int, seconds: float) -> tuple[int, str]:
    proc = subprocess.Popen(["bpftrace", "-p", str(pid), "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    proc.stdin.write(script)
    proc.stdin.close()
    # SIGINT before bpftrace has attached kills it (a loaded machine took over 8 s to get there)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("Attaching"):
            break
    time.sleep(seconds)
    proc.send_signal(signal.SIGINT)
    out = "".join(lines) + proc.stdout.read()
    return proc.wait(timeout=60), out


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
    load = srv.sysbench("oltp_read_write", 30)
    try:
        time.sleep(2)
        rc, out = run_bpftrace(gen.stdout, srv.pid, 8)
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
    purge, = discover.resolve(tgt, ["purge_batch"])
    assert code_byte(srv.pid, purge.offset) == file_byte(tgt.path, purge.offset)
    assert srv.serves()
