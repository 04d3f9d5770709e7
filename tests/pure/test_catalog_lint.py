"""Catalog lint: the catalog, the BPF object, the measurement schema and the Python readers
agree. Root-free and server-free; needs only the built object and loader (make build)."""
from __future__ import annotations

import ast
import json
import re
from functools import cache
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from conftest import REPO
from innostall.collector.discovery import discover
from innostall.collector.loader import loader
from innostall.format.journal import BANK_ACCOUNTS, GOVERNOR_ACCOUNTS
from innostall.format.schema import format_1

BPF_OBJECT = REPO / "build" / "innostall.bpf.o"
FAMILIES = {"mysql", "percona", "mariadb"}
ROLE_SECTIONS = {"entry": "uprobe", "return": "uretprobe"}
VERSIONS = re.compile(r"^\d+(\.\d+)* - \d+(\.\d+)*$")


@cache
def bpf_symbols() -> dict[str, str]:
    """Every named function and read-only setting of the linked object -> its section."""
    with open(BPF_OBJECT, "rb") as f:
        elf = ELFFile(f)
        symbols = {}
        for sym in elf.get_section_by_name(".symtab").iter_symbols():
            kind = sym["st_info"]["type"]
            if kind in ("STT_FUNC", "STT_OBJECT") and isinstance(sym["st_shndx"], int):
                symbols[sym.name] = elf.get_section(sym["st_shndx"]).name
        return symbols


def probes() -> list[tuple[str, dict]]:
    return list(discover.catalog().items())


def variants() -> list[tuple[str, dict, dict]]:
    return [(name, entry, v) for name, entry in probes() for v in entry["variant"]]


def test_every_probe_is_described_and_in_a_known_set():
    sets = {s for _, e in probes() for s in e["sets"]}
    assert "default" in sets
    for name, entry in probes():
        assert entry["description"] and entry["cost"] in ("cold", "warm", "hot"), name
        assert set(entry["programs"]) <= set(ROLE_SECTIONS), name


@pytest.mark.parametrize("name, entry, variant", variants(),
                         ids=[f"{n}:{'/'.join(v['families'])}:{v['versions']}" for n, _, v in variants()])
def test_variant_programs_exist_in_the_object_with_their_role(name, entry, variant):
    assert set(variant["families"]) <= FAMILIES
    assert VERSIONS.match(variant["versions"]), variant["versions"]
    why = variant.get("absent") or variant.get("unavailable")  # a range without the probe, and why
    if "absent" in variant or "unavailable" in variant:
        assert why and not {"symbols", "function", "programs"} & set(variant)
        return
    assert variant.get("symbols") or variant.get("function"), name
    assert all(s.startswith("_Z") or s.isidentifier() for s in variant.get("symbols", []))
    # a variant's programs replace the probe's, roles and all, as discovery takes them
    for role, program in variant.get("programs", entry["programs"]).items():
        assert bpf_symbols().get(program) == ROLE_SECTIONS[role], f"{name}: {role} program {program}"
    for setting in variant.get("globals", {}):
        assert bpf_symbols().get(setting) == ".rodata", f"{name}: no setting {setting}"
    for prefix in variant.get("caller", {}):
        for setting in (f"{prefix}_lo", f"{prefix}_hi"):
            assert bpf_symbols().get(setting) == ".rodata", f"{name}: no setting {setting}"


def unbounded_library_hits(variant: dict) -> str | None:
    """Why a library variant's hits are not bounded by the event its probe measures, or None.
    Every caller in the process enters a library's function: the catalog must say why each
    hit is the event (`hits`), and a program that reads server globals to tell its hits apart
    traps for callers it then ignores."""
    if "library" not in variant:
        return None
    if not variant.get("hits"):
        return "says nothing of why each hit is an event it measures (`hits`)"
    if variant.get("globals"):
        return f"sifts its hits by the server's {', '.join(variant['globals'].values())}: probe the call site (`calls`)"
    return None


