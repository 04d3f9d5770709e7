"""What a hot-row stall that begins mid-recording costs the probes, and how much of it the
latch group watched: issue 44's latch stall, as tests/live/test_state_signals.py runs it
(4 threads of oltp_read_write throughout, then 16 threads updating 20 hot rows for a few
seconds), with the BPF programs' runs and run times taken over the stall alone, and the
governor's accounts of the stall's intervals from the recording's journal (the bench's
stall phase, bench/phases/stall.py, runs the same).

    PYTHONPATH=scripts build/venv/bin/python -m bench.stall_costs [--calm S] [--hot S] [--emulate-hit-cost X] [-- record args]

--emulate-hit-cost X makes the governor charge each trap X times what calibration measured
(INNOSTALL_EMULATED_HIT_COST_SCALE, collector/loader/charges.c): an emulation of a machine
whose traps cost more, on the governor's side only. Run as root, under the fixture servers'
lock; it starts the fixture server and stops it."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import fixture_servers
from fixture_servers import REPO, Server, stop_load

from .program_costs import program_stats, table
from . import unsampled
from .tracers import recording_summary

INNOSTALL = REPO / "build" / "venv" / "bin" / "innostall"
SERVER = "mariadb-11.4.5"
GROUP = "latch"  # the group that explains a hot-row stall


def journal(out: Path) -> tuple[dict, list[dict]]:
    lines = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines() if line.endswith("}")]
    attached = next(line for line in lines if line["type"] == "attached")
    return attached, [line for line in lines if line["type"] in ("interval", "final") and line.get("governor")]


def stall_watch(attached: dict, snaps: list[dict], group: str, from_ns: int, to_ns: int) -> dict:
    """The group's attached share of each interval that ended inside [from_ns, to_ns], and
    of their time together (attached time over the intervals' time)."""
    number = attached["groups"].index(group) + 1

    def attached_ns(snap):
        return next(row[1] for row in snap["governor"]["groups"] if row[0] == number)

    pairs = [(a, b) for a, b in zip(snaps, snaps[1:]) if from_ns <= b["mono_ns"] <= to_ns]
    shares = [(attached_ns(b) - attached_ns(a)) / (b["mono_ns"] - a["mono_ns"]) for a, b in pairs]
    whole = (sum(attached_ns(b) - attached_ns(a) for a, b in pairs) /
             max(1, sum(b["mono_ns"] - a["mono_ns"] for a, b in pairs)))
    return {"intervals": shares, "time": whole}


def row_lock_waits(srv: Server) -> int:
    with srv.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_row_lock_waits'")
        return int(cur.fetchone()[1])


def wait_attached(out: Path, recorder: subprocess.Popen) -> None:
    while not (out / "journal.jsonl").exists() or '"interval"' not in (out / "journal.jsonl").read_text():
        if recorder.poll() is not None:
            raise RuntimeError(f"innostall record ended: {recorder.stderr.read().strip()}")
        time.sleep(0.2)


def record_stall(srv: Server, out: Path, calm_s: int, hot_s: int, record_args: list[str],
                 hit_cost_scale: float = 1) -> dict:
    """One default recording through a hot-row stall on a running, loaded fixture server:
    the programs' costs over the stall, the latch group's watch of it, the governor's last
    accounts (its estimate, budget, stall bank and signals) and the server's row-lock waits."""
    seconds = calm_s + hot_s + 6
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ)
    if hit_cost_scale != 1:
        env["INNOSTALL_EMULATED_HIT_COST_SCALE"] = str(hit_cost_scale)
    steady = srv.sysbench("oltp_read_write", seconds + 30, "--threads=4", "--rand-type=pareto")
    recorder = subprocess.Popen([str(INNOSTALL), "record", "--pid", str(srv.pid), "--duration", str(seconds),
                                 *record_args, "-o", str(out)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_attached(out, recorder)
        time.sleep(calm_s)
        before, waits, hot_from = program_stats(), row_lock_waits(srv), time.monotonic_ns()
        hot = srv.sysbench("oltp_update_index", hot_s, "--threads=16", "--table-size=20")
        try:
            hot.wait(timeout=hot_s + 30)
        finally:
            stop_load(hot)
        after, hot_to = program_stats(), time.monotonic_ns()
        waits = row_lock_waits(srv) - waits
        recorder.wait(timeout=seconds + 60)
    finally:
        if recorder.poll() is None:
            recorder.terminate()
            recorder.wait(timeout=60)
        stop_load(steady)
    attached, snaps = journal(out)
    final = snaps[-1]["governor"]
    names = attached.get("signals", [])
    return {"tracer": recording_summary(out),  # the report's governor (and the recording gone)
            "programs": table(before, after, (hot_to - hot_from) / 1e9),
            "watch": stall_watch(attached, snaps, GROUP, hot_from + int(1e9), hot_to),
            "hit_cost_scale": hit_cost_scale, "row_lock_waits": waits,
            "estimate_ms": final["overhead_ns"] / 1e6, "budget_ms": final["budget_ns"] / 1e6,
            "bank_ms": [round(b / 1e6, 1) for b in final.get("bank_ns", [0, 0, 0])],
            "signals": {name: {"held_s": round(s[1] / 1e9, 1), "windows": s[2]}
                        for name, s in zip(names, final.get("signals", []))}}


def summary(found: dict) -> str:
    watch, bank = found["watch"], found["bank_ms"]
    held = ", ".join(f"{n} {s['held_s']} s ({s['windows']} windows)" for n, s in found["signals"].items()
                     if s["windows"] or s["held_s"])
    scale = f" [traps emulated at {found['hit_cost_scale']:g}x]" if found["hit_cost_scale"] != 1 else ""
    return (f"{GROUP} group attached {100 * watch['time']:.0f}% of the stall's time, in "
            f"{sum(a > 0 for a in watch['intervals'])} of its {len(watch['intervals'])} intervals "
            f"({[round(100 * a) for a in watch['intervals']]}%); estimate {found['estimate_ms']:.0f} ms of a "
            f"{found['budget_ms']:.0f} ms budget ({found['estimate_ms'] / max(found['budget_ms'], 1e-9):.2f} of it); "
            f"bank: {bank[1]:.1f} ms put in, {bank[2]:.1f} ms spent; held: {held or 'nothing'}; "
            f"{found['row_lock_waits']} row-lock waits in the stall{scale}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calm", type=int, default=6, help="seconds of steady load before the stall")
    parser.add_argument("--hot", type=int, default=8, help="seconds of hot-row updates")
    parser.add_argument("--emulate-hit-cost", type=float, default=1, metavar="X",
                        help="the governor charges each trap X times its calibrated cost (an emulation)")
    parser.add_argument("record", nargs="*", help="innostall record's arguments (after --)")
    args = parser.parse_args()
    if not 1 <= args.emulate_hit_cost <= 10:
        parser.error("--emulate-hit-cost: between 1 and 10")
    fixture_servers.fixture(SERVER, "init")
    fixture_servers.restart(SERVER)
    try:
        fixture_servers.fixture(SERVER, "load", "2", "10000")
        found = record_stall(Server(SERVER), Path("/tmp/innostall-stall-costs"), args.calm, args.hot,
                             args.record, args.emulate_hit_cost)
        found.update(phase="stall", round=1, arm="default")
    except (RuntimeError, fixture_servers.FixtureError) as e:
        print(f"stall_costs: {e}", file=sys.stderr)
        return 1
    finally:
        fixture_servers.fixture(SERVER, "stop", check=False)
    print(f"record {' '.join(args.record) or '(default)'}: the stall's {args.hot} s, programs as the kernel timed them")
    print("\n".join(found["programs"]))
    print(summary(found))
    print("\n".join(unsampled.budget_lines([found])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
