"""The innostall command: record a running server, report a recording."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

from innostall import __version__
from innostall.errors import UserError


def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number: {text!r}")
    return value


def seconds_at_least(least: float):
    """A positive, finite number of seconds, not under least (the loader counts whole ms,
    and a shorter interval or duration would round to nothing)."""
    def parse(text: str) -> float:
        value = positive(text)
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least:g} s: {text!r}")
        return value
    return parse


SIZE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def size(text: str) -> int:
    """A size in bytes: '500M', '2G', '1.5G', '4096' (K, M, G, T in powers of 1024)."""
    number, unit = text[:-1], text[-1:].upper()
    if unit not in SIZE_UNITS:  # a plain number of bytes (or no size at all)
        number, unit = text, ""
    try:
        value = float(number) * SIZE_UNITS[unit]
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a size (such as 500M or 2G): {text!r}")
    if value < 2**20:
        raise argparse.ArgumentTypeError(f"must be at least 1M: {text!r}")
    return int(value)


def add_target_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--pid", type=int, help="a running mysqld/mariadbd")
    group.add_argument("--binary", help="a server executable (traces every process running it)")
    parser.add_argument("--debuginfo", metavar="PATH",
                        help="separate debug file (or directory) with the server's symbols")


def resolve_target(args):
    from innostall.collector.discovery import target

    if args.pid is not None:
        return target.from_pid(args.pid, args.debuginfo)
    return target.from_binary(args.binary, args.debuginfo)


def probe_json(p) -> dict:
    return {"name": p.name, "resolved": p.ok, "core": p.core, "cost": p.cost,
            "symbols": [s.name for s in p.symbols], "offsets": p.offsets,
            "programs": p.programs, "globals": p.globals, "decode": p.decode,
            "exact": p.exact, "fallback": p.fallback, "reason": p.reason}


def cmd_probes(args) -> int:
    from innostall.collector.discovery import discover
    from innostall.names import demangle

    tgt = resolve_target(args)
    probes = discover.resolve(tgt)
    core_ok = all(p.ok for p in probes if p.core)
    if args.json:
        print(json.dumps({"server": {"family": tgt.family, "version": tgt.version,
                                     "note": discover.version_note(tgt),
                                     "exe": tgt.exe, "build_id": tgt.elf.build_id,
                                     "pie": tgt.elf.is_pie,
                                     "debug_file": tgt.debug.path if tgt.debug else None},
                          "core_resolved": core_ok,
                          "probes": [probe_json(p) for p in probes]}, indent=2))
        return 0 if core_ok else 2
    symbols_from = tgt.debug.path if tgt.debug else (".symtab" if tgt.elf.has_symtab else ".dynsym")
    print(f"{tgt.label}  {tgt.exe}")
    if note := discover.version_note(tgt):
        print(f"  note: {note}")
    print(f"  build-id {tgt.elf.build_id or 'none'}, {'PIE' if tgt.elf.is_pie else 'non-PIE'}, "
          f"symbols from {symbols_from}")
    print(f"  {layout_line(discover.layout(tgt))}")
    width = max([len("probe"), *(len(p.name) for p in probes)]) + 1  # a column as wide as the longest name
    print(f"  {'probe':<{width}}{'cost':<6}{'offset':<11}symbol / reason")
    for p in probes:
        mark = "*" if p.core else " "
        if p.ok:
            more = f" (+{len(p.symbols) - 1} more)" if len(p.symbols) > 1 else ""
            notes = ("  [fallback]" if p.fallback else "") + ("" if p.exact else "  [approx]")
            print(f"{mark} {p.name:<{width}}{p.cost:<6}{p.offset:<#11x}{demangle(p.symbol.name)[:70]}{more}{notes}")
        else:
            why = p.reason if p.reason.startswith(("not needed", "not available")) else f"missing: {p.reason}"
            print(f"{mark} {p.name:<{width}}{p.cost:<6}{'-':<11}{why}")
    missing = [p.name for p in probes if p.core and not p.ok]
    print("* core set: " + ("all resolved" if core_ok else "missing " + ", ".join(missing)))
    return 0 if core_ok else 2


def layout_line(layout: dict | None) -> str:
    """Where the struct layout came from, and any member the catalog has otherwise."""
    if layout is None:
        return "struct layout: unknown (no DWARF, and no catalog range holds this build)"
    differs = "; the catalog differs on " + ", ".join(
        f"{m} ({listed} there, {found} in DWARF)" for m, (listed, found) in layout["differs"].items()) \
        if layout["differs"] else ""
    code = "".join([f"; confirmed by the build's code: {', '.join(layout['confirmed'])}"] if layout.get("confirmed")
                   else []) + "".join(f"; {m} refused ({why})" for m, why in layout.get("refused", {}).items())
    return (f"struct layout from {layout['source']}: {len(layout['members'])} members, "
            f"latch model {layout['latch_model'] or 'unknown'}{differs}{code}")


def cmd_bpftrace(args) -> int:
    from innostall.collector.discovery import discover
    from innostall.collector.loader import bpftrace

    names = discover.select(args.probes) if args.probes else None
    tgt = resolve_target(args)
    probes = discover.resolve(tgt, names)
    if not any(p.ok for p in probes):
        raise UserError("no probe resolved: nothing to trace (see 'innostall probes')")
    print(bpftrace.script(tgt, probes), end="")
    return 0


def cmd_record(args) -> int:
    from innostall.collector.recorder import idle

    metrics = metrics_options(args)
    if os.geteuid() != 0:
        raise UserError("recording needs root (uprobes and BPF): run with sudo")
    from innostall.collector.server import sql

    sql.take_password()
    # Loading numpy and pyelftools and reading the server's executable is bulk work: on idle CPU.
    with idle.Start() as start:
        from innostall.collector.discovery import discover
        from innostall.collector.recorder import recorder

        names = discover.select(args.probes)
        tgt = resolve_target(args)
        probes = discover.resolve(tgt, names)
        if note := discover.version_note(tgt):
            print(f"innostall: {note}", file=sys.stderr)
        meta = recorder.record(tgt, probes, args.output, duration_s=args.duration,
                               interval_s=args.interval,
                               settings={"deep_walk_threshold": args.deep_walk_threshold},
                               budget_pct=None if args.exact else args.budget or recorder.DEFAULT_BUDGET_PCT,
                               sql_dsn=args.sql, use_sql=not args.no_sql, metrics=metrics,
                               holders=args.holders, start=start, max_size=args.max_size,
                               keep_literals=args.keep_literals)
    if not meta.get("sql", {}).get("access", True) and not args.no_sql:
        print(f"innostall: threads named by OS thread id only: {meta['sql']['reason']}",
              file=sys.stderr)
    print(f"recorded {tgt.label} into {args.output} (ended by {meta.get('end_reason')})",
          file=sys.stderr)
    return 0


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


def loopback(addr: str) -> bool:
    """Whether an address to listen on is this host's alone."""
    import ipaddress

    try:
        return ipaddress.ip_address(addr.strip("[]")).is_loopback
    except ValueError:
        return addr == "localhost"


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}")
    if not 0 < value < 65536:
        raise argparse.ArgumentTypeError(f"not a port number (1-65535): {text!r}")
    return value


