"""What to change, from a recording's summary and the settings it read: a few actions ranked
by the recording's time they would give back, each resting on the report's own sentences,
and the common fixes the recording shows would not help. `innostall verify` measures each
one's expected effect (collector/verify/)."""
from __future__ import annotations

from .action import Action, Advice, Expect, NotHelping
from .flush_actions import flush_advice
from .latch_actions import latch_advice
from .purge_actions import purge_advice
from .replica_actions import replica_advice

RULES = (purge_advice, replica_advice, flush_advice, latch_advice)


def advise(summary: dict, meta: dict) -> Advice:
    """The advice for one recording: summary as `report --json` gives it, meta its meta.json."""
    advice = Advice()
    for rule in RULES:
        rule(summary, advice, meta)
    return advice.ranked()


__all__ = ["Action", "Advice", "Expect", "NotHelping", "advise"]
