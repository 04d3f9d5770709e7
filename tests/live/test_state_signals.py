"""The server's own state opens the groups that explain a stall, at the default budget
(collector/loader/state_signals.c, collector/server/signals.py).

A steady read-write load runs throughout a default recording; a few seconds in, 16 threads
update 20 hot rows for 12 s. The server itself says the stall is there: its row-lock waits
(Innodb_row_lock_waits, read by SQL around the stall and the recording), and the same
count the loader reads from its memory (lock_sys.wait_count above its step: the waits
begun, journalled at each snapshot). What is checked:
- the server counted row-lock waits in the stall, and the loader read at least those over
  the recording, and no more than the server counted around it; the wait counters the loader reads (free-page and log-room waits) equal the server's
  own (Innodb_buffer_pool_wait_free, Innodb_log_waits) read just after the recording;
- the latch group, sampled at the default budget, was attached in at least STALL_COVERAGE
  of the stall's intervals (issue 44's measure: it had been 0% of them), and the journal
  says the row-lock signal held it (governor.signals);
- its attached time over the stall's intervals, issue 44's acceptance read as time, is
  printed, not held to STALL_COVERAGE: fully attached under these 16 threads the latch group
  costs this 2-core machine about 50 ms a second (3,300 waits, each a trap in and out and a
  stack, counted twice over), four to five times the whole 1% budget, so no bank of a few
  seconds' worth keeps it attached through an 8-s stall (scripts/bench/stall_costs.py,
  docs/overhead.md). What is held instead: the stall spent its budget (the probes' cost over
  the stall's intervals at least STALL_SPENT of what was planned for them), and spent it on
  the group that explains it (the latch group at least LATCH_SHARE of that cost);
- the stall bank (governor.bank_ns) never paid out more than the calm put in;
- the recording's estimated cost stayed within its budget: the stall was paid for by what
  the calm stretches left unspent, and the other sampled groups yielding."""
from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from conftest import INNOSTALL, stop_load
from recordings import NO_PATIENCE
from test_record_purge import wait_for_line

SERVER = "mariadb-11.4.5"  # a build with DWARF: the signals' places come from it
# The stall lasts long enough for the acceptance to be read as it is stated: of the ~10
# intervals inside it (after SIGNAL_SLACK_S), one may go without a window. With 8 s (7
# intervals) one was enough to fail: the stall's first intervals spend the bank and more,
# and the next repays that debt (one of 7 at 0% on 2026-11-30, 61 windows opened).
CALM_S, HOT_S, RECORD_S = 6, 12, 24
STALL_COVERAGE = 0.9  # issue 44's acceptance
AIM = 0.85  # of its budget, what the governor plans to spend (collector/loader/budget.h)
STALL_SPENT = 0.5  # of what the stall's intervals planned to spend, at least spent in them
LATCH_SHARE = 0.5  # of the probes' cost over the stall, at least the latch group's
SIGNAL_SLACK_S = 1.0  # a read every 0.1 s, and a group's attach: a few ms to 0.3 s


def snapshots(journal) -> tuple[dict, list[dict]]:
    lines = [json.loads(line) for line in journal.read_text().splitlines() if line.endswith("}")]
    attached = next(line for line in lines if line["type"] == "attached")
    return attached, [line for line in lines if line["type"] in ("interval", "final") and line.get("governor")]


def attached_in(attached: dict, snaps: list[dict], group: str, from_ns: float, to_ns: float) -> list[float]:
    """Each interval that ended in [from_ns, to_ns]: the share of it the group was attached."""
    number = attached["groups"].index(group) + 1

    def attached_ns(snap):
        return next(row[1] for row in snap["governor"]["groups"] if row[0] == number)

    return [(attached_ns(b) - attached_ns(a)) / (b["mono_ns"] - a["mono_ns"])
            for a, b in zip(snaps, snaps[1:]) if from_ns <= b["mono_ns"] <= to_ns]


def spent_in(attached: dict, snaps: list[dict], group: str, from_ns: float, to_ns: float) -> dict[str, float]:
    """Over the intervals that ended in [from_ns, to_ns]: the group's attached time over
    theirs, its cost, all the probes' cost, and the budget they earned (ns)."""
    number = attached["groups"].index(group) + 1
    pairs = [(a, b) for a, b in zip(snaps, snaps[1:]) if from_ns <= b["mono_ns"] <= to_ns]

    def grew(pick):
        return sum(pick(b["governor"]) - pick(a["governor"]) for a, b in pairs)

    def row(gov):
        return next(r for r in gov["groups"] if r[0] == number)

    length = sum(b["mono_ns"] - a["mono_ns"] for a, b in pairs)
    return {"time": grew(lambda g: row(g)[1]) / length if length else 0.0, "group_ns": grew(lambda g: row(g)[3]),
            "all_ns": grew(lambda g: g["overhead_ns"]), "budget_ns": grew(lambda g: g["budget_ns"])}


