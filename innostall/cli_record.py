"""The commands that trace a server: record (one recording) and watch (recordings saved
around triggers, collector/recorder/watch.py). They share every tracing option."""
from __future__ import annotations

import argparse
import os
import sys

from innostall.cli_options import (add_target_args, loopback, port_number, positive, resolve_target,
                                   seconds_at_least, seconds_or_none, size)
from innostall.errors import UserError

# purge's verdicts (analysis/phases.py VERDICTS), but the one a recording without purge's probe has
VERDICTS = ("idle", "keeping_up", "pinned", "catching_up", "falling_behind", "throttled")


def trace(args, out_dir: str, watch=None) -> tuple[object, dict]:
    """The server traced into out_dir as the options say: (its target, the meta returned)."""
    from innostall.collector.recorder import idle

    metrics = metrics_options(args)
    if os.geteuid() != 0:
        raise UserError("recording needs root (uprobes and BPF): run with sudo")
    from innostall.collector.server import sql

    sql.take_password()
    # Loading numpy and pyelftools and reading the server's executable is bulk work: on idle CPU.
    with idle.Start(args.patience) as start:
        from innostall.collector.discovery import discover
        from innostall.collector.recorder import recorder

        names = discover.select(args.probes)
        tgt = resolve_target(args)
        probes = discover.resolve(tgt, names, kept=discover.named(args.probes))
        if note := discover.version_note(tgt):
            print(f"innostall: {note}", file=sys.stderr)
        meta = recorder.record(tgt, probes, out_dir, duration_s=args.duration,
                               interval_s=args.interval,
                               settings={"deep_walk_threshold": args.deep_walk_threshold,
                                         "latch_stack_threshold_us": args.latch_stack_threshold},
                               budget_pct=None if args.exact else args.budget or recorder.DEFAULT_BUDGET_PCT,
                               sql_dsn=args.sql, use_sql=not args.no_sql, metrics=metrics,
                               holders=args.holders, start=start, max_size=args.max_size,
                               keep_literals=args.keep_literals, watch=watch)
    if not meta.get("sql", {}).get("access", True) and not args.no_sql:
        print(f"innostall: threads named by OS thread id only: {meta['sql']['reason']}",
              file=sys.stderr)
    return tgt, meta


def cmd_record(args) -> int:
    tgt, meta = trace(args, args.output)
    print(f"recorded {tgt.label} into {args.output} (ended by {meta.get('end_reason')})",
          file=sys.stderr)
    return 0


def cmd_watch(args) -> int:
    from innostall.collector.recorder import watch

    triggers = watch.Triggers(history_above=args.history_above, latch_wait_above_ms=args.latch_wait_above,
                              verdict=args.verdict, verdict_every_s=args.verdict_every,
                              before_s=args.before, after_s=args.after, cooldown_s=args.cooldown, keep=args.keep)
    print(f"innostall watch: saving {args.before:g} s before and {args.after:g} s after any of: "
          f"{triggers.words()}", file=sys.stderr)
    tgt, meta = trace(args, args.output, triggers)
    print(f"watched {tgt.label} (ended by {meta.get('end_reason')}): {watch.saved_words(meta, args.output)}",
          file=sys.stderr)
    return 1 if watch.save_failed(meta) else 0


def metrics_options(args) -> dict | None:
    """--metrics-port/--metrics-addr/--metrics-textfile as the recorder takes them; a textfile
    node_exporter would not read, or in a directory that is not there, is refused now."""
    if args.metrics_port is None and not args.metrics_textfile:
        return None
    if args.metrics_textfile:
        path = args.metrics_textfile
        if not path.endswith(".prom"):
            raise UserError(f"--metrics-textfile {path}: must end in .prom (node_exporter's "
                            "textfile collector reads only those)")
        if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise UserError(f"--metrics-textfile {path}: no such directory")
    if args.metrics_port is not None and not loopback(args.metrics_addr) and not args.metrics_expose:
        raise UserError(f"--metrics-addr {args.metrics_addr} is reachable from other hosts, and the "
                        "endpoint has no authentication: add --metrics-expose if that is meant")
    return {"port": args.metrics_port, "addr": args.metrics_addr, "textfile": args.metrics_textfile}


