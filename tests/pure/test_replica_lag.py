"""The replica's own lag, as SHOW ... STATUS gives it (collector/server/replica_lag.py), the
signal it feeds the loader while the replica falls behind (collector/server/signals.py), and
the applier's redo wait per wait verify judges a sampled applier by (analysis/advice/judge.py)."""
import io
from types import SimpleNamespace

from innostall.collector.server.replica_lag import FEED_EVERY_S, FEED_SIGNAL, Behind, LagReader, lag_of
from innostall.analysis.advice.judge import figure_of
from innostall.collector.server.signals import NOT_FED, signal_plan


def test_the_largest_lag_of_the_channels_that_report_one():
    columns = ["Connection_name", "Seconds_Behind_Master", "Executed_log_entries"]
    assert lag_of(columns, [("a", 3, 10), ("b", None, 4), ("c", 12, 0)]) == 12


def test_no_lag_while_replication_is_stopped_and_mysqls_spelling():
    assert lag_of(["Seconds_Behind_Master"], [(None,)]) is None
    assert lag_of(["Replica_IO_State", "Seconds_Behind_Source"], [("Waiting", 0)]) == 0
    assert lag_of(["Seconds_Behind_Source"], []) is None


def test_behind_only_once_the_lag_climbed_and_until_it_is_back_at_0():
    behind = Behind()
    # the applier idle or keeping up, then falling behind: 0 says nothing, the first second of
    # lag after a 0 is a climb, held through a plateau and a fall until caught up
    seen = [behind.see(lag) for lag in (0, 0, 1, 2, 2, 1, 3, 0, 0)]
    assert seen == [False, False, True, True, True, True, True, False, False]


def test_a_lag_that_never_climbed_or_replication_stopped_opens_nothing():
    behind = Behind()
    assert [behind.see(lag) for lag in (5, 5, 5, 4)] == [False] * 4  # behind by a fixed offset from the start
    assert behind.see(6)  # ... until it climbs
    assert not behind.see(None)  # stopped: nothing to apply
    assert not behind.see(7)  # a reading after a stop is a start again


def test_the_lag_beyond_a_delay_set_on_purpose():
    columns = ["Connection_name", "Seconds_Behind_Master", "SQL_Delay"]
    assert lag_of(columns, [("a", 3605, 3600), ("b", 2, 0)], beyond_delay=True) == 5
    assert lag_of(columns, [("a", 3598, 3600)], beyond_delay=True) == 0
    assert lag_of(["Seconds_Behind_Source"], [(4,)], beyond_delay=True) == 4
    assert lag_of(columns, [("a", None, 0)], beyond_delay=True) is None


def test_the_loader_is_told_at_each_change_only():
    reader = LagReader(session=None, statement="SHOW ALL SLAVES STATUS", every_s=1.0)
    pipe = io.StringIO()
    reader.feed(pipe)
    columns = ["Seconds_Behind_Master", "SQL_Delay"]
    for lag in (0, 0, 1, 2, 0):
        reader.keep(columns, [(lag, 0)])
    assert pipe.getvalue().splitlines() == [f"{FEED_SIGNAL}=0", f"{FEED_SIGNAL}=1", f"{FEED_SIGNAL}=0"]
    assert reader.every_s == FEED_EVERY_S and reader.gauges() == {"replica_lag_s": 0}
    pipe.close()  # the loader gone: the reader stops telling, and goes on reading
    reader.keep(columns, [(1, 0)])
    reader.keep(columns, [(2, 0)])
    assert reader.pipe is None and reader.gauges() == {"replica_lag_s": 2}


def test_the_fed_signal_opens_the_appliers_group_where_the_lag_is_read():
    target = SimpleNamespace(pid=None, elf=None, family="mariadb")
    args, said = signal_plan(target, ["latch", "applier"], fed=True)
    assert args == ["--signal", "replica_behind=on:stdin:8:1:0:0:0:0:2"]
    assert said["read"] == [{"name": "replica_behind", "kind": "on", "fed": True, "groups": ["applier"]}]
    args, said = signal_plan(target, ["latch", "applier"], fed=False)
    assert args == [] and said["missing"]["replica_behind"] == NOT_FED
    # a primary's recording (no applier group) does not name it
    assert "replica_behind" not in signal_plan(target, ["latch"], fed=False)[1]["missing"]


def applier(split_ms: dict, redo_waits: int) -> dict:
    return {"replica": {"applier": {"events": 4 * redo_waits, "split_ms": split_ms, "redo_waits": redo_waits}}}


def test_the_redo_wait_is_judged_per_wait_whatever_share_of_the_run_was_watched():
    # a run watched whole: 1,000 commits waiting 6 s for the log; the same run watched in
    # windows that saw 300 of them
    assert figure_of(applier({"redo": 6_000.0, "on_cpu": 3_000.0}, 1_000), "applier_redo_ms_per_wait") == 6.0
    assert figure_of(applier({"redo": 1_800.0, "on_cpu": 90.0}, 300), "applier_redo_ms_per_wait") == 6.0
    # nothing split, or a recording made before the waits were counted: unknown, not 0
    assert figure_of(applier({"redo": None, "on_cpu": None}, 0), "applier_redo_ms_per_wait") is None
    assert figure_of(applier({"redo": 600.0}, 0), "applier_redo_ms_per_wait") is None
    assert figure_of({}, "applier_redo_ms_per_wait") is None
