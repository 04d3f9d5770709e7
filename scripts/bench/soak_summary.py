"""The soak's figures read (bench.soak): the recording's disk by kind of file, the disk an
8-hour recording would take, issue 30's targets met or not, and soak.md."""
from __future__ import annotations

import os
import stat
from pathlib import Path

from innostall.format import journal_files

from .settings import SYSBENCH_THREADS

HOUR_S = 3600
TARGET_HOURS, TARGET_DISK_MB = 8, 100
SETTLED_MINUTE = 10  # RSS growth is counted from the first sample at or after this minute
FLAT_MB, FLAT_PCT = 5, 5  # RSS growth per hour still called flat: under either
REPORT_TARGETS = (("text", "wall_s", 5, "s"), ("html", "wall_s", 15, "s"), ("html", "html_mb", 20, "MB"))


def disk_use(directory: Path) -> dict:
    """Bytes of every regular file in the recording, and where they lie: the journal's
    compressed segments, its plain parts (the live file, a segment not yet compressed),
    the Parquet tables. Read by file name, for the journal is several files."""
    found = dict.fromkeys(("disk_bytes", "xz_bytes", "xz_segments", "plain_journal_bytes",
                           "tables_bytes"), 0)
    for folder, _, names in os.walk(directory):
        for name in names:
            try:
                info = os.lstat(os.path.join(folder, name))
            except FileNotFoundError:  # a plain segment removed once compressed
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            found["disk_bytes"] += info.st_size
            segment = journal_files.SEGMENT.match(name)
            if segment and segment[2]:
                found["xz_bytes"] += info.st_size
                found["xz_segments"] += 1
            elif segment or name == journal_files.LIVE:
                found["plain_journal_bytes"] += info.st_size
            elif name.endswith(".parquet"):
                found["tables_bytes"] += info.st_size
    return found


def segment_rolls(directory: Path) -> list[list[float]]:
    """[when, bytes] of each compressed segment, in order. The recorder compresses a segment
    as soon as it rolls it (a second for 16 MB), so the .xz's mtime dates the roll."""
    rolls = []
    for _, name in journal_files.segments(str(directory)):
        if name.endswith(".xz"):
            info = os.stat(directory / name)
            rolls.append([info.st_mtime, info.st_size])
    return rolls


def disk_in_8_hours(soak: dict) -> dict:
    """The disk an 8-hour recording would take, extrapolated. Not from the sampled totals:
    the live file grows plain to SEGMENT_BYTES before it is rolled and compressed, so a
    total swings by up to that much with the moment it is read. Instead the compressed
    segments rolled over the last hour, per second of recording, for 8 hours; plus the live
    file at its largest; plus the tables scaled by the length; plus the rest (meta.json ...)."""
    end, rolls, interval_s = soak["final_disk"], soak["segment_rolls"], soak["interval_s"]
    recorded_s = soak["recording"].get("duration_s") or soak["samples"][-1]["minute"] * 60
    target_s = TARGET_HOURS * HOUR_S
    starts = [soak["attached_wall"]] + [when for when, _ in rolls[:-1]]
    recent = [(start, when, size) for start, (when, size) in zip(starts, rolls)
              if when >= soak["stopped_wall"] - HOUR_S]
    if recent:
        rate = sum(size for _, _, size in recent) / (recent[-1][1] - recent[0][0])
        journal = rate * target_s + journal_files.SEGMENT_BYTES
        basis = (f"{len(recent)} compressed segment(s) rolled over the last hour, "
                 f"{rate * interval_s:,.0f} bytes per interval, plus the live file at its "
                 f"largest ({journal_files.SEGMENT_BYTES / 1e6:.1f} MB plain)")
    else:
        rate = end["plain_journal_bytes"] / recorded_s
        journal = rate * target_s
        basis = (f"no segment rolled: the plain journal's {rate * interval_s:,.0f} bytes per "
                 "interval, uncompressed, an upper bound")
    tables = end["tables_bytes"] * target_s / recorded_s
    rest = end["disk_bytes"] - end["xz_bytes"] - end["plain_journal_bytes"] - end["tables_bytes"]
    return {"bytes": round(journal + tables + rest), "journal_bytes": round(journal),
            "tables_bytes": round(tables), "other_bytes": rest,
            "basis": f"{basis}; the tables scaled by the length to {tables / 1e6:,.1f} MB"}


