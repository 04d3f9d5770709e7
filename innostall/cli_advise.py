"""innostall advise: what to change, from a recording."""
from __future__ import annotations

import json
import re
import sys


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
    add_verify_parser(sub)


def changes_from(args):
    from innostall.analysis import recording, summary
    from innostall.analysis.advice import advise
    from innostall.collector.verify.changes import parse_changes
    from innostall.errors import UserError

    sets, ends, expect = list(args.set or []), list(args.end_older_than or []), args.expect
    if args.advice:
        rec = recording.load(args.advice)
        actions = [a for a in advise(summary.summary(rec), rec.meta).actions if a.apply_sql]
        if not actions:
            raise UserError(f"verify: {args.advice}'s advice has no change SET GLOBAL or KILL can make")
        action = actions[0]
        if action.apply_sql.startswith("KILL"):
            ends.append(PINNED_AGE_S)
        else:
            sets.append(",".join(f"{n}={v}" for n, v in re.findall(r"(\w+) = ([^,\s]+)", action.apply_sql)))
        expect = expect or f"{action.expect.figure}:{action.expect.towards}"
    if not expect:
        raise UserError("verify needs --expect FIGURE[:down|zero] (or --advice RECORDING, whose advice says it)")
    return parse_changes(sets, ends), expect


PINNED_AGE_S = 5.0  # the pinning transaction ended once this old: the advice's "keep them short"


def cmd_verify(args) -> int:
    import os

    from innostall.analysis import recording, summary
    from innostall.analysis.advice.judge import FIGURES, figure_of, judge
    from innostall.collector.verify.trial import run_trial
    from innostall.errors import UserError

    if args.exact and args.budget is not None:
        raise UserError("verify: --exact and --budget exclude each other (--exact: no budget)")
    changes, expect = changes_from(args)
    name, _, towards = expect.partition(":")
    if name not in FIGURES or towards not in ("", "down", "zero"):
        raise UserError(f"--expect wants FIGURE[:down|zero], FIGURE one of {', '.join(FIGURES)}; not {expect!r}")
    if args.repeats < 2:
        raise UserError("--repeats wants 2 or more: the spread of the runs without the change is the noise")
    if not args.apply:
        print("verify would run the load " + str(args.repeats) + " times as the server is, then once with: "
              + "; ".join(c.words for c in changes), file=sys.stderr)
        print("innostall verify: nothing run, nothing changed: add --apply to change the server", file=sys.stderr)
        return 2
    record_args = ["--exact"] if args.exact else ["--budget", str(args.budget)] if args.budget is not None else []
    trial = run_trial(args.pid, args.sql, args.load, changes, args.out, args.repeats, record_args,
                      say=lambda line: print(line, file=sys.stderr))
    base = [figure_of(summary.summary(recording.load(d)), name) for d in trial.baselines]
    results = []
    for (run, done), change in zip(trial.changed, changes):
        verdict = judge(name, towards or "down", base, figure_of(summary.summary(recording.load(run)), name))
        results.append({"change": change.words, "done": done, "recording": run, **verdict})
        print(f"{change.words}: {verdict['words']}")
    with open(os.path.join(args.out, "verify.json"), "w") as f:
        json.dump({"figure": name, "towards": towards or "down", "baselines": trial.baselines,
                   "results": results}, f, indent=2)
    return 0


def add_verify_parser(sub) -> None:
    verify = sub.add_parser("verify", help="run a load against a server as it is and with one change (SET GLOBAL, "
                            "or ending old transactions), record each run, and judge the change by its effect")
    verify.add_argument("--pid", type=int, required=True, help="the server to run against (and change, with --apply)")
    verify.add_argument("--load", required=True, metavar="CMD", help="the load, a shell command (a scenario of "
                        "scripts/scenarios/, sysbench ...), run once per run")
    verify.add_argument("--set", action="append", metavar="NAME=VALUE", help="a dynamic setting to try")
    verify.add_argument("--end-older-than", action="append", type=float, metavar="S",
                        help="end (KILL) transactions open longer than S s, to try ending a pinning one")
    verify.add_argument("--advice", metavar="RECORDING", help="try the first change RECORDING's advice can apply")
    verify.add_argument("--expect", metavar="FIGURE[:down|zero]", help="the figure the change should move")
    verify.add_argument("--repeats", type=int, default=2, help="runs without the change, for the noise (2)")
    verify.add_argument("--budget", type=float, help="each recording's budget (as record's)")
    verify.add_argument("--exact", action="store_true", help="each recording with every probe attached (as "
                        "record's): where the budget samples the part the change should move too thinly to judge")
    verify.add_argument("--sql", metavar="[USER@]SOCKET", help="how to log in (as record's)")
    verify.add_argument("--apply", action="store_true", help="change the server (without it, say what would run)")
    verify.add_argument("-o", "--out", required=True, metavar="DIR", help="a new directory for the runs' recordings")
    verify.set_defaults(func=cmd_verify)
