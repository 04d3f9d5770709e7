"""Folded stacks (root first, frames joined by ';') made short enough to read in a line."""
from __future__ import annotations


def short_frame(frame: str) -> str:
    """A demangled frame without its argument list, for narrow terminal lines."""
    depth = 0
    for i, ch in enumerate(frame):
        depth += ch in "<"
        depth -= ch in ">"
        if ch == "(" and depth == 0 and i:
            return frame[:i]
    return frame


def leaf_path(folded: str, frames: int) -> str:
    """The innermost frames of a folded stack (root first), leaf first, without arguments."""
    leaf_first = [short_frame(f) for f in reversed(str(folded).split(";")) if f]
    return " <- ".join(leaf_first[:frames])
