"""innostall advise: what to change, from a recording."""
from __future__ import annotations

import json


def cmd_advise(args) -> int:
    from innostall.analysis import recording, summary
    from innostall.analysis.advice import advise
    from innostall.analysis.advice.advice_text import render_advice

    rec = recording.load(args.recording)
    advice = advise(summary.summary(rec), rec.meta)
    print(json.dumps(advice.as_json(), indent=2) if args.json else render_advice(advice))
    return 0


def add_advise_parsers(sub) -> None:
    advise = sub.add_parser("advise", help="what to change, from a recording: ranked actions with their "
                            "evidence, expected effect, risk and undo, and the fixes that would not help")
    advise.add_argument("recording")
    advise.add_argument("--json", action="store_true", help="machine-readable advice")
    advise.set_defaults(func=cmd_advise)
