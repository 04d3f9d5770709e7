"""A probe whose catalog names all miss, found from the build itself by the function's plain
name (the catalog's `function`, or its mangled symbols' name without the parameter list):

 1. under another signature: a function of that name in the symbol table whose mangled
    name the catalog does not list (MariaDB 10.4 passes buf_page_get_gen a page_id_t by
    value and a zip size where 10.2-10.3 pass references);
 2. inlined: its copies in its callers, from the DWARF (dwarf_functions.py), the probe
    attached at each copy's first instruction.

Either way the registers may not hold what the programs read: another signature lays the
arguments out otherwise, and at an inlined copy the registers hold whatever the caller's
code put there (the call's arguments are where the DWARF's location lists say, e.g. rbx).
So only programs that read no register of the context (the catalog's [registers]
none_read) are placed so, and only entry programs: a return probe needs a call to return
from. Anything else stays missing, with what was found and why it is not used."""
from __future__ import annotations

from innostall.names import demangle, split_function

from . import dwarf_functions
from .elf import Symbol


def plain_name(variant: dict) -> str | None:
    if variant.get("function"):
        return variant["function"]
    for symbol in variant.get("symbols", []):
        function, params, _ = split_function(demangle(symbol))
        if params is not None:
            return function
    return None


def none_read(catalog_file: dict) -> set[str]:
    return set(catalog_file.get("registers", {}).get("none_read", []))


def refusal(programs: dict[str, str], free: set[str]) -> str | None:
    """Why these programs cannot run where the call's registers are not the function's own."""
    if "return" in programs:
        return "its return program needs a call to return from"
    reading = [prog for prog in programs.values() if prog not in free]
    return f"{', '.join(reading)} reads the call's registers" if reading else None


def dwarf_image(target):
    """The file holding the build's DWARF: the separate debug file, else the executable."""
    for image in (target.debug, target.elf):
        if image is not None and image.has_section(".debug_info"):
            return image
    return None


def find(variants: list[tuple[dict, bool]], target, free: set[str],
         default_programs: dict[str, str]) -> tuple[dict, list[Symbol], str] | str | None:
    """(variant, symbols to attach at, how they were found), or why what was found is not
    used, or None when the build has nothing of the name either."""
    said = None
    for variant, version_matches in variants:
        if not version_matches or "absent" in variant or "unavailable" in variant \
                or variant.get("library") or "calls" in variant:
            continue
        name = plain_name(variant)
        if not name:
            continue
        programs = variant.get("programs", default_programs)
        copies = target.find_function_copies(name)
        if copies:
            listed = f"{name}({copies[0][1]})"
            why = refusal(programs, free)
            if why is None:
                return variant, [sym for sym, _ in copies], "by its name under another signature"
            said = said or f"{listed} is in the binary under another signature, but {why}"
            continue
        image = dwarf_image(target)
        if image is None:
            continue
        inlined = dwarf_functions.inlined(image, name)
        if inlined.error:
            said = said or f"{name} not searched for in the DWARF: {inlined.error}"
            continue
        if not inlined.sites:
            continue
        where = f"inlined into {', '.join(inlined.callers())} at {len(inlined.sites)} site" \
                + ("s" if len(inlined.sites) > 1 else "")
        why = refusal(programs, free)
        if why is None:
            return variant, [Symbol(s.caller, s.entry, 0, "DWARF") for s in inlined.sites], \
                f"found by DWARF: {name} {where}"
        sites = ", ".join(f"{s.entry:#x} (line {s.call_line})" for s in inlined.sites[:4])
        said = said or (f"{name} is {where} ({sites}, by DWARF); no probe there: {why} "
                        "(an inlined copy has no call: its registers are the caller's)")
    return said
