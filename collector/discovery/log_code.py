"""The redo log's LSN and last checkpoint in the server's memory, where the build has no
DWARF (every MySQL build a DBA runs): their offsets in log_t read from the build's own
machine code (Capstone), as machine_code.py reads the history's, so that `record --no-sql`
on a stripped MySQL 8.0+ still has the redo written and the checkpoint age.

MySQL 8.0+ keeps `log_t *log_sys` (exported in `.dynsym`). Its LSN is not stored as such:
`log_t::sn` counts the data bytes of the log blocks, and the LSN is that count framed in
512-byte blocks with a 12-byte header and a 4-byte trailer (log_translate_sn_to_lsn). From
8.0.30 the top bit of `sn` is a lock (SN_LOCKED) while the log buffer is x-latched, and the
count is then in `sn_locked`. Each member comes from functions that can only be doing the
one thing with it, each shape decoded exactly (catalog.toml's [[state_code]]):

  fetch_add   log_buffer_reserve(log, len): `lock xadd` of the length argument into the
              log argument (sn.fetch_add(len)), whichever argument register each arrives in
              (8.0.15 returns its handle through a hidden first argument)
  lsn_read    log_get_lsn(const log_t&): loads of the argument only; the first is `sn`,
              a second, read when the first is negative, is `sn_locked`
  store_arg   log_files_write_checkpoint(log, lsn) and 8.0.30+'s log_files_next_checkpoint:
              the sequentially consistent store of the LSN argument into the log argument
              (`xchg`, or `mov` then `mfence`) that last_checkpoint_lsn.store(lsn) compiles to
  getter      Log_checkpoint_consumer::get_consumed_lsn() const: the load it returns, through
              the log_t& its constructor stored in the object

A member is derived when the functions that show its shape agree on one offset; where they
disagree, or one shows two, it is refused (left out, with both said); where none shows it,
unknown. Never a catalog guess: a release whose code changed shape reads nothing from memory
and says why, and the SQL route (collector/server/sql_state.py) stays."""
from __future__ import annotations

from dataclasses import dataclass, field

from .machine_code import MAX_FUNCTION, x86_decoder
from .target import Target

LOG_GLOBAL = "log_sys"
ARGUMENTS = ("rdi", "rsi", "rdx", "rcx", "r8", "r9")  # the System V integer argument registers
CALL_CLOBBERED = ("rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11")
# The redo log's blocks (log0constants.h, unchanged from 8.0 to 9.x): what sn counts is their data
LOG_BLOCK_SIZE, LOG_BLOCK_HDR_SIZE, LOG_BLOCK_TRL_SIZE = 512, 12, 4
LOG_BLOCK_DATA_SIZE = LOG_BLOCK_SIZE - LOG_BLOCK_HDR_SIZE - LOG_BLOCK_TRL_SIZE
SN_LOCKED = 1 << 63


def sn_to_lsn(sn: int) -> int:
    """log_translate_sn_to_lsn: the data bytes framed in blocks."""
    return sn // LOG_BLOCK_DATA_SIZE * LOG_BLOCK_SIZE + sn % LOG_BLOCK_DATA_SIZE + LOG_BLOCK_HDR_SIZE


@dataclass
class Flow:
    """What each register and stack slot holds, as far as straight-line code tells:
    ("arg", n, offset) for argument n plus offset, ("field", n, m) for the word loaded from
    argument n at m. Any other write forgets; a call forgets what it may clobber."""
    held: dict[str, tuple] = field(default_factory=lambda: {r: ("arg", i, 0) for i, r in enumerate(ARGUMENTS)})
    slots: dict[tuple[str, int], tuple] = field(default_factory=dict)


WIDE = {"eax": "rax", "ecx": "rcx", "edx": "rdx", "esi": "rsi", "edi": "rdi", "r8d": "r8", "r9d": "r9"}
MEM = 3  # capstone.x86.X86_OP_MEM, X86_OP_REG is 1


def reg_of(insn, index: int) -> str:
    """Operand index's register by its 64-bit name ('' if it is none): a 32-bit move of an
    argument zero-extends it, which is the same value for what is tracked here."""
    ops = insn.operands
    text = insn.reg_name(ops[index].reg) if index < len(ops) and ops[index].type == 1 else None
    return WIDE.get(text or "", text or "")


