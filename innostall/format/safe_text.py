"""Strings from a recording made safe to show: in a terminal, in HTML and SVG (which escape
them besides), and written out as UTF-8."""
from __future__ import annotations

import re

# Names and texts longer than this are cut: statements are kept to 200 characters by the
# recorder (collector/server/sql.py), latch and thread names are short; a folded stack is
# cut frame by frame instead (table_bounds.py).
MAX_TEXT_CHARS = 1024
ELLIPSIS = "…"
# C0 and C1 controls (a terminal obeys ESC sequences), Unicode's direction overrides and
# isolates (they reorder what is shown, as in "Trojan Source"). As a pattern pandas hands to
# Arrow (RE2) too.
UNSHOWN = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
# Lone surrogates (an escaped \ud800 in JSON): they cannot be written out as UTF-8, nor be
# in an Arrow string at all.
SURROGATES = re.compile("[\ud800-\udfff]")
UNSAFE = re.compile(f"{UNSHOWN}|{SURROGATES.pattern}")
REPLACEMENT = "\ufffd"


def safe_text(value: str, limit: int = MAX_TEXT_CHARS) -> str:
    """A string from a recording, safe to print and to write as UTF-8: at most limit
    characters (and an ellipsis), tabs and newlines as spaces, unsafe characters as U+FFFD."""
    if len(value) > limit:
        value = value[:limit] + ELLIPSIS
    return UNSAFE.sub(REPLACEMENT, value.replace("\t", " ").replace("\n", " "))


MAX_DEPTH = 32  # meta.json nests 4 deep; JSON nested deeper is cut (null) there


def safe_strings(value, depth: int = 0):
    """Every string in a JSON value made safe (keys too)."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, list):
        return [safe_strings(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {safe_text(k): safe_strings(v, depth + 1) for k, v in value.items()}
    return value


def without_surrogates(value, depth: int = 0):
    """A JSON value with every lone surrogate in its strings (keys too) replaced, and
    nothing else changed; deeper than MAX_DEPTH, null."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, str):
        return SURROGATES.sub(REPLACEMENT, value)
    if isinstance(value, list):
        return [without_surrogates(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {SURROGATES.sub(REPLACEMENT, k): without_surrogates(v, depth + 1) for k, v in value.items()}
    return value
