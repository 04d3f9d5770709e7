"""Phase: a hot-row latch stall that begins mid-recording (issue 44): whether the default
budget keeps the group that explains it attached through it, and still holds over the
recording; once as calibrated, once with every trap charged HIT_COST_EMULATION times its
calibrated cost (an emulation of a machine whose traps cost more, the governor's side only:
the server here pays its own traps). bench/stall_costs.py says what is measured."""
from __future__ import annotations

from fixture_servers import FixtureError, Server

from ..harness import Bench
from ..log import log
from ..server import fixture
from ..settings import HIT_COST_EMULATION, RECORD_ARGS, SERVER, STALL_CALM_S, STALL_HOT_S, STALL_ROUNDS
from ..stall_costs import record_stall, summary


def phase_stall(bench: Bench) -> None:
    log(f"phase: hot-row stall mid-recording, {STALL_ROUNDS} round(s), calibrated and traps at "
        f"{HIT_COST_EMULATION:g}x (emulated)")
    fixture("stop")
    fixture("start")
    recordings = bench.results.setdefault("stall", {"recordings": []})["recordings"]
    try:
        fixture("load", "2", "10000")
        server = Server(SERVER)
        for round_ in range(1, STALL_ROUNDS + 1):
            for scale in (1, HIT_COST_EMULATION):
                try:
                    found = record_stall(server, bench.workdir / "stall", STALL_CALM_S, STALL_HOT_S,
                                         RECORD_ARGS, scale)
                except RuntimeError as e:
                    bench.results["errors"].append(f"stall round {round_} x{scale:g}: {e}")
                    continue
                found.update(phase="stall", round=round_, arm="default" if scale == 1 else f"default, traps x{scale:g} (emulated)")
                recordings.append(found)
                log(f"  round {round_} {found['arm']}: {summary(found)}")
    finally:
        try:
            fixture("stop")
        except FixtureError as e:
            log(f"  stop: {e}")
