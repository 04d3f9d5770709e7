"""Signals from the server's own state that open sampled groups at once (the loader's
state_signals.c reads them ten times a second; never written): where each lives in this
build, from its DWARF, and which of the recording's sampling groups explain it. A count
moves when it grows in a read by more than 3 times its calm growth and by its floor, a level when its mean
over about half a second is a wait in progress at every read and 3 times its calm level: a
steady load has row-lock waits of its own (state_signals.c).

  row_lock_waits   row-lock waits in progress (MariaDB 10.6+: lock_sys.wait_count, whose
                   low bits below lock_sys_t::WAIT_COUNT_STEP count the waits pending):
                   a replica's applier stalled on rows; opens the applier's group and the
                   latch waits'
  row_lock_waits_begun  the same word's count above the step, the waits begun
                   (Innodb_row_lock_waits): hot rows, whose waits last a few ms each and are
                   seldom in progress at a read; opens the same groups
  free_page_waits  waits for a free page counted (buf_pool.stat.LRU_waits, what
                   Innodb_buffer_pool_wait_free reports): the page cleaners behind; opens
                   the latch waits' (writers wait on pages being written) and page reads'
  log_room_waits   waits for room in the redo log counted (log_sys.waits, Innodb_log_waits):
                   opens the redo writers' group and the latch waits'
  history          the history list above its level a second before at each read for 3 s
                   (the gauge collector/server/state.py reads): purge is not keeping up;
                   opens purge's record, sleep and worker groups
  replica_behind   not read from memory but fed to the loader by the recorder, which reads
                   the replica's lag over SQL (collector/server/replica_lag.py): 1 while the
                   lag is above 0 and climbed since it was last 0; opens the applier's group.
                   Any build, DWARF or not, where innostall can log in and the server replicates

A build without DWARF (every MySQL build Oracle ships) has the history alone, on MySQL 8.0+,
through trx_sys at the offset its code confirms (state.history_place), and the recording
names the others missing; so does a build whose DWARF lacks the member (older releases keep
the counters in sharded srv_stats slots this does not read)."""
from __future__ import annotations

from dataclasses import dataclass

from ..discovery import layouts
from .latch_names import ServerMemory
from .state import Place, history_place, places_of


@dataclass(frozen=True)
class Signal:
    name: str
    kind: str  # level (moves while above 0), count (moves when it grows), climb (grows read after read)
    groups: tuple[str, ...]  # the catalog's sampling groups that explain it
    floor: int = 0  # the least growth in a read (a tenth of a second), or level, that moves it


# Row-lock waits begun move at 5 in a read, 50 a second, and at 3 times their calm rate:
# hot rows under 16 threads began 1,360 a second; the demo's updates, a few to 14 a second,
# and at one in a read each moved a signal whose calm was learnt from reads of none.
SIGNALS = (
    Signal("row_lock_waits", "level", ("applier", "latch")),
    Signal("row_lock_waits_begun", "count", ("applier", "latch"), floor=5),
    Signal("free_page_waits", "count", ("latch", "undo_read")),
    Signal("log_room_waits", "count", ("redo", "latch")),
    Signal("history", "climb", ("purge_record", "purge_sleeps", "purge_worker")),
    Signal("replica_behind", "on", ("applier",)),
)
FED = {"replica_behind"}  # fed on the loader's standard input, from SQL (state_signals.h)
NO_DWARF = "the build has no DWARF (its debug file would give it)"
NOT_FED = "the replica's lag is not read over SQL in this recording (no login, --no-sql, or no replica)"


@dataclass(frozen=True)
class Word:
    """count words of size bytes, stride apart, from address, added up (then modulo, or
    divided by divisor, where not 0)."""
    address: int
    size: int
    count: int = 1
    stride: int = 0
    modulo: int = 0
    divisor: int = 0


def member_word(found: dict, bias: int, path: str) -> Word | None:
    """A member of a global object (not through a pointer), as a word."""
    hit, root = found.get("paths", {}).get(path), found.get("globals", {}).get(path.split(".")[0])
    if not hit or not root or not root.get("address") or hit.get("via_pointer") or root.get("pointer"):
        return None
    return Word(root["address"] + bias + hit["offset"], hit["size"]) if hit["size"] in (4, 8) else None


