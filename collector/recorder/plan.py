"""What to attach and what the loader is told: the attachments the resolved probes need (and
the scheduler tracepoints some of them serve), their sampling groups, the settings the BPF
programs read (server globals' addresses, group numbers, thresholds) and the build's struct
layout as the loader's arguments."""
from __future__ import annotations

from innostall.errors import UserError
from innostall.format.schema import Schema

from ..discovery import discover
from ..discovery.discover import ResolvedProbe
from ..discovery.target import Target

# walks this many versions deep, latch waits this many µs long, are kept with their stacks
DEFAULT_SETTINGS = {"deep_walk_threshold": 100, "latch_stack_threshold_us": 16}


def check_settings(settings: dict[str, int]) -> dict[str, int]:
    unknown = sorted(set(settings) - set(DEFAULT_SETTINGS))
    if unknown:
        raise UserError(f"unknown setting {unknown[0]}")
    if settings.get("deep_walk_threshold", 1) < 1:
        raise UserError("--deep-walk-threshold must be at least 1 (versions)")
    if settings.get("latch_stack_threshold_us", 0) < 0:
        raise UserError("--latch-stack-threshold must be 0 or more (µs)")
    return {**DEFAULT_SETTINGS, **settings}


def global_addresses(target: Target, probes: list[ResolvedProbe]) -> dict[str, int]:
    """Settings that receive the address of a server global some programs read, at its
    place in the running process (the catalog's `globals`), and the code range of a
    function whose calls some programs tell by their return address (`caller`)."""
    settings = {}
    for p in probes:
        for setting, symbol in p.global_settings.items() if p.ok else ():
            address = target.runtime_address(p.globals[symbol])
            if address:
                settings[setting] = address
        for prefix, function in p.caller_ranges.items() if p.ok else ():
            start = target.runtime_address(function.vaddr)
            if start:
                settings.update({f"{prefix}_lo": start, f"{prefix}_hi": start + function.size})
    return settings


def layout_args(layout: dict | None, schema: Schema) -> list[str]:
    """--layout MEMBER=VALUE arguments of the build's struct layout; the latch model goes
    by its number in the schema."""
    if not layout:
        return []
    members = {"latch_model": schema.latch_models.index(layout["latch_model"] or "none"),
               **layout["members"]}
    unknown = sorted(set(members) - set(schema.layout_members))
    if unknown:
        raise UserError(f"the catalog's layout names {unknown[0]}, which the loader does not read")
    return [f"{member}={int(value)}" for member, value in members.items()]


def plan_attachments(probes: list[ResolvedProbe], holders: bool) -> list[dict]:
    """One loader attachment per program and offset, in the loader's order: its spec, the
    probes it serves (sync_array_wait_event serves three on rw_lock servers, attached once)
    and its sampling group ("" = never sampled); then the tracepoints they need (without
    the wakeup tracepoint when the latch holders are not wanted)."""
    planned: dict[str, dict] = {}
    for p in probes:
        for spec in p.attach_args() if p.ok else []:
            planned.setdefault(spec, {"spec": spec, "probes": [], "group": p.group})["probes"].append(p.name)
    attachments = list(planned.values())
    return attachments + tracepoint_attachments(attachments, holders)


def tracepoint_attachments(attachments: list[dict], holders: bool) -> list[dict]:
    """The catalog's scheduler tracepoints whose served program is attached."""
    planned, options = [], {"holders": holders}
    for program, tp in discover.tracepoints().items():
        if tp.get("only_with") and not options[tp["only_with"]]:
            continue
        serving = next((a for a in attachments if a["spec"].split("=")[0] == tp["serves"]), None)
        if serving:
            planned.append({"spec": f"{program}=0", "probes": [tp["measures"]],
                            "group": tp["group"] or serving["group"], "tracepoint": True})
    return planned


def sampling_groups(attachments: list[dict], schema: Schema) -> list[str]:
    """Group names in loader numbering (1, 2, ...), in order of appearance; group 0 is the
    never-sampled one."""
    groups = list(dict.fromkeys(a["group"] for a in attachments if a["group"]))
    if len(groups) > schema.max_groups - 1:
        raise UserError(f"{len(groups)} sampling groups in the catalog; the loader takes "
                        f"{schema.max_groups - 1}")
    return groups


def loader_args(attachments: list[dict], groups: list[str]) -> list[str]:
    """--attach arguments: SPEC#N for sampled groups."""
    return [f"{a['spec']}#{groups.index(a['group']) + 1}" if a["group"] else a["spec"]
            for a in attachments]


def group_settings(probes: list[ResolvedProbe], groups: list[str]) -> dict[str, int]:
    """Settings told a group's number (the catalog's `group_setting`): e.g. the version
    walks must know when their steps were sampled (mvcc.bpf.c)."""
    settings = {p.group_setting: groups.index(p.group) + 1
                for p in probes if p.ok and p.group_setting and p.group in groups}
    for tp in discover.tracepoints().values():  # the purge spans must know when their sleeps were watched
        if tp.get("group_setting") and tp["group"] in groups:
            settings[tp["group_setting"]] = groups.index(tp["group"]) + 1
    return settings


def check_budget(budget_pct: float | None) -> float | None:
    if budget_pct is not None and not 0 < budget_pct <= 100:
        raise UserError("--budget must be a percentage above 0 and at most 100")
    return budget_pct
