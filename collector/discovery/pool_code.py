"""The buffer pool's list lengths in the server's memory, where the build has no DWARF (every
MySQL build a DBA runs): their offsets in buf_pool_t, and the instances' stride, read from
the build's own machine code (Capstone), as log_code.py reads the redo log's. With them,
`record --no-sql` on a stripped MySQL still has the dirty, free and data pages.

MySQL keeps `buf_pool_t *buf_pool_ptr`, an array of srv_buf_pool_instances instances (both
exported in `.dynsym`); a list's length is its base node's `count`, one aligned word. Two
functions use the three lengths and nothing else like them, each decoded in its own way:

  summed    buf_get_total_list_len(ulint *LRU_len, ulint *free_len, ulint *flush_list_len):
            over the instances, each list's count added into its argument. The loop is
            followed twice from the pointer loaded out of buf_pool_ptr; what the second
            pass adds, less the first, is the stride (8.0.15 steps a pointer, 9.7.4 an
            index, and each offsets its loads differently: both read the same way here)
  copied    buf_stats_get_pool_info(buf_pool_t *, ulint, buf_pool_info_t *): each count
            stored into the info record, whose members lru_len, free_list_len and
            flush_list_len sit at 0x10, 0x20 and 0x28 (ulint members, unchanged 5.6-9.x)

A list's offset is derived when both agree, refused when they differ, unknown when one says
nothing (inlined, renamed or changed in shape): never a guess from the catalog."""
from __future__ import annotations

from dataclasses import dataclass

from .log_code import ARGUMENTS, MEM, WIDE, Codes, reg_of
from .machine_code import x86_decoder
from .target import Target

POOL_GLOBAL, INSTANCES_GLOBAL = "buf_pool_ptr", "srv_buf_pool_instances"
SUMMED, COPIED = "buf_get_total_list_len", "buf_stats_get_pool_info"
LISTS = ("LRU", "free", "flush_list")  # buf_get_total_list_len's arguments, in order
INFO_MEMBERS = {0x10: "LRU", 0x20: "free", 0x28: "flush_list"}  # buf_pool_info_t's
IMM, REG = 2, 1  # capstone.x86's X86_OP_IMM, X86_OP_REG
BRANCH = 7  # capstone's CS_GRP_BRANCH_RELATIVE


def wide(insn, reg: int) -> str:
    name = insn.reg_name(reg)
    return WIDE.get(name, name)


def summed(code: bytes, vaddr: int, pool_at: int) -> tuple[dict[str, int], int] | None:
    """buf_get_total_list_len's {list: offset} and stride, or None where its shape is not
    the summing loop. A register holds ("arg", n), ("const", c), ("global", address),
    ("pool", c) for c bytes into the first instance, or ("word", offset) for the word read
    there; any other write forgets it."""
    insns = list(x86_decoder().disasm(code, vaddr))
    back = next((i for i in insns if i.group(BRANCH) and i.operands and i.operands[0].type == IMM
                 and i.operands[0].imm < i.address), None)  # the loop's branch back to its head
    if back is None:
        return None
    head = back.operands[0].imm
    held = {r: ("arg", n) for n, r in enumerate(ARGUMENTS)}
    for insn in insns:
        if insn.address >= head:
            break
        step(insn, held, pool_at, {})
    passes = []
    for _ in range(2):
        added: dict[int, int] = {}
        for insn in insns:
            if head <= insn.address <= back.address:
                step(insn, held, pool_at, added)
        passes.append(added)
    first, second = passes
    strides = {second.get(n, 0) - offset for n, offset in first.items()}
    if set(first) != {0, 1, 2} or set(second) != {0, 1, 2} or len(strides) != 1 or min(strides) <= 0:
        return None
    return {LISTS[n]: offset for n, offset in first.items()}, strides.pop()