def history_word(found: dict, bias: int) -> Word | None:
    """The history gauge's place where the loader can read it as words: one total, or a
    member of every rollback segment in an array inside trx_sys (not through pointers)."""
    place = places_of(found, bias).get("history")
    if not isinstance(place, Place) or place.via_pointer or place.count_at or place.member_offset is not None:
        return None
    return Word(place.address + place.offset, place.size, place.count, place.stride) if place.size in (4, 8) else None


def words_of(found: dict, bias: int) -> dict[str, Word | None]:
    step = found.get("constants", {}).get("lock_sys_t::WAIT_COUNT_STEP", {}).get("value")
    waits = member_word(found, bias, "lock_sys.wait_count")
    return {"row_lock_waits": Word(waits.address, waits.size, modulo=step) if waits and step else None,
            "row_lock_waits_begun": Word(waits.address, waits.size, divisor=step) if waits and step else None,
            "free_page_waits": member_word(found, bias, "buf_pool.stat.LRU_waits"),
            "log_room_waits": member_word(found, bias, "log_sys.waits"),
            "history": history_word(found, bias)}


def code_words(target) -> dict[str, Word]:
    """A build without DWARF: the history, through trx_sys at the offset the build's code
    confirmed (state.history_place). trx_sys points to an object the server allocates once
    at its start, so the pointer is read here once and the loader reads the word itself."""
    bias = target.runtime_address(0) if target.pid and target.elf else None
    place = history_place(target, bias)[0].get("history") if bias is not None else None
    if place is None:
        return {}
    memory = ServerMemory(target.pid)
    try:
        base = memory.u64(place.address) if place.via_pointer else place.address
    finally:
        memory.close()
    return {"history": Word(base + place.offset, place.size)} if base else {}


def fed_spec(signal: Signal, numbers: list[int]) -> str:
    return f"{signal.name}={signal.kind}:stdin:8:1:0:0:0:{signal.floor}:{','.join(map(str, numbers))}"


def signal_plan(target, groups: list[str], fed: bool = False) -> tuple[list[str], dict]:
    """The loader's --signal arguments for a running target whose sampling groups are
    groups (numbered from 1), and what meta.json says of them: {"read": [{name, kind,
    groups}], "missing": {name: why}}. fed: whether the recorder feeds the FED signals."""
    found = layouts.answer(target.elf, target.debug) if target.pid and target.elf else None
    bias = target.runtime_address(0) if found else None
    words = words_of(found, bias) if found and bias is not None else {}
    if found is None and target.family in ("mysql", "percona") and target.version_tuple() >= (8, 0):
        words = code_words(target)
    args, read, missing = [], [], {}
    for signal in SIGNALS:
        word, numbers = words.get(signal.name), [groups.index(g) + 1 for g in signal.groups if g in groups]
        if signal.name in FED and fed and numbers:
            args += ["--signal", fed_spec(signal, numbers)]
            read.append({"name": signal.name, "kind": signal.kind, "fed": True,
                         "groups": [g for g in signal.groups if g in groups]})
            continue
        if signal.name in FED:  # not fed: said only where its groups are (a replica's), not of a primary
            if numbers:
                missing[signal.name] = NOT_FED
        elif word is None:
            missing[signal.name] = NO_DWARF if found is None else "its place is not in the build's DWARF"
        elif not numbers:
            missing[signal.name] = "none of the groups it opens is sampled in this recording"
        else:
            args += ["--signal", f"{signal.name}={signal.kind}:{word.address:#x}:{word.size}:{word.count}:"
                                 f"{word.stride}:{word.modulo}:{word.divisor}:{signal.floor}:"
                                 f"{','.join(map(str, numbers))}"]
            read.append({"name": signal.name, "kind": signal.kind,
                         "groups": [g for g in signal.groups if g in groups]})
    return args, {"read": read, "missing": missing}
