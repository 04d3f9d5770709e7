"""Names as people read them, shared by discovery and the reports: C++ symbols demangled,
and servers by family and version."""
from __future__ import annotations

import cxxfilt

FAMILY_NAMES = {"mariadb": "MariaDB", "mysql": "MySQL", "percona": "Percona Server"}


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
