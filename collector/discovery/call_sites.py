"""A call inside a server function, found in the build's machine code: where a probe on a
shared callee would trap every caller in the process (libc's pthread_cond_timedwait, which
every timed wait of every server thread enters), a probe on the one call instruction that
makes the wait measured traps only that wait, and one on the instruction after it ends it.

A call site is taken only when the code confirms it, never guessed:
- its target is the callee: a PLT stub whose GOT slot the dynamic linker fills with the
  callee (the slot's relocation names it), a `call *slot(%rip)` through such a slot, or the
  callee's own symbol in a build linked with it;
- its first argument (rdi) holds the address asked for (a server global plus a member's
  offset) on every path from the function's entry to the call: a forward data flow over the
  function's control-flow graph (its `.cold` fragments included) that keeps, for each
  register, a constant address only where every path agrees on it. The forms followed are
  those compilers use to reach a global (`lea G(%rip)`, `mov $G`, then `lea D(%reg)`, `add
  $D`, `mov %reg`); a call clobbers the caller-saved registers; any other write forgets.
  A function with an indirect jump (a switch's table) has paths this cannot see and is
  refused, as is a call to the callee whose first argument cannot be followed: it could
  be a wait the probe would then miss without saying.

machine_code.py reads struct offsets back from the code in the same manner."""
from __future__ import annotations

from dataclasses import dataclass

from .elf import Symbol
from .machine_code import MAX_FUNCTION, x86_decoder
from .target import Target

CALLER_SAVED = {"rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11"}
LEGACY = {"a": "rax", "b": "rbx", "c": "rcx", "d": "rdx", "si": "rsi", "di": "rdi", "bp": "rbp", "sp": "rsp"}
PLT_SECTIONS = (".plt", ".plt.sec", ".plt.got")


@dataclass(frozen=True)
class CallSite:
    function: Symbol  # the copy of the function it is in
    call: int  # link-time address of the call instruction
    after: int  # the instruction after it: where the call has returned


class Unconfirmed(Exception):
    """The function is there, but the call the probe needs is not confirmed in its code."""


def full_register(name: str) -> str:
    """The 64-bit register a register name is part of (eax, ax, al -> rax; r14d -> r14)."""
    if name.startswith("r") and name[1:2].isdigit():
        return name.rstrip("dwb")
    core = name[1:] if name[0] in "re" and len(name) == 3 else name
    core = core[:-1] if core[-1] in "xlh" and core[:-1] in LEGACY else core
    return LEGACY.get(core, name)


def decode(target: Target, symbol: Symbol) -> list:
    decoder = x86_decoder()
    code = target.elf.read(symbol.vaddr, min(symbol.size, MAX_FUNCTION))
    insns = list(decoder.disasm(code, symbol.vaddr))
    if sum(i.size for i in insns) != len(code):
        raise Unconfirmed(f"{symbol.name}'s code is not decoded whole")
    return insns


def branch_target(insn) -> int | None:
    from capstone.x86 import X86_OP_IMM

    ops = insn.operands
    return ops[0].imm if len(ops) == 1 and ops[0].type == X86_OP_IMM else None


def memory_slot(insn) -> int | None:
    """The address a rip-relative memory operand reads (the GOT slot of `call *slot(%rip)`)."""
    from capstone.x86 import X86_OP_MEM, X86_REG_RIP

    mem = next((op.mem for op in insn.operands if op.type == X86_OP_MEM), None)
    if mem is None or mem.base != X86_REG_RIP or mem.index:
        return None
    return insn.address + insn.size + mem.disp


def reaches_callee(target: Target, insn, callee: set[int], callee_name: str) -> bool:
    """A call (or a tail jump) whose target is the callee, directly or through the PLT."""
    slots = target.elf.import_slots
    to = branch_target(insn)
    if to is None:
        slot = memory_slot(insn)
        return slot is not None and slots.get(slot) == callee_name
    if to in callee:
        return True
    if target.elf.section_of(to) not in PLT_SECTIONS:
        return False
    for stub in x86_decoder().disasm(target.elf.read(to, 16), to):  # endbr64, then (bnd) jmp *slot(%rip)
        if stub.mnemonic.split()[-1] == "jmp":
            return slots.get(memory_slot(stub)) == callee_name
    return False


