"""Optional SQL access (collector/server/sql.py): on real servers, a connection holding a consistent
snapshot is found by the OS thread id the server itself reports for it; the socket is found
from the server's pid, also in a chroot; the ways it fails are one line each."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from innostall.collector.server import sql
from innostall.errors import UserError


def test_the_dsn_form():
    assert sql.parse_dsn("/run/mysqld/mysqld.sock") == sql.Dsn("root", "/run/mysqld/mysqld.sock")
    assert sql.parse_dsn("monitor@/tmp/my sql.sock") == sql.Dsn("monitor", "/tmp/my sql.sock")
    assert sql.parse_dsn("a@b@/x.sock") == sql.Dsn("a@b", "/x.sock")


@pytest.mark.parametrize("dsn", ["localhost:3306", "root@relative.sock", "@/x.sock", "root@", "u@/a\n/b"])
def test_a_bad_dsn_is_one_line(dsn):
    with pytest.raises(UserError) as e:
        sql.connect(None, dsn)
    print(e.value)
    assert str(e.value).startswith("--sql ") and "\n" not in str(e.value)
    assert "[USER@]/path/to/mysqld.sock" in str(e.value)


def test_a_missing_socket_is_no_access_with_the_reason(tmp_path):
    session, reason = sql.connect(os.getpid(), f"root@{tmp_path}/mysqld.sock")
    assert session is None
    assert reason.startswith(f"no SQL access: root@{tmp_path}/mysqld.sock: ")
    assert "No such file or directory" in reason and "\n" not in reason
    print(reason)


def test_a_server_that_never_answers_is_given_up_within_the_timeout(tmp_path):
    path = str(tmp_path / "silent.sock")
    with socket.socket(socket.AF_UNIX) as silent:
        silent.bind(path)
        silent.listen()  # accepts into the backlog, never greets
        start = time.monotonic()
        session, reason = sql.connect(None, f"root@{path}")
        waited = time.monotonic() - start
    print(f"{waited:.2f} s: {reason}")
    assert session is None and reason.startswith(f"no SQL access: root@{path}: ")
    assert waited < sql.TIMEOUT_S + 1


def test_no_process_and_no_dsn_is_no_access():
    session, reason = sql.connect(None)
    assert session is None and "give --sql" in reason


def test_the_option_file_socket_is_the_last_in_a_server_group():
    text = """
[client]
socket = /client/only.sock
[mysqld]
socket=/first.sock
[mysqld-8.0]
socket = '/versioned.sock'  # a comment
[mysqldump]
socket = /dump.sock
!includedir /etc/mysql/conf.d/
"""
    assert sql.option_file_socket(text) == "/versioned.sock"
    assert sql.option_file_socket("[client]\nsocket=/c.sock\n") is None


def test_candidate_sockets_come_from_the_command_line_the_option_file_and_what_it_listens_on(tmp_path):
    cnf = tmp_path / "my.cnf"
    cnf.write_text("[server]\nsocket = /from/defaults-file.sock\n")
    listening = str(tmp_path / "listen ing.sock")  # /proc/net/unix shows the space as is
    mysqlx = str(tmp_path / "mysqlx.sock")
    # A stand-in with a server's command line that listens where a server would.
    script = ("import socket, sys, time\n"
              "for p in sys.argv[1:3]:\n"
              "    s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(); globals()[p] = s\n"
              "print('ready', flush=True); time.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, listening, mysqlx, "--socket", "/from/cmdline.sock",
                             f"--defaults-file={cnf}"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        candidates = sql.server_sockets(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert candidates == ["/from/cmdline.sock", "/from/defaults-file.sock", listening, *sql.COMPILED_SOCKETS]


def test_statement_text_is_cut_and_never_fails_to_decode():
    assert sql.statement_text(None) is None
    assert sql.statement_text(b"SELECT 1", keep_literals=True) == "SELECT 1"
    assert sql.statement_text(b"SELECT '\xff\xfe'", keep_literals=True) == "SELECT '\ufffd\ufffd'"
    cut = sql.statement_text(("é" * 201).encode())
    assert cut == "é" * sql.STATEMENT_CHARS + "…"


def test_a_long_socket_path_is_reached_through_its_directory(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    path = str(deep / "mysqld.sock")
    assert len(path) > sql.LONGEST_SOCKET_PATH
    fds: list[int] = []
    try:
        with socket.socket(socket.AF_UNIX) as server, socket.socket(socket.AF_UNIX) as client:
            server.bind(sql.short_path(path, fds))
            server.listen()
            client.connect(sql.short_path(path, fds))
        assert os.path.exists(path)  # bound where the long path says
    finally:
        for fd in fds:
            os.close(fd)
