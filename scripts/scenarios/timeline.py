"""Line a scenario's markers up with an innostall recording of it, interval by interval.

usage: build/venv/bin/python scripts/scenarios/timeline.py RECORDING SCENARIO_LOG [--check]

SCENARIO_LOG is what a scenario script printed (its "scenario: t=..." lines). Each marker is
placed on the recording's clock (seconds from the attach) through the scenario's start
epoch and the attach's wall-clock time in the journal. The table gives, per interval, purge
batches and undo pages from the recording, the history length (the recording's gauge if it
has one, else the scenario's last sample of INNODB_METRICS), and the markers that fell in it.

--check (long-snapshot.sh): exit 1 unless the recording holds the whole story: the snapshot
opened inside it and pinned purge for at least 3 s (whole intervals with next to no purged
page), the commit at least 3 s before the end, and pages purged after it."""
from __future__ import annotations

import json
import re
import signal
import sys
from pathlib import Path

MARKER = re.compile(r"^scenario: t=(\d+\.\d) (.*)$")
MARGIN_S = 3.0  # the stall and the catch-up each need this much of the recording


def fail(message: str) -> None:
    print(f"timeline: {message}", file=sys.stderr)
    sys.exit(1)


def attach_epoch(recording: Path) -> float:
    """Wall-clock seconds of the attach: the journal's 'attached' line (real_ns)."""
    try:
        with open(recording / "journal.jsonl") as journal:
            for line in journal:
                if '"attached"' in line:
                    return json.loads(line)["real_ns"] / 1e9
    except (OSError, ValueError, KeyError) as err:
        fail(f"cannot read the attach time from {recording}/journal.jsonl: {err}")
    fail(f"{recording}/journal.jsonl has no 'attached' line")


def read_markers(log: Path) -> tuple[float, list[tuple[float, str]]]:
    """The scenario's start epoch and its markers, (t from its start, text)."""
    try:
        lines = log.read_text().splitlines()
    except OSError as err:
        fail(f"cannot read {log}: {err.strerror}")
    markers = [(float(m[1]), m[2]) for m in map(MARKER.match, lines) if m]
    start = next((re.search(r"epoch=(\d+\.\d+)", text) for _, text in markers if text.startswith("start ")), None)
    if not start:
        fail(f"{log} has no 'start epoch=...' marker")
    return float(start[1]), markers


def interval_rows(recording: Path):
    from innostall.analysis import load_frames  # the venv's package; imported late for a quick --help
    from innostall.errors import UserError
    try:
        table = load_frames(str(recording))["intervals"]
    except UserError as err:
        fail(str(err))
    return table


def sample_value(text: str, key: str) -> str | None:
    m = re.search(rf"(?:^| ){re.escape(key)}=(\S+)", text)
    return m[1] if m else None


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--check"]
    if len(args) != 2 or any(a in ("-h", "--help") for a in argv):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    recording, log = Path(args[0]), Path(args[1])
    offset = read_markers(log)[0] - attach_epoch(recording)  # scenario t + offset = recording t
    _, markers = read_markers(log)
    placed = [(t + offset, text) for t, text in markers]
    table = interval_rows(recording)
    # The recording's own history gauge, where the probes fill it in (all zero where they do not).
    gauge = "history_length" in table.columns and (table["history_length"].fillna(0) > 0).any()
    print(f"{'t (s)':>6} {'batches':>8} {'pages':>8} {'history':>8} {'recorded':>8}  "
          "scenario markers (t on the recording's clock)")
    start = 0.0
    history = "-"
    rows = []
    for end, row in table.iterrows():
        inside = [(t, text) for t, text in placed if start < t <= end]
        for _, text in inside:
            history = sample_value(text, "history") or history
        shown = [f"{t:.1f} {text}" for t, text in inside if not text.startswith("sample ")]
        known = gauge and str(row["history_length"]) not in ("<NA>", "nan")  # NA: not read yet
        recorded = int(row["history_length"]) if known else "-"
        pages, batches = int(row.get("purge_pages", 0)), int(row.get("purge_batches", 0))
        rows.append((start, end, pages))
        print(f"{end:6.1f} {batches:8d} {pages:8d} {history:>8} {recorded!s:>8}  {'; '.join(shown)}")
        start = end
    print("history: INNODB_METRICS trx_rseg_history_len, the scenario's last sample in the interval; "
          "recorded: the recording's history_length gauge" + ("" if gauge else " (not in this recording)"))
    return check(placed, rows) if "--check" in argv else 0


def check(placed: list[tuple[float, str]], rows: list[tuple[float, float, int]]) -> int:
    """The long-snapshot story inside the recording: a pinned stretch, the commit, the catch-up."""
    opened = next((t for t, text in placed if text.startswith("snapshot opened")), None)
    committed = next((t for t, text in placed if text.startswith("snapshot committed")), None)
    end = rows[-1][1] if rows else 0.0
    if opened is None or committed is None:
        print("check: the scenario log has no 'snapshot opened' or 'snapshot committed' marker")
        return 1
    # Whole intervals between the open (plus a second for purge to finish what it had) and the commit.
    pinned = [pages for lo, hi, pages in rows if lo >= opened + 1 and hi <= committed]
    after = [pages for lo, hi, pages in rows if lo >= committed]
    print(f"check: snapshot opened at {opened:.1f} s, committed at {committed:.1f} s, recording ends at {end:.1f} s")
    print(f"check: pinned {len(pinned)} whole intervals, purged pages in them: {pinned}")
    print(f"check: after the commit {len(after)} intervals, purged pages: {after}")
    # Near-empty: what purge still finds while pinned is under 5% of its pace after the commit.
    ok = (opened >= 0 and committed - opened >= MARGIN_S and end - committed >= MARGIN_S
          and len(pinned) >= MARGIN_S - 1 and after and max(after) > 0
          and max(pinned) < 0.05 * max(after))
    print("check: " + ("stall, commit and catch-up all inside the recording" if ok else
                       "FAILED: the recording does not hold the stall, the commit and the catch-up"))
    return 0 if ok else 1


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # piped into head: stop quietly
    sys.exit(main(sys.argv[1:]))
