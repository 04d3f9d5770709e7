"""A recording's purge phases, from its directory: the analysis a watch asks of its kept
minutes (collector/recorder/watch.py, VerdictCheck). The recorder keeps pandas out of its
memory, so it runs this module in a child Python process of its own on idle CPU
(`python -m innostall.analysis.purge_phases DIR`), which prints the phases as JSON: the same
list `report --json` gives under purge.phases, without the rest of the summary."""
from __future__ import annotations

import json
import sys

from innostall.errors import UserError

from .recording import load
from .summary import purge_story
from .window import saved_window


def purge_phases(path: str) -> list[dict]:
    """The phases of the recording at path, in its saved window where a watch saved one
    (window.saved_window, as `report` reads it)."""
    return purge_story(saved_window(load(path)))["phases"]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m innostall.analysis.purge_phases RECORDING_DIR", file=sys.stderr)
        return 2
    try:
        print(json.dumps(purge_phases(argv[0])))
    except UserError as e:  # a recording that cannot be read: one line, as the CLI says it
        print(f"innostall: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
