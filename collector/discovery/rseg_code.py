"""Where a stripped MySQL 8.0+ keeps its rollback segments' sizes, read back from the build's
own machine code (Capstone), as pool_code.py and log_code.py read the pool's lists and the
redo log's: so that `record --no-sql` still has the undo logs' size in pages (the gauge
undo_pages), the figure INNODB_METRICS's trx_rseg_current_size gives.

The server computes that figure in srv_mon_get_rseg_size() (srv0mon.cc; static, so inlined
into the exported srv_mon_process_existing_counter in both fixtures): the temporary
tablespace's segments, a std::vector<trx_rseg_t *> inside `trx_sys_t *trx_sys`, then each
undo tablespace of `undo::Tablespaces *undo::spaces` (a vector of undo::Tablespace *), each
holding a pointer to its own vector of segments, up to the first whose id is not below
`srv_rollback_segments`; each segment's curr_size added up. All three globals are exported.

The function's code is followed as a data flow (flow()): every value a register or stack
slot holds is a path from a global, a load at an offset per step, and "[]" for any element
of the vector whose begin was loaded by the step before (a pointer that a loop steps by 8
from that begin, as the join of its first and later passes shows). What is added into a sum
then names the chain, and what is compared with what names each vector's end (its begin's
word + 8) and the id cut. The chain is derived when both of its roots, trx_sys and
undo::spaces, sum one member at one offset and width, and each vector's end is compared
where its loop ends: two readings of the member that must agree. Otherwise it is refused
(the code disagrees) or unknown (absent, or changed in shape): never a guess."""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from .log_code import Codes
from .machine_code import x86_decoder

TRX_SYS, SPACES, CUT = "trx_sys", "_ZN4undo6spacesE", "srv_rollback_segments"  # undo::spaces, mangled
FUNCTIONS = ("srv_mon_get_rseg_size", "srv_mon_process_existing_counter")  # out of line, or inlined in
ANY = "[]"  # a path step: each element of the vector begun at the step before
CALL_CLOBBERED = ("rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11")
REG, IMM, MEM = 1, 2, 3  # capstone.x86's operand types
BRANCH, JUMP, RET = 7, 1, 3  # capstone's CS_GRP_BRANCH_RELATIVE, CS_GRP_JUMP, CS_GRP_RET
FULL = {f"e{r}x": f"r{r}x" for r in "abcd"} | {"esi": "rsi", "edi": "rdi", "ebp": "rbp", "esp": "rsp"} \
    | {f"r{n}d": f"r{n}" for n in range(8, 16)}


class Sym(NamedTuple):
    """A value: the word at the end of path from the global at root (steps: an offset
    loaded from, or ANY), plus `plus` bytes (None: some multiple of 8, a vector's iterator)."""
    root: int
    steps: tuple
    plus: int | None
    width: int


def full(name: str) -> str | None:
    """A register's 64-bit name; None for the 8- and 16-bit ones, which hold no pointer."""
    return name if name.startswith("r") and not name.endswith(("w", "b")) else FULL.get(name)


def loaded(base: Sym | None, disp: int, width: int) -> Sym | None:
    """The word loaded at disp from the address base holds."""
    if base is None or base.width != 8:
        return None
    if base.plus is None:  # an iterator: its element (a vector of pointers is read at 0)
        return Sym(base.root, base.steps + (ANY,), 0, width) if disp == 0 else None
    return Sym(base.root, base.steps + (base.plus + disp,), 0, width)


def join_steps(a: tuple, b: tuple) -> tuple | None:
    """Two paths as one: equal, or loading elements k and j of a vector, or one of them any
    (a loop whose first pass is peeled off meets its later passes). A step so made that is
    no vector's element is refused after: each ANY must be a vector's whose end is compared
    (chain_in)."""
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b):
        if x == y:
            out.append(x)
        elif all(step == ANY or step % 8 == 0 for step in (x, y)):  # element k and k + 1, or any
            out.append(ANY)
        else:
            return None
    return tuple(out)


def join_value(a: Sym, b: Sym) -> Sym | None:
    steps = join_steps(a.steps, b.steps)
    if a.root != b.root or a.width != b.width or steps is None:
        return None
    if a.plus == b.plus:
        return a._replace(steps=steps)
    if None in (a.plus, b.plus) or (a.plus - b.plus) % 8 == 0:
        return a._replace(steps=steps, plus=None)
    return None


def join(a: dict | None, b: dict) -> dict:
    if a is None:
        return dict(b)
    return {k: v for k in a.keys() & b.keys() if (v := join_value(a[k], b[k])) is not None}


@dataclass
class Seen:
    sums: set  # Sym of each word added into a register
    compares: set  # frozenset({Sym, Sym}) of each cmp of two known values


