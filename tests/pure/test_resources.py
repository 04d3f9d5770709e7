"""Where innostall finds the files it runs or reads besides its code (innostall/resources.py):
an installed release's package data first, else the checkout's build/ and probes/."""
import tomllib
from fnmatch import fnmatch

import pytest

from innostall import resources
from innostall.collector.loader import loader
from innostall.errors import UserError


@pytest.fixture
def release(monkeypatch, tmp_path):
    """innostall as an installed release: package data in data/, the loader not yet in it."""
    data = tmp_path / "data"
    (data / "bpftrace").mkdir(parents=True)
    monkeypatch.setattr(resources, "PACKAGED", data)
    monkeypatch.delenv("INNOSTALL_LOADER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    return data


def test_a_checkout_reads_build_and_probes(monkeypatch, tmp_path):
    monkeypatch.setattr(resources, "PACKAGED", tmp_path / "no-data")
    assert not resources.installed()
    assert resources.loader() == resources.CHECKOUT / "build" / "innostall-loader"
    assert resources.flamegraph_tool() == resources.CHECKOUT / "build" / "tools" / "bin" / "inferno-flamegraph"
    assert resources.dwarf_tool() == resources.CHECKOUT / "build" / "tools" / "bin" / "dwarf-layouts"
    assert (resources.bpftrace_fragments() / "header.bt").is_file()
    assert "make build" in resources.how_to_get("innostall-loader")


def test_a_release_reads_its_package_data_only(release):
    assert resources.installed()
    assert resources.loader() == release / "innostall-loader"
    assert resources.flamegraph_tool() == release / "inferno-flamegraph"
    assert resources.dwarf_tool() == release / "dwarf-layouts"
    assert resources.bpftrace_fragments() == release / "bpftrace"


def test_a_release_missing_its_loader_says_reinstall(release):
    with pytest.raises(UserError, match="reinstall innostall"):
        loader.loader_path()
    (release / "innostall-loader").write_text("#!/bin/sh\n")
    (release / "innostall-loader").chmod(0o755)
    assert loader.loader_path() == str(release / "innostall-loader")


def test_the_wheel_ships_what_a_release_reads():
    """pyproject's package data names the files resources.py looks for in data/."""
    with open(resources.CHECKOUT / "pyproject.toml", "rb") as f:
        shipped = tomllib.load(f)["tool"]["setuptools"]["package-data"]["innostall"]
    for path in (resources.PACKAGED / "innostall-loader", resources.PACKAGED / "inferno-flamegraph",
                 resources.PACKAGED / "dwarf-layouts",
                 resources.PACKAGED / "bpftrace" / "header.bt"):
        relative = path.relative_to(resources.PACKAGED.parent).as_posix()
        assert any(fnmatch(relative, glob) for glob in shipped), f"{relative} is not package data"