def status(srv, *names: str) -> dict[str, int]:
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS WHERE Variable_name IN (%s)" % ", ".join(["%s"] * len(names)), names)
        return {name: int(value) for name, value in cur.fetchall()}


def test_a_hot_row_stall_opens_the_latch_group_at_the_default_budget(servers, tmp_path):
    srv = servers(SERVER)
    out = tmp_path / "rec"
    steady = srv.sysbench("oltp_read_write", RECORD_S + 10, "--threads=4", "--rand-type=pareto")
    first = status(srv, "Innodb_row_lock_waits")["Innodb_row_lock_waits"]
    # --patience 0: the start and the tables' writing share the CPU at once, not waiting up to
    # 5 s each for CPU the steady load never leaves (test_governor.py keeps the default start)
    record = subprocess.Popen(INNOSTALL + ["record", "--pid", str(srv.pid), "--duration", str(RECORD_S),
                                           *NO_PATIENCE, "-o", str(out)], stderr=subprocess.PIPE, text=True)
    try:
        wait_for_line(out / "journal.jsonl", "interval")
        time.sleep(CALM_S)
        before = status(srv, "Innodb_row_lock_waits")["Innodb_row_lock_waits"]
        hot = srv.sysbench("oltp_update_index", HOT_S, "--threads=16", "--table-size=20")
        hot_from = time.monotonic_ns()
        try:
            hot.wait(timeout=HOT_S + 30)
        finally:
            stop_load(hot)
        hot_to = time.monotonic_ns()
        waits = status(srv, "Innodb_row_lock_waits")["Innodb_row_lock_waits"] - before
        assert record.wait(timeout=RECORD_S + 60) == 0, record.stderr.read()
        counted = status(srv, "Innodb_buffer_pool_wait_free", "Innodb_log_waits", "Innodb_row_lock_waits")
    finally:
        if record.poll() is None:
            record.send_signal(signal.SIGINT)
            record.wait(timeout=60)
        stop_load(steady)
    meta = json.loads((out / "meta.json").read_text())
    signals = meta["governor"]["signals"]
    assert "row_lock_waits" in [s["name"] for s in signals["read"]], signals
    attached, snaps = snapshots(out / "journal.jsonl")
    which = attached["signals"].index("row_lock_waits_begun")
    begun = [s["governor"]["signals"][which][0] for s in snaps]
    # the intervals that began after the stall's first SIGNAL_SLACK_S and ended by its end
    stall = attached_in(attached, snaps, "latch", hot_from + 1e9 + SIGNAL_SLACK_S * 1e9, hot_to)
    calm = attached_in(attached, snaps, "latch", 0, hot_from)
    spent = spent_in(attached, snaps, "latch", hot_from + 1e9 + SIGNAL_SLACK_S * 1e9, hot_to)
    final = snaps[-1]["governor"]
    banked, put_in, paid_out = final["bank_ns"]
    held_ns, opened = final["signals"][which][1], final["signals"][which][2]
    read = {name: final["signals"][i][0] for i, name in enumerate(attached["signals"])}
    print(f"{SERVER}: the server counted {waits} row-lock waits in the stall, "
          f"{counted['Innodb_row_lock_waits'] - first} over the recording; the loader read {begun[-1] - begun[0]}; latch group attached {[round(100 * a) for a in calm]}% of the calm "
          f"intervals, {[round(100 * a) for a in stall]}% of the stall's, {100 * spent['time']:.0f}% of its time, "
          f"the stall's probes cost {spent['all_ns'] / 1e6:.1f} ms ({spent['group_ns'] / 1e6:.1f} ms the latch group's) "
          f"of {spent['budget_ns'] / 1e6:.1f} ms earned; bank {put_in / 1e6:.1f} ms put in, {paid_out / 1e6:.1f} ms "
          f"paid out; the signal held it {held_ns / 1e9:.1f} s "
          f"and opened {opened} windows; free-page and log-room waits read {read.get('free_page_waits')}, "
          f"{read.get('log_room_waits')}, the server's {counted}; estimate {final['overhead_ns'] / 1e6:.0f} ms of a "
          f"{final['budget_ns'] / 1e6:.0f} ms budget; missing signals {signals['missing']}")
    # the waits begun the loader read over the recording: those the server counted in the
    # stall at least, and no more than it counted between its reads around the recording
    assert waits > 0 and waits <= begun[-1] - begun[0] <= counted["Innodb_row_lock_waits"] - first
    assert read["free_page_waits"] == counted["Innodb_buffer_pool_wait_free"]
    assert read["log_room_waits"] == counted["Innodb_log_waits"]
    assert held_ns > 0 and opened > 0
    assert len(stall) >= HOT_S - 3 and sum(a > 0 for a in stall) >= STALL_COVERAGE * len(stall)
    assert spent["all_ns"] >= STALL_SPENT * AIM * spent["budget_ns"]
    assert spent["group_ns"] >= LATCH_SHARE * spent["all_ns"]
    assert 0 <= banked and paid_out <= put_in
    assert final["overhead_ns"] <= final["budget_ns"]