def count_at_least_1(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def add_record_parsers(sub) -> None:
    record = sub.add_parser("record", help="trace a running server into a recording directory")
    add_tracing_args(record)
    record.add_argument("--max-size", type=size, metavar="SIZE",
                        help="end the recording when its journal reaches SIZE (500M, 2G; default: "
                        "1G, or half the space free where it is written if that is less)")
    record.add_argument("-o", "--output", required=True, help="recording directory to create")
    record.set_defaults(func=cmd_record)

    watch = sub.add_parser("watch", help="stay attached, and save a recording of the minutes around "
                           "a stall when a trigger fires (or on SIGUSR1)")
    add_tracing_args(watch)
    watch.add_argument("--history-above", type=int, metavar="N",
                       help="trigger when the history list is longer than N")
    watch.add_argument("--latch-wait-above", type=positive, metavar="MS",
                       help="trigger when a latch wait lasts longer than MS milliseconds (a sampled "
                       "latch group sees the waits of the time it is attached)")
    watch.add_argument("--verdict", choices=VERDICTS, metavar="VERDICT",
                       help="trigger when purge's verdict on the kept minutes ends in a phase of this kind "
                       f"({', '.join(VERDICTS)}); asked every --verdict-every seconds by a report of them")
    watch.add_argument("--verdict-every", type=seconds_at_least(5), default=60.0, metavar="S",
                       help="how often the verdict is asked (60; each time about a second of idle CPU)")
    watch.add_argument("--before", type=seconds_at_least(1), default=120.0, metavar="S",
                       help="seconds kept in memory and saved before the trigger (120)")
    watch.add_argument("--after", type=seconds_at_least(1), default=60.0, metavar="S",
                       help="seconds recorded after it (60)")
    watch.add_argument("--cooldown", type=seconds_at_least(0.01), default=300.0, metavar="S",
                       help="seconds after a save in which triggers are ignored (300)")
    watch.add_argument("--keep", type=count_at_least_1, default=5, metavar="N",
                       help="end the watch after N saved recordings (5)")
    watch.add_argument("--max-size", type=size, metavar="SIZE",
                       help="end the watch when its saved journals reach SIZE (default as record's)")
    watch.add_argument("-o", "--output", required=True,
                       help="directory to create: each saved recording is a directory inside it")
    watch.set_defaults(func=cmd_watch)


def idle_patience() -> float:
    from innostall.collector.recorder import idle  # only the default: the module is light

    return idle.PATIENCE_S


def add_tracing_args(parser: argparse.ArgumentParser) -> None:
    add_target_args(parser)
    parser.add_argument("--duration", type=seconds_at_least(0.01),
                        help="seconds (default: until Ctrl-C)")
    parser.add_argument("--interval", type=seconds_at_least(0.01), default=1.0,
                        help="seconds per sample (1; at least 0.01)")
    parser.add_argument("--probes", help="comma-separated probe sets or probe names (default)")
    parser.add_argument("--deep-walk-threshold", type=int, default=100, metavar="N",
                        help="keep the stack of reads that build N or more row versions (100)")
    parser.add_argument("--latch-stack-threshold", type=int, default=16, metavar="US",
                        help="keep the stack of latch waits of US µs or more; shorter ones are "
                        "counted per latch (16; 0: every wait)")
    cost = parser.add_mutually_exclusive_group()
    cost.add_argument("--budget", type=positive, metavar="PCT",
                      help="share of the server's CPU time the probes may cost; hotter probes "
                      "are sampled, and reported so (default: 1)")
    cost.add_argument("--exact", action="store_true",
                      help="no budget: keep every probe attached, whatever it costs the server")
    parser.add_argument("--holders", action="store_true",
                        help="also find who held each contended latch, from the scheduler's wakeup "
                        "tracepoint; it costs a busy server several times what the budget counts "
                        "for it (docs/overhead.md, Latch holders), so it is off unless asked")
    names = parser.add_mutually_exclusive_group()
    names.add_argument("--sql", metavar="[USER@]SOCKET",
                       help="log in there to name the connections holding read views (default: "
                       "the server's own socket as root, if it lets us in; MYSQL_PWD for a password)")
    names.add_argument("--no-sql", action="store_true", help="never log in to the server")
    parser.add_argument("--patience", type=seconds_or_none, default=idle_patience(), metavar="S",
                        help="how long innostall's own work before the attach and after the detach "
                        "waits for CPU the server leaves, before sharing it (%(default)g; 0: never "
                        "waits, for a test box where the start's seconds matter more than the server's "
                        "throughput)")
    parser.add_argument("--keep-literals", action="store_true",
                        help="keep the statements' literal values (e-mails, tokens, ...); by default "
                        "statements are recorded as fingerprints, each literal replaced by ?")
    parser.add_argument("--metrics-port", type=port_number, metavar="N",
                        help="serve the last interval as Prometheus metrics on this port while recording")
    parser.add_argument("--metrics-addr", default="127.0.0.1", metavar="ADDR",
                        help="the address to serve them on (127.0.0.1; another needs --metrics-expose)")
    parser.add_argument("--metrics-expose", action="store_true",
                        help="serve the metrics on an address other hosts reach (--metrics-addr): "
                        "anyone who can connect reads them, unauthenticated and unencrypted")
    parser.add_argument("--metrics-textfile", metavar="PATH.prom",
                        help="write them to this file each interval, for node_exporter's textfile collector")
