"""The replica's own lag, as SHOW ... STATUS gives it (collector/server/replica_lag.py)."""
from innostall.collector.server.replica_lag import lag_of


def test_the_largest_lag_of_the_channels_that_report_one():
    columns = ["Connection_name", "Seconds_Behind_Master", "Executed_log_entries"]
    assert lag_of(columns, [("a", 3, 10), ("b", None, 4), ("c", 12, 0)]) == 12


def test_no_lag_while_replication_is_stopped_and_mysqls_spelling():
    assert lag_of(["Seconds_Behind_Master"], [(None,)]) is None
    assert lag_of(["Replica_IO_State", "Seconds_Behind_Source"], [("Waiting", 0)]) == 0
    assert lag_of(["Seconds_Behind_Source"], []) is None