def test_default_probes_in_a_library_trap_only_the_event_they_measure():
    """Issue 44: free_page_wait on libc's pthread_cond_timedwait, sifted in BPF for
    &buf_pool.done_free, trapped every timed wait of every server thread (759-1,378 a second
    for a few waits), most of the default 1% budget. A default probe on a shared library's
    function must have every hit be its event; the rest are probed at their call site."""
    library = [(name, v) for name, entry in probes() if "default" in entry["sets"]
               for v in entry["variant"] if "library" in v]
    assert library, "no library variant in the default set: the rule checks nothing"
    for name, variant in library:
        why = unbounded_library_hits(variant)
        assert why is None, f"{name} ({variant['versions']}): {why}"
    # the rule refuses the variant issue 44 replaced
    assert unbounded_library_hits({"library": "libc", "symbols": ["pthread_cond_timedwait"],
                                   "globals": {"buf_pool_global": "buf_pool"}})


def test_call_site_variants_name_a_function_a_callee_and_a_first_argument_they_need():
    sites = [(name, entry, v) for name, entry, v in variants() if "calls" in v]
    assert sites, "no call-site variant: the rule checks nothing"
    for name, entry, variant in sites:
        assert variant.get("function") and "library" not in variant, name
        assert variant["calls"].isidentifier(), name
        global_name, member = variant["first_argument"]
        assert global_name.isidentifier(), name
        # a build without the member says it is missing, where a call is never guessed
        assert member in variant.get("needs", []), f"{name}: {member} not in needs"
        assert "entry" in variant.get("programs", entry["programs"]), name


def test_group_settings_and_bpftrace_companions_exist():
    names = dict(probes())
    fragments = {p.stem for p in (REPO / "probes" / "bpftrace").glob("*.bt")}
    for name, entry in probes():
        if "group_setting" in entry:
            assert bpf_symbols().get(entry["group_setting"]) == ".rodata", name
        for other in entry.get("bpftrace_with", {}).values():
            assert other in names, f"{name}: bpftrace_with names unknown probe {other}"
        used = [entry.get("bpftrace")] + [v.get("bpftrace") for v in entry["variant"]]
        assert {f for f in used if f} <= fragments, name


def test_tracepoints_name_programs_the_bpf_object_has():
    serving = {program for _, entry in probes() for variant in entry["variant"]
               for program in {**entry.get("programs", {}), **variant.get("programs", {})}.values()}
    for program, tp in discover.tracepoints().items():
        assert bpf_symbols().get(program, "").startswith("tp"), program
        assert tp["serves"] in serving, f"{program}: serves {tp['serves']}, which no probe attaches"
        if tp.get("group_setting"):
            assert tp["group"] and bpf_symbols().get(tp["group_setting"]) == ".rodata", program
        assert tp.get("only_with") in (None, "holders"), program


def test_code_checks_name_members_the_loader_reads():
    members = set(loader.schema().layout_members)
    for recipe in discover.catalog_file()["code"]:
        assert {recipe["member"], recipe["pointer"]} <= members, recipe
        assert recipe["global"].isidentifier() and recipe["functions"], recipe


def test_layouts_name_only_members_the_loader_reads():
    schema = loader.schema()
    assert bpf_symbols().get("layout") == ".rodata"
    for entry in discover.catalog_file()["layout"]:
        assert entry.get("latch_model", "none") in schema.latch_models
        assert set(entry["members"]) <= set(schema.layout_members), entry["versions"]
    for name, entry in discover.catalog().items():
        for variant in entry["variant"]:
            assert set(variant.get("needs", [])) <= set(schema.layout_members), name


def test_layout_ranges_do_not_overlap():
    """Two layouts for one build may not give the same member (or both a latch model): the
    first would win silently."""
    entries = discover.catalog_file()["layout"]
    for i, a in enumerate(entries):
        for b in entries[i + 1:]:
            shared = set(a["members"]) & set(b["members"])
            if "latch_model" in a and "latch_model" in b:
                shared.add("latch_model")
            if set(a["families"]) & set(b["families"]) and shared:
                low_a, high_a = (discover.parse_version(x) for x in a["versions"].split("-"))
                low_b, high_b = (discover.parse_version(x) for x in b["versions"].split("-"))
                assert high_a < low_b or high_b < low_a, (a["versions"], b["versions"], shared)