def cmd_report(args) -> int:
    from innostall.analysis import recording, summary, text

    rec = recording.load(args.recording)
    if args.start is not None or args.end is not None:
        from innostall.analysis import window

        rec = window.window(rec, args.start, args.end)
    if args.html:
        from innostall.analysis import html

        size = html.write_html(rec, args.html)
        print(f"wrote {args.html} ({size / 1e6:.1f} MB, self-contained)", file=sys.stderr)
    elif args.json:
        print(json.dumps(summary.summary(rec), indent=2))
    else:
        print(text.render_text(rec))
    return 0


def cmd_export(args) -> int:
    from innostall.analysis import export, recording

    written, notes = export.export(recording.load(args.recording), args.out)
    print("\n".join(written))
    for note in notes:
        print(f"innostall: {note}", file=sys.stderr)
    return 0


def cmd_redact(args) -> int:
    from innostall.analysis import redact

    done = redact.redact(args.recording, args.output, args.pseudonyms)
    replaced = "; user, host and socket names replaced" if args.pseudonyms else ""
    print(f"wrote {args.output}: statements fingerprinted{replaced}", file=sys.stderr)
    if done.damaged:
        print(f"innostall: {done.damaged} damaged journal line(s) left out", file=sys.stderr)
    if done.left_out:
        print(f"innostall: not copied: {', '.join(done.left_out)}", file=sys.stderr)
    return 0