def rss_growth(samples: list[dict], proc: str) -> dict:
    """The growth per hour of the process's private memory (RssAnon: the heap; the RSS also
    counts the pages of files it maps, such as the server's binary read for its symbols, which
    the kernel takes back as it needs) from the first sample at or after SETTLED_MINUTE to the
    last."""
    key = f"{proc}_anon_mb" if f"{proc}_anon_mb" in samples[-1] else f"{proc}_rss_mb"
    settled = next((row for row in samples[:-1] if row["minute"] >= SETTLED_MINUTE), None)
    if settled is None:
        return {"measured": f"not measured: no sample from minute {SETTLED_MINUTE} before the last",
                "met": None}
    last = samples[-1]
    per_hour = (last[key] - settled[key]) / ((last["minute"] - settled["minute"]) / 60)
    pct = 100 * per_hour / settled[key]
    flat = per_hour < FLAT_MB or pct < FLAT_PCT
    return {"measured": f"{settled[key]:,.1f} MB at {settled['minute']:g} min, {last[key]:,.1f} MB "
                        f"at {last['minute']:g} min: {per_hour:+,.1f} MB ({pct:+.1f}%) per hour, "
                        f"{'flat' if flat else 'growing'}", "met": flat}


def with_targets(soak: dict) -> dict:
    """The soak with the 8-hour disk estimate and issue 30's targets, each met, not met or
    not measured (None)."""
    disk = disk_in_8_hours(soak)
    targets = [{"target": f"an {TARGET_HOURS}-hour recording under {TARGET_DISK_MB} MB on disk",
                "measured": f"{disk['bytes'] / 1e6:,.1f} MB, extrapolated from {disk['basis']}",
                "met": disk["bytes"] < TARGET_DISK_MB * 1e6}]
    targets += [{"target": f"the {proc}'s private memory (RssAnon) flat after {SETTLED_MINUTE} min",
                 **rss_growth(soak["samples"], proc)} for proc in ("recorder", "loader")]
    reports = {row["report"]: row for row in soak["report"]}
    for kind, key, limit, unit in REPORT_TARGETS:
        row = reports.get(kind)
        targets.append({"target": f"{kind} report {'wall time' if unit == 's' else 'page'} < {limit} {unit}",
                        "measured": f"{row[key]:,.2f} {unit}" if row else "not measured",
                        "met": row[key] < limit if row else None})
    return {**soak, "disk_8h": disk, "targets": targets}


def mb(size: float) -> str:
    return f"{size / 1e6:,.1f}"


SAMPLE_COLUMNS = (  # the header, and the cell of a row
    ("min", lambda r: f"{r['minute']:g}"),
    ("intervals", lambda r: f"{r['intervals']:,}"),
    ("disk MB", lambda r: mb(r["disk_bytes"])),
    ("xz MB (segments)", lambda r: f"{mb(r['xz_bytes'])} ({r['xz_segments']})"),
    ("plain journal MB", lambda r: mb(r["plain_journal_bytes"])),
    ("bytes/interval", lambda r: f"{r['bytes_per_interval']:,}"),
    ("recorder RSS MB (peak), anon", lambda r: f"{r['recorder_rss_mb']:,.1f} ({r['recorder_peak_rss_mb']:,.1f}), "
                                               f"{r.get('recorder_anon_mb', '-')}"),
    ("loader RSS MB (peak), anon", lambda r: f"{r['loader_rss_mb']:,.1f} ({r['loader_peak_rss_mb']:,.1f}), "
                                             f"{r.get('loader_anon_mb', '-')}"),
    ("recorder CPU s", lambda r: f"{r['recorder_cpu_s']:,.1f}"),
    ("loader CPU s", lambda r: f"{r['loader_cpu_s']:,.1f}"),
    ("CPU % of a core", lambda r: f"{r['cpu_percent']:.2f}"),
    ("load tps", lambda r: "" if r["load_tps"] is None else f"{r['load_tps']:,.0f}"),
)


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers),
            *("| " + " | ".join(row) + " |" for row in rows)]


