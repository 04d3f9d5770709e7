"""The files innostall runs or reads besides its Python code: the BPF loader (the BPF
programs are inside it, as a skeleton), dwarf-layouts, inferno-flamegraph and the bpftrace
fragments.

An installed release (the wheel `make dist` builds) carries them as package data in
innostall/data/. A checkout has no such directory: there they are where `make build` puts
them (build/ and probes/bpftrace/ of the checkout). The packaged copy wins when both exist,
so an installed release never reads a checkout.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

PACKAGED = Path(str(resources.files("innostall") / "data"))
CHECKOUT = Path(__file__).resolve().parent.parent


def installed() -> bool:
    """True in an installed release, False in a checkout."""
    return PACKAGED.is_dir()


def loader() -> Path:
    return PACKAGED / "innostall-loader" if installed() else CHECKOUT / "build" / "innostall-loader"


def flamegraph_tool() -> Path:
    if installed():
        return PACKAGED / "inferno-flamegraph"
    return CHECKOUT / "build" / "tools" / "bin" / "inferno-flamegraph"


def dwarf_tool() -> Path:
    """dwarf-layouts, the reader of the server's struct layouts from its DWARF."""
    return PACKAGED / "dwarf-layouts" if installed() else CHECKOUT / "build" / "tools" / "bin" / "dwarf-layouts"


def bpftrace_fragments() -> Path:
    return PACKAGED / "bpftrace" if installed() else CHECKOUT / "probes" / "bpftrace"


def how_to_get(what: str) -> str:
    """The fix for a missing file, as fits where innostall runs from."""
    if installed():
        return f"{what} is missing from the installed package: reinstall innostall"
    return f"{what} not found: run 'make build' in {CHECKOUT}"
