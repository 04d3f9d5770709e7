"""Data flows one way: the folders are the pipeline's stages, and a module imports only its own
stage and the ones before it. Read from the source (every import, those inside functions
too), so a shortcut taken anywhere fails here, not in a review."""
from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

# Each stage, in the order data flows, and the stages it may import besides itself. The
# analysis reads only the recording: it never sees the collector, which ran on another host.
STAGES = {
    "ground": (),                                    # errors, names, resources
    "format": ("ground",),                           # the recording format, schema included
    "discovery": ("ground", "format"),
    "server": ("ground", "format", "discovery"),
    "loader": ("ground", "format", "discovery"),
    "recorder": ("ground", "format", "discovery", "server", "loader"),
    "analysis": ("ground", "format"),
    # verify runs loads against a server and records them (record in a child process): the
    # server's SQL; it judges through the CLI, which hands its recordings to the analysis
    "verify": ("ground", "format", "discovery", "server"),
    "cli": ("ground", "format", "discovery", "server", "loader", "recorder", "analysis", "verify"),
}
FOLDERS = {"innostall/format": "format", "collector/discovery": "discovery", "collector/server": "server",
           "collector/loader": "loader", "collector/recorder": "recorder", "collector/verify": "verify",
           "analysis": "analysis"}
PACKAGES = {"innostall.format": "format", "innostall.collector.discovery": "discovery",
            "innostall.collector.server": "server", "innostall.collector.loader": "loader",
            "innostall.collector.recorder": "recorder", "innostall.collector.verify": "verify",
            "innostall.analysis": "analysis", "innostall.cli_advise": "cli",
            "innostall.cli": "cli", "innostall.cli_record": "cli", "innostall.cli_options": "cli",
            "innostall.__main__": "cli"}


def stage_of_file(path: Path) -> str:
    relative = path.relative_to(REPO).as_posix()
    if relative in ("innostall/cli.py", "innostall/cli_record.py", "innostall/cli_options.py",
                    "innostall/cli_advise.py", "innostall/__main__.py"):
        return "cli"
    return next((stage for folder, stage in FOLDERS.items() if relative.startswith(folder + "/")), "ground")


def module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[0] in ("collector", "analysis"):
        parts.insert(0, "innostall")  # pyproject.toml's package-dir
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def stage_of_module(name: str) -> str:
    return next((stage for package, stage in PACKAGES.items()
                 if name == package or name.startswith(package + ".")), "ground")


def imported(path: Path, source: str | None = None) -> set[str]:
    """The innostall modules (or packages) the file imports (its text, or source given for
    it), relative imports resolved."""
    module = module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            stem = ".".join(base + ([node.module] if node.module else []))
            # `from pkg import mod` names modules; `from mod import name` names the module
            found |= {f"{stem}.{alias.name}" for alias in node.names} | {stem}
    return {name for name in found if name.split(".")[0] == "innostall" and name != "innostall.__version__"}


def sources() -> list[Path]:
    """The package's modules: files in folders that are packages (not, say, a Rust crate's
    test script)."""
    return sorted(p for folder in ("innostall", "collector", "analysis") for p in (REPO / folder).rglob("*.py")
                  if (p.parent / "__init__.py").exists())


def test_no_module_imports_a_later_stage():
    wrong = []
    for path in sources():
        stage = stage_of_file(path)
        for name in sorted(imported(path)):
            target = stage_of_module(name)
            if target != stage and target not in STAGES[stage]:
                wrong.append(f"{path.relative_to(REPO)} ({stage}) imports {name} ({target})")
    assert wrong == []


def test_every_folder_is_a_stage_and_every_stage_has_modules():
    stages = {stage_of_file(path) for path in sources()}
    assert stages == set(STAGES)
    collector = {p.parent.relative_to(REPO).as_posix() for p in (REPO / "collector").rglob("__init__.py")}
    assert collector - {"collector"} <= set(FOLDERS), collector


def test_the_rule_is_read_from_imports_inside_functions_too():
    """A later stage imported lazily, inside a function, relatively, is still caught."""
    module = REPO / "analysis" / "holders.py"
    source = module.read_text() + "\n\ndef later():\n    from ..collector.discovery import elf\n"
    names = imported(module, source)
    assert "innostall.collector.discovery.elf" in names
    assert {stage_of_module(n) for n in names} - {"analysis", *STAGES["analysis"]} == {"discovery"}


def test_the_analysis_stands_on_at_most_five_floors_without_a_circle():
    """Issue 47: a reader holds the analysis as five floors (analysis/sections/__init__.py
    names them); a sixth comes back with one convenient import, such as a table module
    wording a hover text (report_tables importing wording/ did, until its view spans went to
    the page that draws them). A folder counts as one room, as a reader takes it: its
    modules' imports are its imports (scripts/import_floors.py counts modules)."""
    import import_floors  # scripts/, on sys.path from conftest
    modules = import_floors.module_names(REPO / "analysis", "analysis")

    def room(name: str) -> str:  # analysis.wording.numbers is in the room analysis.wording
        folder = ".".join(name.split(".")[:2])
        return folder if (REPO / Path(*folder.split("."))).is_dir() else name

    rooms: dict[str, set[str]] = {}
    for name, path in modules.items():
        imports = {room(target) for target in import_floors.imports_of(name, path, modules)}
        rooms.setdefault(room(name), set()).update(imports - {room(name)})
    assert import_floors.circles(rooms) == []
    floors = import_floors.floors(rooms)
    assert max(floors.values()) <= 5, sorted((f, n) for n, f in floors.items() if f > 4)