def cmd_diff(args) -> int:
    from innostall.analysis import diff

    rec_a, rec_b = (diff.load_side(tag, getattr(args, tag), shared=(args.start, args.end),
                                   own=(getattr(args, f"{tag}_start"), getattr(args, f"{tag}_end")))
                    for tag in "ab")
    compared = diff.diff(rec_a, rec_b)
    if args.json:
        print(json.dumps(diff.to_json(compared, rec_a, rec_b), indent=2))
    else:
        print(diff.render_text(compared, rec_a, rec_b))
    return 0


def cmd_query(args) -> int:
    from innostall.analysis import query

    if args.ready:
        sql, params = query.ready_sql(args.ready[0], args.ready[1:])
    else:
        sql, params = args.sql, {}
    sys.stdout.write(query.render(query.run(args.recordings, sql, params), args.format))
    return 0


def ready_queries_help() -> str:
    from innostall.analysis.query import READY, TABLES

    lines = [f"views: {', '.join(['recordings', *TABLES])} "
             "(each with the columns recording and host first; docs/recording-format.md)",
             "ready queries (--ready NAME [ARG]):"]
    lines += [f"  {name}: {ready.help}" for name, ready in READY.items()]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="innostall", description=__doc__)
    p.add_argument("--version", action="version", version=f"innostall {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    probes = sub.add_parser("probes", help="which probes resolve on a server binary")
    add_target_args(probes)
    probes.add_argument("--json", action="store_true")
    probes.set_defaults(func=cmd_probes)

    script = sub.add_parser("bpftrace", help="print a bpftrace script for the resolved probes")
    add_target_args(script)
    script.add_argument("--probes", help="comma-separated probe sets or probe names (all)")
    script.set_defaults(func=cmd_bpftrace)

    record = sub.add_parser("record", help="trace a running server into a recording directory")
    add_target_args(record)
    record.add_argument("--duration", type=seconds_at_least(0.01),
                        help="seconds (default: until Ctrl-C)")
    record.add_argument("--interval", type=seconds_at_least(0.01), default=1.0,
                        help="seconds per sample (1; at least 0.01)")
    record.add_argument("--probes", help="comma-separated probe sets or probe names (default)")
    record.add_argument("--deep-walk-threshold", type=int, default=100, metavar="N",
                        help="keep the stack of reads that build N or more row versions (100)")
    cost = record.add_mutually_exclusive_group()
    cost.add_argument("--budget", type=positive, metavar="PCT",
                      help="share of the server's CPU time the probes may cost; hotter probes "
                      "are sampled, and reported so (default: 1)")
    cost.add_argument("--exact", action="store_true",
                      help="no budget: keep every probe attached, whatever it costs the server")
    record.add_argument("--holders", action="store_true",
                        help="also find who held each contended latch, from the scheduler's wakeup "
                        "tracepoint; it costs a busy server several times what the budget counts "
                        "for it (docs/overhead.md, Latch holders), so it is off unless asked")
    names = record.add_mutually_exclusive_group()
    names.add_argument("--sql", metavar="[USER@]SOCKET",
                       help="log in there to name the connections holding read views (default: "
                       "the server's own socket as root, if it lets us in; MYSQL_PWD for a password)")
    names.add_argument("--no-sql", action="store_true", help="never log in to the server")
    record.add_argument("--keep-literals", action="store_true",
                        help="keep the statements' literal values (e-mails, tokens, ...); by default "
                        "statements are recorded as fingerprints, each literal replaced by ?")
    record.add_argument("--metrics-port", type=port_number, metavar="N",
                        help="serve the last interval as Prometheus metrics on this port while recording")
    record.add_argument("--metrics-addr", default="127.0.0.1", metavar="ADDR",
                        help="the address to serve them on (127.0.0.1; another needs --metrics-expose)")
    record.add_argument("--metrics-expose", action="store_true",
                        help="serve the metrics on an address other hosts reach (--metrics-addr): "
                        "anyone who can connect reads them, unauthenticated and unencrypted")
    record.add_argument("--metrics-textfile", metavar="PATH.prom",
                        help="write them to this file each interval, for node_exporter's textfile collector")
    record.add_argument("--max-size", type=size, metavar="SIZE",
                        help="end the recording when its journal reaches SIZE (500M, 2G; default: "
                        "1G, or half the space free where it is written if that is less)")
    record.add_argument("-o", "--output", required=True, help="recording directory to create")
    record.set_defaults(func=cmd_record)

    report = sub.add_parser("report", help="print the report of a recording")
    report.add_argument("recording")
    report.add_argument("--json", action="store_true", help="machine-readable summary")
    report.add_argument("--html", metavar="FILE",
                        help="write the report as one self-contained HTML page instead")
    report.add_argument("--from", dest="start", metavar="T",
                        help="report only the intervals after T: seconds from the start (3600, 90m, "
                        "2h) or a UTC time of day (14:05:00)")
    report.add_argument("--to", dest="end", metavar="T", help="... and up to T (the same forms)")
    report.set_defaults(func=cmd_report)

    export = sub.add_parser("export", help="write a recording's summary, tables and flame graphs as files")
    export.add_argument("recording")
    export.add_argument("--out", required=True, metavar="DIR", help="directory to write into")
    export.set_defaults(func=cmd_export)

    redacted = sub.add_parser("redact", help="copy a recording with its statements' literals "
                              "replaced by ?, to share it")
    redacted.add_argument("recording")
    redacted.add_argument("-o", "--output", required=True, metavar="NEWDIR",
                          help="directory to create (new, or empty; outside the recording)")
    redacted.add_argument("--pseudonyms", action="store_true",
                          help="also replace database user names (user-1, user-2, ...), the host "
                          "name and the SQL socket")
    redacted.set_defaults(func=cmd_redact)

    compare = sub.add_parser("diff", help="compare two recordings, or windows of them, biggest changes first")
    compare.add_argument("a", metavar="A", help="the baseline recording")
    compare.add_argument("b", metavar="B", help="the recording to compare with it (A again: two windows of it)")
    compare.add_argument("--from", dest="start", metavar="T", help="compare both sides from T (as report's --from)")
    compare.add_argument("--to", dest="end", metavar="T", help="... and up to T (as report's --to)")
    for tag in "ab":
        compare.add_argument(f"--{tag}-from", dest=f"{tag}_start", metavar="T", help=f"{tag.upper()}'s own --from")
        compare.add_argument(f"--{tag}-to", dest=f"{tag}_end", metavar="T", help=f"{tag.upper()}'s own --to")
    compare.add_argument("--json", action="store_true", help="machine-readable comparison")
    compare.set_defaults(func=cmd_diff)

    query = sub.add_parser("query", help="SQL (DuckDB) over the tables of many recordings at once",
                           epilog=ready_queries_help(),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    query.add_argument("recordings", nargs="+", metavar="DIR", help="recording directories")
    what = query.add_mutually_exclusive_group(required=True)
    what.add_argument("--sql", help="a query over the views listed below")
    what.add_argument("--ready", nargs="+", metavar=("NAME", "ARG"), help="a ready query, by name")
    query.add_argument("--format", choices=["table", "csv", "json"], default="table")
    query.set_defaults(func=cmd_query)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # What innostall writes (recordings, reports, exports) holds stacks, thread and user
    # names, statements: root's alone unless handed over (docs/security.md).
    os.umask(0o077)
    try:
        return args.func(args)
    except UserError as e:
        print(f"innostall: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
