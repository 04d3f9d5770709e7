"""verify's SET GLOBAL change is undone whole: every value put back before a failure is
told, so that a setting the server will not take back (MariaDB 11.4.5 kept
innodb_log_file_buffering ON after SET GLOBAL ... = OFF) leaves no other one changed."""
from __future__ import annotations

import re

import pytest

from innostall.collector.verify.changes import SetGlobal
from innostall.errors import UserError


class StubbornServer:
    """Globals in a dict; innodb_log_file_buffering, once ON, stays ON (as the replica did)."""

    def __init__(self, **values: str):
        self.values = dict(values)

    def query(self, sql: str, args=None):
        if m := re.fullmatch(r"SELECT @@GLOBAL\.(\w+)", sql):
            return [(self.values[m[1]],)]
        name, value = re.fullmatch(r"SET GLOBAL (\w+) = (.+)", sql).groups()
        value = args[0] if args else value
        if not (name == "innodb_log_file_buffering" and self.values[name] == "1"):
            self.values[name] = {"ON": "1", "OFF": "0"}.get(value, value)
        return []


def test_a_value_the_server_keeps_is_told_after_every_other_one_is_put_back():
    server = StubbornServer(innodb_flush_log_at_trx_commit="1", innodb_log_file_buffering="0")
    server.conn = type("Conn", (), {"_read_timeout": 2})()
    change = SetGlobal("innodb_flush_log_at_trx_commit=2,innodb_log_file_buffering=ON")
    change.apply(server)
    assert server.values == {"innodb_flush_log_at_trx_commit": "2", "innodb_log_file_buffering": "1"}
    with pytest.raises(UserError, match="innodb_log_file_buffering reads 1 after the restore, not 0"):
        change.undo(server)
    assert server.values["innodb_flush_log_at_trx_commit"] == "1"