def end_lines(soak: dict) -> list[str]:
    stop, disk, rec = soak["stop"], soak["final_disk"], soak["recording"]
    lines = [f"SIGINT to exit {stop['stop_s']:g} s (probes detached, load stopped, tables written), "
             f"exit status {stop['exit_status']}; the recorder and its children over their life: "
             f"{stop['lifetime_cpu_s']:g} s CPU, {stop['lifetime_max_rss_mb']:g} MB max RSS.",
             f"On disk after exit: {mb(disk['disk_bytes'])} MB: journal {mb(disk['xz_bytes'])} MB in "
             f"{disk['xz_segments']} xz segment(s) and {mb(disk['plain_journal_bytes'])} MB plain, "
             f"tables {mb(disk['tables_bytes'])} MB."]
    if "log_tail" in stop:
        lines.append(f"The recorder said: {stop['log_tail']}")
    if "report_error" in rec:
        return lines + [f"report --json failed: {rec['report_error']}"]
    drops = ", ".join(f"`{name}` {count:,}" for name, count in rec["drops"].items())
    lines.append(f"report --json: {rec['duration_s']:,.0f} s, {rec['intervals']:,} intervals, "
                 f"ended by {rec['ended_by']}; events lost: {drops or 'no count of them in the report'}.")
    return lines + [f"Warning: {w}" for w in rec["warnings"]]


def markdown(soak: dict, recording: Path) -> str:
    load = f"{soak['rate_tps']:,} tps" if soak["rate_tps"] else "full speed"
    lines = [f"# Soak: innostall record for {soak['minutes']:g} min (issue 30)", "",
             f"{soak['server']} under sysbench oltp_read_write, {SYSBENCH_THREADS} threads at {load} "
             f"({soak['capacity_tps']:,.0f} tps untraced); the default probe set and budget, "
             f"{soak['interval_s']:g} s intervals; `{recording}`.", "",
             "## Samples", "",
             f"Every {soak['every']:g} min and at the end. Disk: every regular file in the recording "
             "(the live journal file grows plain until it is rolled and compressed). Intervals: "
             "the minutes over the interval. RSS: resident now (peak so far). CPU s: utime + "
             "stime so far; CPU %: recorder and loader over the period since the row before (the "
             "first: since launch, discovery and calibration included).", "",
             *table([h for h, _ in SAMPLE_COLUMNS],
                    [[cell(r) for _, cell in SAMPLE_COLUMNS] for r in soak["samples"]]),
             "", "## At the end", "", *end_lines(soak), "",
             f"## Reports of this {soak['minutes']:g}-minute recording", ""]
    if soak.get("report_error"):
        lines += [f"A report failed: {soak['report_error']}", ""]
    if soak["report"]:
        lines += table(["report", "wall s", "peak RSS MB", "HTML MB"],
                       [[r["report"], f"{r['wall_s']:.2f}", f"{r['rss_mb']:,.0f}",
                         "" if r["html_mb"] is None else f"{r['html_mb']:.1f}"] for r in soak["report"]])
    lines += ["", "## Issue 30's targets", "",
              f"The report's are for an {TARGET_HOURS}-hour recording; these times are this one's.", "",
              *table(["target", "measured", "met"],
                     [[t["target"], t["measured"], {True: "met", False: "not met", None: "-"}[t["met"]]]
                      for t in soak["targets"]])]
    return "\n".join(lines)