def constant_after(insn, state: dict[str, int]) -> tuple[str, int] | None:
    """(register, the constant address it holds after insn) for the forms followed."""
    from capstone.x86 import X86_OP_IMM, X86_OP_MEM, X86_OP_REG

    ops = insn.operands
    if len(ops) != 2 or ops[0].type != X86_OP_REG:
        return None
    dest, src = full_register(insn.reg_name(ops[0].reg)), ops[1]
    if insn.mnemonic == "lea" and src.type == X86_OP_MEM and not src.mem.index:
        slot = memory_slot(insn)
        if slot is not None:
            return dest, slot
        base = full_register(insn.reg_name(src.mem.base)) if src.mem.base else None
        return (dest, state[base] + src.mem.disp) if base in state else None
    if insn.mnemonic == "mov" and src.type == X86_OP_IMM and ops[0].size in (4, 8):
        return dest, src.imm & ((1 << (8 * ops[0].size)) - 1)
    if insn.mnemonic == "mov" and src.type == X86_OP_REG and ops[0].size == 8:
        source = full_register(insn.reg_name(src.reg))
        return (dest, state[source]) if source in state else None
    if insn.mnemonic in ("add", "sub") and src.type == X86_OP_IMM and ops[0].size == 8 and dest in state:
        return dest, state[dest] + (src.imm if insn.mnemonic == "add" else -src.imm)
    return None


def step(insn, state: dict[str, int]) -> dict[str, int]:
    """The registers known to hold constant addresses after insn."""
    known = constant_after(insn, state)
    out = {r: v for r, v in state.items()
           if r not in {full_register(insn.reg_name(w)) for w in insn.regs_access()[1]}}
    if is_call(insn):
        out = {r: v for r, v in out.items() if r not in CALLER_SAVED}
    if known:
        out[known[0]] = known[1]
    return out


def is_call(insn) -> bool:
    from capstone import CS_GRP_CALL
    return insn.group(CS_GRP_CALL)


def successors(insn, inside) -> list[int]:
    """Where control goes after insn within the code decoded; a jump elsewhere (a tail call)
    and a return leave it. A call is taken to return: a call that never does only adds a
    path, which can make a register unknown, never known."""
    from capstone import CS_GRP_IRET, CS_GRP_JUMP, CS_GRP_RET

    if insn.group(CS_GRP_RET) or insn.group(CS_GRP_IRET) or insn.mnemonic in ("hlt", "ud2"):
        return []
    following = [insn.address + insn.size]
    if not insn.group(CS_GRP_JUMP):
        return following
    to = branch_target(insn)
    if insn.mnemonic.split()[-1] == "jmp":  # bnd jmp, notrack jmp: unconditional too
        if to is None:
            raise Unconfirmed("an indirect jump (a switch's table): not every path is followed")
        return [to] if inside(to) else []
    return following + ([to] if to is not None and inside(to) else [])


def register_states(insns: list, entry: int) -> dict[int, dict[str, int]]:
    """For each instruction, the registers holding the same constant on every path to it."""
    at = {i.address: i for i in insns}
    before: dict[int, dict[str, int]] = {entry: {}}
    work = [entry]
    while work:
        address = work.pop()
        insn = at[address]
        out = step(insn, before[address])
        for nxt in successors(insn, at.__contains__):
            if nxt not in at:
                continue  # past the end: the function ends there
            merged = out if nxt not in before else \
                {r: v for r, v in before[nxt].items() if out.get(r) == v}
            if nxt not in before or merged != before[nxt]:
                before[nxt] = merged
                work.append(nxt)
    return before


def find(target: Target, function: str, callee: str, first_argument: int) -> list[CallSite]:
    """Every call of `function` (each whole copy, with its .cold fragments) to `callee`
    whose first argument is first_argument; Unconfirmed says why there is none."""
    copies = [sym for sym, _ in target.find_function_copies(function)]
    if not copies:
        raise Unconfirmed(f"{function} is not in the binary's symbols")
    callee_at = {s.vaddr for s in target.find_functions([callee]).values()}
    cold = [s for s in copies if ".cold" in s.name]
    sites = []
    for copy in [s for s in copies if ".cold" not in s.name]:
        insns = decode(target, copy)
        reached = {branch_target(i) for i in insns} - {None}
        for fragment in cold:  # the fragment the hot part jumps to, and back from
            if fragment.vaddr in reached:
                insns += decode(target, fragment)
        states = register_states(insns, copy.vaddr)
        for insn in insns:
            if not is_call(insn) or insn.address not in states \
                    or not reaches_callee(target, insn, callee_at, callee):
                continue  # not a call to the callee, or never reached
            rdi = states[insn.address].get("rdi")
            if rdi is None:
                raise Unconfirmed(f"a call to {callee} in {function} at {insn.address:#x} whose first "
                                  "argument the code does not show")
            if rdi == first_argument:
                sites.append(CallSite(copy, insn.address, insn.address + insn.size))
    if not sites:
        raise Unconfirmed(f"no call to {callee} with that first argument in {function}'s code")
    return sites