def walk(code: bytes, vaddr: int):
    """(instruction, its memory operand's (base, disp) or None, Flow before it) for each
    instruction of a function's code, the flow updated after each."""
    decoder, flow = x86_decoder(), Flow()
    for insn in decoder.disasm(code, vaddr):
        ops = insn.operands
        mem_op = next((op.mem for op in ops if op.type == MEM), None)
        mem = (WIDE.get(insn.reg_name(mem_op.base), insn.reg_name(mem_op.base)), mem_op.disp) \
            if mem_op and mem_op.base and not mem_op.index else None
        yield insn, mem, flow
        dest, source = reg_of(insn, 0) or None, reg_of(insn, 1) if len(ops) == 2 else None
        now = None
        if insn.mnemonic == "mov" and dest and source in flow.held:
            now = flow.held[source]
        elif insn.mnemonic == "mov" and dest and mem and mem in flow.slots:
            now = flow.slots[mem]
        elif insn.mnemonic == "mov" and dest and mem and flow.held.get(mem[0], ())[:1] == ("arg",):
            _, n, offset = flow.held[mem[0]]
            now = ("field", n, offset + mem[1])
        elif insn.mnemonic == "lea" and dest and mem and flow.held.get(mem[0], ())[:1] == ("arg",):
            _, n, offset = flow.held[mem[0]]
            now = ("arg", n, offset + mem[1])
        if mem and ops and ops[0].type == MEM and mem[0] in ("rbp", "rsp"):  # a store to the stack
            if insn.mnemonic == "mov" and source in flow.held:
                flow.slots[mem] = flow.held[source]
            else:
                flow.slots.pop(mem, None)
        for reg in insn.regs_access()[1]:
            written = insn.reg_name(reg)
            flow.held.pop(WIDE.get(written, written), None)
        if insn.mnemonic == "call":
            for reg in CALL_CLOBBERED:
                flow.held.pop(reg, None)
        if now and dest:
            flow.held[dest] = now


def fetch_add(code: bytes, vaddr: int) -> set[int]:
    """Offsets D where `lock xadd LEN, D(LOG)` adds one argument into another."""
    from capstone.x86 import X86_PREFIX_LOCK

    found = set()
    for insn, mem, flow in walk(code, vaddr):
        if insn.mnemonic.split()[-1] != "xadd" or insn.prefix[0] != X86_PREFIX_LOCK or not mem:
            continue
        base, added = flow.held.get(mem[0], ()), flow.held.get(reg_of(insn, 1), ())
        if base[:1] == ("arg",) and added[:1] == ("arg",) and added[2] == 0 and base[1] != added[1]:
            found.add(base[2] + mem[1])
    return found


def store_arg(code: bytes, vaddr: int) -> set[int]:
    """Offsets D of a sequentially consistent store of argument 1 (the LSN) into argument 0
    (the log): `xchg LSN, D(LOG)`, or `mov LSN, D(LOG)` with `mfence` next."""
    found, pending = set(), None
    for insn, mem, flow in walk(code, vaddr):
        if pending is not None and insn.mnemonic == "mfence":
            found.add(pending)
        pending = None
        if insn.mnemonic not in ("xchg", "mov") or not mem or len(insn.operands) != 2:
            continue
        value = flow.held.get(reg_of(insn, 1) or reg_of(insn, 0), ())  # xchg may name either first
        base = flow.held.get(mem[0], ())
        if not (value == ("arg", 1, 0) and base[:2] == ("arg", 0)):
            continue
        if insn.mnemonic == "xchg":
            found.add(base[2] + mem[1])
        elif insn.operands[0].type == MEM:  # a store, fenced by the next instruction
            pending = base[2] + mem[1]
    return found


def argument_loads(code: bytes, vaddr: int) -> list[int]:
    """log_get_lsn's loads from its argument, in order (the first is sn); empty unless every
    load of the function is of its argument."""
    loads = []
    for insn, mem, flow in walk(code, vaddr):
        if insn.mnemonic == "mov" and mem and insn.operands[1].type == MEM:
            base = flow.held.get(mem[0], ())
            if base[:2] != ("arg", 0):
                return []
            loads.append(base[2] + mem[1])
    return loads