def test_latch_names_are_well_formed():
    """Every [[latch_names]] key is a naming rule the namer reads; members are [offset, size,
    name] within their global, arrays [global, pointer, count, element size, name]."""
    from dataclasses import fields
    from innostall.collector.server.latch_names import NamingRules
    rules = {f.name for f in fields(NamingRules)}
    for entry in discover.catalog_file()["latch_names"]:
        assert set(entry) - {"families", "versions"} <= rules, entry["versions"]
        assert all(discover.parse_version(v) for v in entry["versions"].split("-"))
        for symbol, members in entry.get("members", {}).items():
            assert all(isinstance(o, int) and s > 0 and isinstance(n, str) for o, s, n in members), symbol
        for array in entry.get("arrays", []):
            assert len(array) == 5 and isinstance(array[0], str) and isinstance(array[4], str), array


def test_latch_names_give_each_rule_once_per_build():
    """Entries whose ranges overlap merge (members and arrays add up), so a single-valued rule
    such as mutex_id must come from one of them only: else the later one silently wins."""
    entries = discover.catalog_file()["latch_names"]
    scalars = lambda e: set(e) - {"families", "versions", "members", "arrays"}
    for i, a in enumerate(entries):
        for b in entries[i + 1:]:
            lows = [discover.parse_version(e["versions"].split("-")[0]) for e in (a, b)]
            overlap = (discover.in_range(lows[0], b["versions"])
                       or discover.in_range(lows[1], a["versions"]))
            if overlap and set(a["families"]) & set(b["families"]):
                assert not scalars(a) & scalars(b), (a["versions"], b["versions"])


def test_schema_names_are_unique_and_format_1_is_a_subset():
    schema = loader.schema()
    for kind in ("counters", "hists"):
        names = [item["name"] for item in schema.raw[kind]]
        assert len(names) == len(set(names)), kind
        assert {i["name"] for i in format_1().raw[kind]} <= set(names), f"a {kind} name was renamed"
    assert all(c["kind"] in ("event", "count", "total", "max", "loss", "gauge") for c in schema.raw["counters"])
    assert schema.wait_modes[-1] == "other"  # sections/block_locks.py OTHER_LATCHES


def referenced_names(path: Path) -> set[str]:
    """Counter and histogram names a module reads: literal first arguments of
    counter_total(), hist(), hist_stats(), hist_unit() and per_interval()'s lists."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and node.args:
            func = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if func in ("counter_total", "hist", "hist_stats", "hist_unit", "log2_text",
                        "latency_summary", "per_interval", "interval_table"):
                for arg in node.args:
                    items = arg.elts if isinstance(arg, ast.List) else [arg]
                    names |= {i.value for i in items if isinstance(i, ast.Constant)
                              and isinstance(i.value, str)}
    return names


def test_python_readers_read_only_names_the_schema_has():
    schema = loader.schema()
    known = (set(schema.counters) | set(schema.hists) | {f"governor.{a}" for a in GOVERNOR_ACCOUNTS}
             | set(BANK_ACCOUNTS))
    for path in sorted((REPO / "analysis").glob("*.py")):
        unknown = referenced_names(path) - known
        assert not unknown, f"{path.name} reads {sorted(unknown)}, not in the schema"


def test_analysis_imports_nothing_from_the_collector():
    """The recording is the only interface between collector/ and analysis/."""
    for path in sorted((REPO / "analysis").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                module = ("." * node.level) + (node.module or "")
                assert "collector" not in module, f"{path.name} imports {module}"
            elif isinstance(node, ast.Import):
                assert not any("collector" in a.name for a in node.names), path.name


def test_loader_schema_matches_format_1_file_layout():
    """schema-v1.json is a loader's --schema output, in the same shape."""
    assert set(format_1().raw) <= set(json.loads(json.dumps(loader.schema().raw)))
