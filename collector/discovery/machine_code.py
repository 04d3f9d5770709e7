"""Struct offsets read back from the build's own machine code, for builds without DWARF
(Oracle's tarballs and Debian's packages keep `.dynsym` only): there the catalog's ranges
are all we have, and a vendor patch or a release outside the range that moved a member
would go unnoticed. A function the catalog names ([[code]] in catalog.toml) changes the
member atomically through a server global; the displacement of that access, decoded here
with Capstone, is the member's offset in this build. As the OpenTelemetry eBPF profiler
derives an interpreter's offsets from its accessors: the code is the build's own word.

A member is `agrees` when the function's atomic accesses through the global include the
claimed offset, `disagrees` when they hold others only, and unknown (left out) when the
function is absent or shows no such access (inlined, or changed in shape)."""
from __future__ import annotations

from dataclasses import dataclass

from .target import Target

MAX_FUNCTION = 64 * 1024  # bytes decoded per function: one function, not a whole subsystem


def x86_decoder():
    """Capstone for x86-64, with operands (call_sites.py decodes with it too)."""
    from capstone import CS_ARCH_X86, CS_MODE_64, Cs

    decoder = Cs(CS_ARCH_X86, CS_MODE_64)
    decoder.detail = True
    return decoder


@dataclass(frozen=True)
class Check:
    member: str
    claimed: int
    found: tuple[int, ...]  # the offsets the function's atomic accesses use
    function: str

    @property
    def agrees(self) -> bool:
        return self.claimed in self.found


def atomic_offsets(code: bytes, vaddr: int, global_at: int, global_size: int) -> set[tuple[str, int]]:
    """Where the code, loaded at vaddr, makes a locked read-modify-write (`lock add`,
    `lock xadd` ...) relative to a server global: ("object", D) for G+D itself, ("pointee",
    D) for D bytes into the object G points to. Registers are followed through the forms
    compilers use: `lea G(%rip)`, `mov G(%rip)` (the pointer), `mov (%reg)` of &G, `add $D`
    and `lea D(%reg)`; any other write forgets what a register held."""
    from capstone.x86 import (X86_OP_IMM, X86_OP_MEM, X86_OP_REG, X86_PREFIX_LOCK, X86_REG_RBP, X86_REG_RIP,
                              X86_REG_RSP)

    decoder = x86_decoder()
    held: dict[int, tuple[str, int]] = {}  # register -> ("object" | "pointee", offset it points at)
    spilled: dict[tuple[int, int], tuple[str, int]] = {}  # a stack slot (base, disp) -> the same
    found = set()
    for insn in decoder.disasm(code, vaddr):
        ops = insn.operands
        mem = next((op.mem for op in ops if op.type == X86_OP_MEM), None)
        rip_target = insn.address + insn.size + mem.disp if mem and mem.base == X86_REG_RIP else None
        in_global = rip_target is not None and global_at <= rip_target < global_at + max(global_size, 8)
        if insn.prefix[0] == X86_PREFIX_LOCK and mem and not mem.index:
            if mem.base in held:
                kind, offset = held[mem.base]
                found.add((kind, offset + mem.disp))
            elif in_global:
                found.add(("object", rip_target - global_at))
        slot = (mem.base, mem.disp) if mem and mem.base in (X86_REG_RBP, X86_REG_RSP) and not mem.index else None
        if slot and ops[0].type == X86_OP_MEM:  # a store to the stack: spilled, or overwritten
            source = ops[1].reg if len(ops) == 2 and ops[1].type == X86_OP_REG else None
            if insn.mnemonic == "mov" and source in held:
                spilled[slot] = held[source]
            else:
                spilled.pop(slot, None)
        dest = ops[0].reg if ops and ops[0].type == X86_OP_REG else None
        now = None  # what dest holds after this instruction, if we can tell
        if dest and insn.mnemonic == "lea" and in_global:
            now = ("object", rip_target - global_at)
        elif dest and insn.mnemonic == "lea" and mem and mem.base in held and not mem.index:
            now = (held[mem.base][0], held[mem.base][1] + mem.disp)
        elif dest and insn.mnemonic == "mov" and rip_target == global_at:
            now = ("pointee", 0)
        elif dest and insn.mnemonic == "mov" and mem and held.get(mem.base) == ("object", 0) \
                and not mem.disp and not mem.index:
            now = ("pointee", 0)
        elif dest and insn.mnemonic == "mov" and slot in spilled:
            now = spilled[slot]
        elif dest in held and insn.mnemonic == "add" and len(ops) == 2 and ops[1].type == X86_OP_IMM:
            now = (held[dest][0], held[dest][1] + ops[1].imm)
        for reg in insn.regs_access()[1]:
            held.pop(reg, None)
        if now:
            held[dest] = now
    return found


def check(target: Target, members: dict[str, int], recipes: list[dict]) -> list[Check]:
    """The catalog's members checked against the code, one Check per member a recipe
    could read back."""
    checks = []
    for recipe in recipes:
        member = recipe["member"]
        if member not in members:
            continue
        global_sym = target.find_objects([recipe["global"]]).get(recipe["global"])
        if not global_sym:
            continue
        for name in recipe["functions"]:
            copies = target.find_function_copies(name)
            kind = "pointee" if members.get(recipe["pointer"]) else "object"
            found = set()
            for symbol, _ in copies:
                code = target.elf.read(symbol.vaddr, min(symbol.size, MAX_FUNCTION))
                found |= {offset for k, offset in atomic_offsets(code, symbol.vaddr, global_sym.vaddr,
                                                                 global_sym.size) if k == kind}
            if found:
                checks.append(Check(member, members[member], tuple(sorted(found)), name))
                break
    return checks