def getter(ctor: bytes, ctor_at: int, code: bytes, vaddr: int) -> set[int]:
    """Offset D where the getter returns the word at D of the object whose reference the
    constructor stored from its argument 1 into its object at M (`mov ARG1, M(this)`)."""
    stored = set()
    for insn, mem, flow in walk(ctor, ctor_at):
        if insn.mnemonic == "mov" and mem and insn.operands[0].type == MEM:
            value, base = flow.held.get(reg_of(insn, 1), ()), flow.held.get(mem[0], ())
            if value == ("arg", 1, 0) and base[:2] == ("arg", 0):
                stored.add(base[2] + mem[1])
    found = set()
    for insn, mem, flow in walk(code, vaddr):
        if insn.mnemonic == "mov" and mem and insn.operands[1].type == MEM and reg_of(insn, 0) == "rax":
            base = flow.held.get(mem[0], ())
            if base[:2] == ("field", 0) and base[2] in stored:
                found.add(mem[1])
        if insn.mnemonic == "ret":
            break
    return found


@dataclass(frozen=True)
class Derived:
    """A member's offset as the build's code gives it, or why not."""
    member: str
    offset: int | None
    said: str  # 'from log_buffer_reserve and log_get_lsn', or why refused/unknown


class Codes(dict):
    """Each function's code, by qualified name, looked up once (a lookup scans the symbol
    table's strings: 0.1 s on MySQL's 30 MB of exports)."""

    def __init__(self, target: Target):
        super().__init__()
        self.target = target

    def __missing__(self, qualified: str) -> list[tuple[bytes, int]]:
        found = [(self.target.elf.read(sym.vaddr, min(sym.size, MAX_FUNCTION)), sym.vaddr)
                 for sym, _ in self.target.find_function_copies(qualified) if sym.size]
        self[qualified] = found
        return found


def derive(codes: Codes, recipe: dict) -> Derived:
    """One member from the functions of its recipe (catalog.toml's [[state_code]])."""
    seen: dict[str, set[int]] = {}
    for function in recipe["functions"]:
        for code, vaddr in codes[function]:
            if recipe["shape"] == "fetch_add":
                found = fetch_add(code, vaddr)
            elif recipe["shape"] == "store_arg":
                found = store_arg(code, vaddr)
            elif recipe["shape"] == "lsn_read":
                loads = argument_loads(code, vaddr)
                found = {loads[recipe.get("load", 0)]} if len(loads) > recipe.get("load", 0) else set()
            else:  # getter: the constructor named beside it
                ctors = codes[recipe["constructor"]]
                found = set().union(*(getter(c, at, code, vaddr) for c, at in ctors)) if ctors else set()
            if found:
                seen.setdefault(function, set()).update(found)
    offsets = set().union(*seen.values()) if seen else set()
    if not offsets:
        return Derived(recipe["member"], None, f"no function of {', '.join(recipe['functions'])} shows it")
    if len(offsets) > 1:
        said = "; ".join(f"{f}: {', '.join(map(hex, sorted(o)))}" for f, o in seen.items())
        return Derived(recipe["member"], None, f"refused: the code disagrees ({said})")
    return Derived(recipe["member"], offsets.pop(), "from " + " and ".join(seen))


def log_members(target: Target, recipes: list[dict]) -> dict[str, Derived]:
    """{member: Derived}, each member merged over its recipes (two recipes of one member that
    give different offsets refuse it)."""
    merged: dict[str, Derived] = {}
    codes = Codes(target)
    for recipe in recipes:
        got = derive(codes, recipe)
        before = merged.get(got.member)
        if before is None or before.offset is None and got.offset is not None and "refused" not in before.said:
            merged[got.member] = got
        elif got.offset is not None and before.offset is not None and got.offset != before.offset:
            merged[got.member] = Derived(got.member, None, f"refused: {before.offset:#x} {before.said}, "
                                                           f"{got.offset:#x} {got.said}")
        elif got.offset is not None and before.offset == got.offset:
            merged[got.member] = Derived(got.member, got.offset, f"{before.said} and {got.said.removeprefix('from ')}")
    return merged