def step(insn, held: dict[str, tuple], pool_at: int, added: dict[int, int]) -> None:
    """One instruction of the summing loop (summed), what it adds into an argument's word
    noted in added {argument: offset read}."""
    ops, name = insn.operands, insn.mnemonic
    dest = reg_of(insn, 0) or None
    mem_op = next((op.mem for op in ops if op.type == MEM), None)
    base = wide(insn, mem_op.base) if mem_op and mem_op.base else None
    plain = mem_op is not None and not mem_op.index
    now = None
    if name == "lea" and dest and base == "rip":
        now = ("global", insn.address + insn.size + mem_op.disp)
    elif name == "lea" and dest and plain and held.get(base, ())[:1] == ("pool",):
        now = ("pool", held[base][1] + mem_op.disp)
    elif name == "mov" and dest and mem_op is not None and plain:
        source = held.get(base, ())
        if source == ("global", pool_at) and mem_op.disp == 0:
            now = ("pool", 0)
        elif source[:1] == ("pool",):
            now = ("word", source[1] + mem_op.disp)
    elif name == "mov" and dest and len(ops) == 2 and ops[1].type == REG:
        now = held.get(reg_of(insn, 1))
    elif name == "xor" and dest and reg_of(insn, 1) == dest:
        now = ("const", 0)
    elif name in ("add", "sub") and dest and len(ops) == 2:
        sign = 1 if name == "add" else -1
        value = held.get(dest, ())
        other = ("const", ops[1].imm) if ops[1].type == IMM else held.get(reg_of(insn, 1), ())
        if value[:1] in (("pool",), ("const",)) and other[:1] == ("const",):
            now = (value[0], value[1] + sign * other[1])
        elif value[:1] == ("const",) and other[:1] == ("pool",) and sign > 0:
            now = ("pool", value[1] + other[1])
    elif name == "add" and mem_op is not None and ops[0].type == MEM and plain and mem_op.disp == 0:
        into, value = held.get(base, ()), held.get(reg_of(insn, 1), ())
        if into[:1] == ("arg",) and value[:1] == ("word",):
            added[into[1]] = value[1]
    for reg in insn.regs_access()[1]:
        held.pop(wide(insn, reg), None)
    if now and dest:
        held[dest] = now


def copied(code: bytes, vaddr: int) -> dict[str, int]:
    """buf_stats_get_pool_info's {list: offset}: loads from the pool argument stored into the
    info record (a pointer computed from the third argument), up to the first call."""
    held = {r: ("arg", n) for n, r in enumerate(ARGUMENTS)}
    found: dict[str, int] = {}
    for insn in x86_decoder().disasm(code, vaddr):
        if insn.mnemonic == "call":
            break
        ops, name = insn.operands, insn.mnemonic
        dest = reg_of(insn, 0) or None
        mem_op = next((op.mem for op in ops if op.type == MEM), None)
        base = wide(insn, mem_op.base) if mem_op and mem_op.base else None
        now = None
        if name == "lea" and dest and held.get(base) == ("arg", 2):
            now = ("info",)  # &all_pool_info[pool_id]: the third argument plus an index
        elif name == "mov" and dest and len(ops) == 2 and ops[1].type == REG:
            now = held.get(reg_of(insn, 1))
        elif name == "mov" and dest and mem_op is not None and not mem_op.index and held.get(base) == ("arg", 0):
            now = ("field", mem_op.disp)
        elif name == "mov" and mem_op is not None and ops[0].type == MEM and held.get(base) == ("info",):
            value = held.get(reg_of(insn, 1), ())
            if value[:1] == ("field",) and mem_op.disp in INFO_MEMBERS:
                found.setdefault(INFO_MEMBERS[mem_op.disp], value[1])
        for reg in insn.regs_access()[1]:
            held.pop(wide(insn, reg), None)
        if now and dest:
            held[dest] = now
    return found


@dataclass(frozen=True)
class PoolLists:
    """The lists' offsets in buf_pool_t and the instances' stride, or why not (offsets empty)."""
    offsets: dict[str, int]
    stride: int | None
    said: str


def pool_lists(target: Target) -> PoolLists:
    """The three lists' offsets, from both functions or refused."""
    pool = target.find_objects([POOL_GLOBAL]).get(POOL_GLOBAL)
    if pool is None:
        return PoolLists({}, None, f"{POOL_GLOBAL} is not in the binary's symbols")
    codes = Codes(target)
    sums = [found for code, at in codes[SUMMED] if (found := summed(code, at, pool.vaddr))]
    copies = [found for code, at in codes[COPIED] if (found := copied(code, at))]
    if not sums or not copies:
        missing = " and ".join(f for f, got in ((SUMMED, sums), (COPIED, copies)) if not got)
        return PoolLists({}, None, f"no list lengths in {missing} (absent, inlined or changed in shape)")
    (offsets, stride), copy = sums[0], copies[0]
    if any(s != sums[0] for s in sums) or any(c != copy for c in copies) or copy != offsets:
        said = f"{SUMMED}: {show(offsets)}; {COPIED}: {show(copy)}"
        return PoolLists({}, None, f"refused: the code disagrees ({said})")
    return PoolLists(offsets, stride, f"from {SUMMED} and {COPIED}, stride {stride:#x}")


def show(offsets: dict[str, int]) -> str:
    return ", ".join(f"{name} {offset:#x}" for name, offset in sorted(offsets.items()))
