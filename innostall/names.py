"""Names as people read them, shared by every stage: C++ symbols demangled, servers by
family and version, stacks leaf first with one arrow (a recording folds them root first,
frames joined by ';', as FlameGraph reads them), and a latch no rule could name as the
global it lies in and its offset."""
from __future__ import annotations

import re

import cxxfilt

FAMILY_NAMES = {"mariadb": "MariaDB", "mysql": "MySQL", "percona": "Percona Server"}
ARROW = " ← "  # leaf first: the frame on its left was called by the one on its right
_ADDRESS = re.compile(r"\+\d+$")  # lock_sys+128


def demangle(name: str | None) -> str:
    """A C++ symbol as people read it; plain or unknown names come back unchanged."""
    if not name:
        return "-"
    try:
        return cxxfilt.demangle(name)
    except cxxfilt.InvalidName:
        return name


def server_label(family: str | None, version: str | None) -> str:
    return f"{FAMILY_NAMES.get(family, 'unknown server')} {version or ''}".strip()


def split_function(demangled: str) -> tuple[str, str | None, str | None]:
    """A demangled function name as (qualified name, parameter list, clone kind):
    "void ns::f<int (*)(int)>(int, char) const [clone .constprop.0]" ->
    ("ns::f<int (*)(int)>", "int, char", "constprop"). The return type of a template
    function is dropped; params is None for a name that is not a function."""
    clone = None
    if demangled.endswith("]") and " [clone ." in demangled:
        demangled, tail = demangled.split(" [clone .", 1)
        clone = tail.split(".")[0].rstrip("]")
    depth, open_at, space_at = 0, None, -1
    for i, ch in enumerate(demangled):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0 and ch == " " and open_at is None:
            space_at = i
        elif depth == 0 and ch == "(" and open_at is None and i:
            open_at = i
            break
    if open_at is None:
        return demangled, None, clone
    close_at = _matching_paren(demangled, open_at)
    qualified = demangled[space_at + 1:open_at] if space_at < open_at else demangled[:open_at]
    return qualified, demangled[open_at + 1:close_at], clone


def _matching_paren(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        depth += text[i] == "("
        depth -= text[i] == ")"
        if depth == 0:
            return i
    return len(text)


def short_frame(frame: str) -> str:
    """A demangled frame without its argument list, for narrow lines. Template arguments
    stay: `void std::f<int (*)(int)>(int)` keeps `<int (*)(int)>`."""
    depth = 0
    for i, ch in enumerate(frame):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "(" and depth == 0 and i:
            return frame[:i]
    return frame


def leaf_first(folded: str, known_only: bool = False) -> list[str]:
    """The frames of a folded stack, innermost first; known_only drops the frames the
    unwinder could not name ([unknown], [missing])."""
    frames = [f for f in reversed(str(folded or "").split(";")) if f]
    return [f for f in frames if not f.startswith("[")] if known_only else frames


def path(frames: list[str], shown: int | None = None) -> str:
    """The first `shown` (all: None) of frames already leaf first, without argument lists,
    as one line."""
    return ARROW.join(short_frame(f) for f in frames[:shown])


def leaf_path(folded: str, shown: int | None = None, known_only: bool = False) -> str:
    """The innermost frames of a folded stack, leaf first, as one line."""
    return path(leaf_first(folded, known_only), shown)


def address_name(symbol: str, offset: int) -> str:
    """What a latch is called when only its place is known: `lock_sys+128`."""
    return f"{symbol}+{offset}"


def is_address_name(name: str) -> bool:
    """Whether a latch name is only a place (address_name), not a name."""
    return bool(_ADDRESS.search(str(name)))