def operand_value(insn, op, state: dict) -> Sym | None:
    if op.type == REG:
        return state.get(full(insn.reg_name(op.reg)) or "")
    if op.type == MEM and not op.mem.index:
        base = insn.reg_name(op.mem.base) if op.mem.base else None
        if base == "rip":
            return Sym(insn.address + insn.size + op.mem.disp, (0,), 0, op.size)
        if base in ("rbp", "rsp"):
            return state.get(f"{base}{op.mem.disp:+d}")
        return loaded(state.get(full(base or "") or ""), op.mem.disp, op.size)
    return None


def transfer(insn, state: dict, seen: Seen | None) -> None:
    """One instruction's effect on state ({register or stack slot: Sym}), noting sums and
    compares into seen."""
    ops, name = insn.operands, insn.mnemonic
    dest = full(insn.reg_name(ops[0].reg)) if ops and ops[0].type == REG else None
    now = None
    if name == "lea" and dest and not ops[1].mem.index:
        base = insn.reg_name(ops[1].mem.base) if ops[1].mem.base else None
        if base == "rip":
            now = Sym(insn.address + insn.size + ops[1].mem.disp, (), 0, 8)
        elif (held := state.get(full(base or "") or "")) and held.plus is not None:
            now = held._replace(plus=held.plus + ops[1].mem.disp)
    elif name == "mov" and len(ops) == 2 and dest:
        now = operand_value(insn, ops[1], state)
    elif name == "mov" and len(ops) == 2 and ops[0].type == MEM and not ops[0].mem.index \
            and insn.reg_name(ops[0].mem.base) in ("rbp", "rsp"):  # spilled, or overwritten
        slot = f"{insn.reg_name(ops[0].mem.base)}{ops[0].mem.disp:+d}"
        value = operand_value(insn, ops[1], state)
        state.pop(slot, None) if value is None else state.__setitem__(slot, value)
    elif name == "add" and dest and ops[1].type == IMM:
        held = state.get(dest)
        if held and held.plus is not None:
            now = held._replace(plus=held.plus + ops[1].imm)
        elif held and ops[1].imm % 8 == 0:  # an iterator's step: still one
            now = held
    elif name == "add" and dest and seen is not None:
        added = operand_value(insn, ops[1], state)
        if added and added.steps and added.plus == 0:
            seen.sums.add(added)
    elif name == "cmp" and len(ops) == 2 and seen is not None:
        a, b = operand_value(insn, ops[0], state), operand_value(insn, ops[1], state)
        if a and b:
            seen.compares.add(frozenset((a, b)))
    for reg in insn.regs_access()[1]:
        state.pop(full(insn.reg_name(reg)) or "", None)
    if name == "call":
        for reg in CALL_CLOBBERED:
            state.pop(reg, None)
    if now and dest:
        state[dest] = now


def flow(code: bytes, vaddr: int) -> Seen:
    """What the code sums and compares, its blocks' states joined to a fixed point (a block
    no branch of the code reaches, a switch's case, starts knowing nothing; the padding
    after a jump is never run, so brings nothing to the block it runs into)."""
    insns = list(x86_decoder().disasm(code, vaddr))
    at = {insn.address: n for n, insn in enumerate(insns)}
    leaders, successors = {vaddr}, {}
    for n, insn in enumerate(insns):
        target = insn.operands[0].imm if insn.group(BRANCH) and insn.operands and insn.operands[0].type == IMM else None
        ends = insn.group(BRANCH) or insn.group(JUMP) or insn.group(RET)
        if not ends or insn.mnemonic == "call":
            continue
        after = insns[n + 1].address if n + 1 < len(insns) else None
        unconditional = insn.mnemonic == "jmp" or insn.group(RET)
        successors[insn.address] = [a for a in (target, None if unconditional else after) if a in at]
        leaders.update(a for a in (target, after) if a in at)
    starts = sorted(leaders)
    blocks = {s: insns[at[s]:at[e] if e else None] for s, e in zip(starts, starts[1:] + [None])}
    for start, body in blocks.items():
        last = body[-1]
        if last.address not in successors:  # falls through into the next block
            nxt = last.address + last.size
            successors[last.address] = [nxt] if nxt in at else []
    reached = {a for outs in successors.values() for a in outs}
    padding = {s for s, body in blocks.items() if all(i.mnemonic in ("nop", "int3") for i in body)}
    states: dict[int, dict | None] = {s: ({} if s not in reached | padding else None) for s in blocks}
    work = list(starts)
    while work:
        start = work.pop(0)
        if states[start] is None:  # not reached yet: its predecessors' states will bring it back
            continue
        state = dict(states[start])
        for insn in blocks[start]:
            transfer(insn, state, None)
        for nxt in successors[blocks[start][-1].address]:
            joined = join(states[nxt], state)
            if joined != states[nxt]:
                states[nxt] = joined
                work.append(nxt)
    seen = Seen(set(), set())
    for start, body in blocks.items():
        state = dict(states[start] or {})
        for insn in body:
            transfer(insn, state, seen)
    return seen


