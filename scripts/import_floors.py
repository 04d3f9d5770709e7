"""The import floors of a package: which of its modules import which, any circle, and each module's floor.

A module that imports nothing of the package is floor 1; any other is 1 + the highest floor it imports.
Imports inside functions count as well (a circle hidden in a function is still a circle).
Package __init__ modules are left out as targets when a name is imported from them that is itself a
submodule (``from analysis import summary`` is an import of analysis.summary, not of analysis).

    python scripts/import_floors.py [analysis]        # floors, widest module list per floor
    python scripts/import_floors.py analysis --edges  # also each module's imports
    python scripts/import_floors.py analysis --top    # imports at a module's top level only
"""
import ast
import sys
from pathlib import Path


def module_names(root: Path, package: str) -> dict[str, Path]:
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def top_level(tree: ast.Module):
    """The statements run when the module is imported: its body, and the bodies of its
    if/try/with blocks, not those of its functions and classes."""
    for node in tree.body:
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []):
                    yield from top_level(ast.Module(body=child.body if isinstance(child, ast.ExceptHandler)
                                                    else [child], type_ignores=[]))


def imports_of(name: str, path: Path, modules: dict[str, Path], top: bool = False) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    found = set()

    def add(target: str):
        # The longest module name the dotted target begins with.
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    for node in (top_level(tree) if top else ast.walk(tree)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:
                    add(f"{source}.{alias.name}")
                else:
                    add(source)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each module's floor; modules in a circle count the circle once (their group shares a floor)."""
    floor: dict[str, int] = {}

    def of(v, path):
        if v in floor:
            return floor[v]
        if v in path:
            return 0  # a circle: reported apart, not counted twice
        path.add(v)
        floor[v] = 1 + max((of(w, path) for w in graph[v]), default=0)
        path.discard(v)
        return floor[v]

    for v in sorted(graph):
        of(v, set())
    return floor


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    package = args[0] if args else "analysis"
    root = Path(package).resolve()
    modules = module_names(root, root.name)
    graph = {name: imports_of(name, path, modules, "--top" in argv) for name, path in modules.items()}
    found = circles(graph)
    floor = floors(graph)
    top = max(floor.values())
    for level in range(top, 0, -1):
        names = sorted(n for n, f in floor.items() if f == level)
        print(f"floor {level} ({len(names)}): {' '.join(names)}")
    if "--edges" in argv:
        for name in sorted(graph):
            print(f"{name} [{floor[name]}] -> {' '.join(sorted(graph[name]))}")
    for group in found:
        print("circle:", " <-> ".join(group))
    print(f"{package}: {len(modules)} modules, {top} floors, {len(found)} circle(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
