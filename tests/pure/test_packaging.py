"""The wheel carries every package of the tree: pyproject.toml lists its packages by hand
(three folders map to innostall, innostall.collector and innostall.analysis), and a folder
added without its line is left out of the wheel while an editable checkout still works
(analysis/advice and collector/verify were, until 2026-11-29)."""
from __future__ import annotations

import tomllib

from conftest import REPO


def test_every_package_folder_is_in_the_wheels_list():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    listed = set(project["tool"]["setuptools"]["packages"])
    roots = project["tool"]["setuptools"]["package-dir"]
    found = set()
    for package, folder in roots.items():
        for init in (REPO / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(REPO / folder).parts
            found.add(".".join((package, *parts)))
    assert found - listed == set()