@dataclass(frozen=True)
class RsegChain:
    """The offsets from trx_sys and undo::spaces to every rollback segment's curr_size, or
    why not (curr_size None)."""
    tmp_rsegs: int | None = None  # the temporary segments' vector in trx_sys_t (its begin)
    spaces: int | None = None  # the undo tablespaces' vector in undo::Tablespaces
    space_rsegs: int | None = None  # the Rsegs * in undo::Tablespace
    rsegs: int | None = None  # the vector in Rsegs
    curr_size: int | None = None
    width: int = 0
    segment_id: int | None = None  # id in trx_rseg_t, compared with srv_rollback_segments
    said: str = ""


def ends_compared(seen: Seen, root: int, prefix: tuple, begin: int) -> bool:
    """The vector whose begin is at prefix + (begin,) is walked to its end: its iterator or
    begin compared with the word 8 bytes on."""
    for pair in seen.compares:
        paths = {(s.root, s.steps) for s in pair}
        if {(root, prefix + (begin,)), (root, prefix + (begin + 8,))} <= paths:
            return True
    return False


def chain_in(seen: Seen, roots: dict[str, int]) -> RsegChain:
    tmp = {(s.steps[1], s.steps[3], s.width) for s in seen.sums if s.root == roots[TRX_SYS]
           and len(s.steps) == 4 and s.steps[0] == 0 and s.steps[2] == ANY}
    undo = {(s.steps[1], s.steps[3], s.steps[4], s.steps[6], s.width) for s in seen.sums
            if s.root == roots[SPACES] and len(s.steps) == 7 and s.steps[0] == 0 and s.steps[2] == ANY
            and s.steps[5] == ANY and ANY not in (s.steps[3], s.steps[4], s.steps[6])}
    if not tmp or not undo:
        lacking = " and ".join(n for n, got in (("trx_sys's temporary", tmp), ("undo::spaces's", undo)) if not got)
        return RsegChain(said=f"no sum over {lacking} segments (absent, or changed in shape)")
    if len(tmp) > 1 or len(undo) > 1 or {t[1:] for t in tmp} != {u[3:] for u in undo}:
        return RsegChain(said=f"refused: the code disagrees (temporary segments {sorted(tmp)}, "
                              f"undo tablespaces' {sorted(undo)})")
    (tmp_at, _, _), (spaces_at, rsegs_ptr, rsegs_at, curr, width) = tmp.pop(), undo.pop()
    ends = [ends_compared(seen, roots[TRX_SYS], (0,), tmp_at), ends_compared(seen, roots[SPACES], (0,), spaces_at),
            ends_compared(seen, roots[SPACES], (0, spaces_at, ANY, rsegs_ptr), rsegs_at)]
    if not all(ends):
        return RsegChain(said=f"refused: a vector's end is not where its begin says ({ends})")
    inner = (0, spaces_at, ANY, rsegs_ptr, rsegs_at, ANY)
    cuts = {s.steps[-1] for pair in seen.compares if Sym(roots[CUT], (0,), 0, 8) in pair
            for s in pair if s.root == roots[SPACES] and s.steps[:-1] == inner and s.width == 8}
    how = f"curr_size {curr:#x} ({width} bytes) in the sums over trx_sys and undo::spaces"
    if len(cuts) > 1:
        return RsegChain(said=f"refused: the segments' id compared at {sorted(cuts)}")
    cut = cuts.pop() if cuts else None
    return RsegChain(tmp_at, spaces_at, rsegs_ptr, rsegs_at, curr, width, cut,
                     how + (f", id {cut:#x} against {CUT}" if cut is not None else ", no id cut"))


def rseg_chain(target) -> RsegChain:
    """The chain from the build's code, with where it was found or why not."""
    found = target.find_objects([TRX_SYS, SPACES, CUT])
    if len(found) < 3:
        return RsegChain(said=f"{', '.join(n for n in (TRX_SYS, SPACES, CUT) if n not in found)} not in the symbols")
    roots = {name: sym.vaddr for name, sym in found.items()}
    codes = Codes(target)
    for function in FUNCTIONS:
        for code, vaddr in codes[function]:
            chain = chain_in(flow(code, vaddr), roots)
            if chain.curr_size is not None or chain.said.startswith("refused"):
                return RsegChain(**{**chain.__dict__, "said": f"from {function}: {chain.said}"})
    return RsegChain(said=f"no rollback segments' sum in {' or '.join(FUNCTIONS)} (absent, or changed in shape)")
