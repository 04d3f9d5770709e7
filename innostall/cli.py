"""The innostall command: record a running server, report a recording."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from innostall import __version__
from innostall.cli_advise import add_advise_parsers  # advise
from innostall.cli_options import add_target_args, resolve_target
from innostall.cli_record import add_record_parsers  # record and watch
from innostall.errors import UserError


def probe_json(p) -> dict:
    return {"name": p.name, "resolved": p.ok, "core": p.core, "cost": p.cost,
            "symbols": [s.name for s in p.symbols], "offsets": p.offsets,
            "after_calls": p.after_calls, "callee": p.callee,
            "programs": p.programs, "globals": p.globals, "decode": p.decode,
            "exact": p.exact, "fallback": p.fallback, "found_by": p.found_by, "reason": p.reason}


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
            notes = ("  [fallback]" if p.fallback else "") + ("" if p.exact else "  [approx]") \
                + (f"  [{p.found_by}]" if p.found_by else "")
            where = demangle(p.symbol.name)[:70] + (f", its call to {p.callee}" if p.callee else "")
            print(f"{mark} {p.name:<{width}}{p.cost:<6}{p.offset:<#11x}{where}{more}{notes}")
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


def cmd_report(args) -> int:
    from innostall.analysis import recording, summary, views

    from innostall.analysis import window

    rec = recording.load(args.recording)
    if args.start is not None or args.end is not None:
        rec = window.window(rec, args.start, args.end)
    else:  # a recording a watch saved: the minutes around its trigger
        rec = window.saved_window(rec)
    if args.html:
        size = views.write_html_report(rec, args.html)
        print(f"wrote {args.html} ({size / 1e6:.1f} MB, self-contained)", file=sys.stderr)
    elif args.json:
        print(json.dumps(summary.summary(rec), indent=2))
    else:
        print(views.text_report(rec))
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
    from innostall.analysis.query import READY, view_names

    lines = [f"views: {', '.join(['recordings', *view_names()])} "
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

    add_record_parsers(sub)

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

    add_advise_parsers(sub)

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


def heed_interrupts() -> None:
    """SIGINT ends innostall from its first line, as it ends a recording once started. A shell
    script's background command (`innostall record ... &`) inherits SIGINT ignored, and
    Python then raises no KeyboardInterrupt: a recorder sent SIGINT before its own handler
    (collector/recorder/stopping.py, after discovery) went on recording to its end, its probes
    in the server. Only as a program: a caller's own handler, in its process, is its own."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        heed_interrupts()
    try:  # building the parser imports much: a Ctrl-C meanwhile has made nothing yet
        args = parser().parse_args(argv)
    except KeyboardInterrupt:
        print("innostall: interrupted before it began: nothing made", file=sys.stderr)
        return 130
    # What innostall writes (recordings, reports, exports) holds stacks, thread and user
    # names, statements: root's alone unless handed over (docs/security.md).
    os.umask(0o077)
    try:
        return args.func(args)
    except UserError as e:
        print(f"innostall: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:  # before a recording's own handler, or in a command that reads
        print("innostall: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
