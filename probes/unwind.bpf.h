/* SPDX-License-Identifier: GPL-2.0 */
/* User stacks that reach the server's frames when the probe fires inside libc.
 *
 * The kernel walks user stacks by frame pointer: the instruction, then the return address
 * above each saved rbp. Debian builds glibc without frame pointers, so a probe inside libc
 * (a pthread mutex wait in __lll_lock_wait, a futex wake in pthread_mutex_unlock) gets its
 * first frame right and then jumps from the libc code straight to the caller of the server
 * function that called libc: that function, the one that names the mutex, is lost.
 *
 * libc's .eh_frame says, for each of its instructions, where the caller's frame begins
 * (the canonical frame address, CFA: rsp or rbp plus an offset) and where rbp was saved.
 * The recorder turns it into a table (collector/discovery/libc.py) the loader puts in `libc_cfi`;
 * here a few steps of the DWARF unwinder run over it: CFA = base + offset, the return
 * address is the word below the CFA, the caller's rsp is the CFA. Steps stop at the first
 * address outside libc, the server's frame. A step costs a binary search of the table
 * (16 lookups) and two reads of user memory; waits in libc need one or two. */
#ifndef __UNWIND_BPF_H
#define __UNWIND_BPF_H

#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"

SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CFI_ROWS);
	__type(key, __u32);
	__type(value, struct cfi_row);
} libc_cfi SEC(".maps");

/* Where the search starts: for each 4 KB page of libc (by link-time address), the row in
 * force at its first byte. The search then spans the rows that begin in the page, a few,
 * not the whole table. */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CFI_PAGES);
	__type(key, __u32);
	__type(value, __u32);
} libc_cfi_pages SEC(".maps");

/* Set by the loader: libc's text in the traced process, the distance from its link-time
 * addresses to where it is mapped, and the rows of libc_cfi in use (0: no unwinding). */
#ifdef INNOSTALL_DEFINE_SHARED
const volatile __u64 libc_text_lo = 0;
const volatile __u64 libc_text_hi = 0;
const volatile __u64 libc_bias = 0;
const volatile __u32 libc_cfi_rows = 0;
const volatile __u32 libc_cfi_page_count = 0;
#else
extern const volatile __u64 libc_text_lo;
extern const volatile __u64 libc_text_hi;
extern const volatile __u64 libc_bias;
extern const volatile __u32 libc_cfi_rows;
extern const volatile __u32 libc_cfi_page_count;
#endif

/* Keys too large for the BPF stack, which holds 512 bytes (struct unwound makes them so).
 * Per CPU: a uprobe program runs to its end on the CPU it started on. */
struct big_keys {
	struct stack_key stack;
	struct latch_stack_key by_stack;
	struct holder_key holder;
};

SHARED struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct big_keys);
} big_keys SEC(".maps");

static __always_inline struct big_keys *big_keys_here(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&big_keys, &zero);
}

#define CFI_SEARCH_STEPS 17 /* log2(MAX_CFI_ROWS) + 1 */

static __always_inline bool in_libc(__u64 pc)
{
	return pc >= libc_text_lo && pc < libc_text_hi;
}

struct cfi_search {
	__u32 lo, hi; /* the row in force is in [lo, hi) */
	__u32 pc;
};

/* One halving of the search. A bpf_loop callback: the verifier checks it once, where an
 * unrolled search would be checked along each of its 2^16 paths. */
static long cfi_search_step(__u32 i, void *ctx)
{
	struct cfi_search *s = ctx;
	__u32 mid = (s->lo + s->hi) / 2;
	struct cfi_row *row;

	if (s->lo + 1 >= s->hi)
		return 1;
	row = bpf_map_lookup_elem(&libc_cfi, &mid);
	if (!row)
		return 1;
	if (row->pc <= s->pc)
		s->lo = mid;
	else
		s->hi = mid;
	return 0;
}

/* The row in force at pc: the last one starting at or before it. */
static __always_inline struct cfi_row *cfi_row_at(__u64 pc)
{
	struct cfi_search s = { .lo = 0, .hi = libc_cfi_rows, .pc = pc };
	__u32 page = pc >> CFI_PAGE_SHIFT, next = page + 1, *first, *after;
	struct cfi_row *row;

	if (next < libc_cfi_page_count) {
		first = bpf_map_lookup_elem(&libc_cfi_pages, &page);
		after = bpf_map_lookup_elem(&libc_cfi_pages, &next);
		if (first && after && *first <= *after && *after < libc_cfi_rows) {
			s.lo = *first;
			s.hi = *after + 1; /* the row in force at the next page may begin in this one */
		}
	}
	bpf_loop(CFI_SEARCH_STEPS, cfi_search_step, &s, 0);
	row = bpf_map_lookup_elem(&libc_cfi, &s.lo);
	return row && row->pc <= pc ? row : NULL;
}

/* The frame-pointer walk the kernel could not do, from the server frame's rbp: each frame
 * holds the caller's rbp and, above it, the return address. */
static __always_inline void walk_frame_pointers(__u64 bp, struct unwound *out)
{
	__u64 frame[2]; /* saved rbp, return address */
	__u32 i, step;

	for (step = 0; step < UNWOUND_FRAMES; step++) {
		i = out->nr;
		if (i >= UNWOUND_FRAMES || !bp ||
		    bpf_probe_read_user(frame, sizeof(frame), (void *)bp) || !frame[1])
			return;
		barrier_var(i); /* the verifier wants a bounded index, not a strength-reduced pointer */
		out->pc[i & (UNWOUND_FRAMES - 1)] = frame[1];
		out->nr = i + 1;
		if (frame[0] <= bp) /* the stack grows down: callers' frames lie above */
			return;
		bp = frame[0];
	}
}

/* From the registers at a probe inside libc, the return addresses up to and including the
 * first one outside libc. Nothing when ip is not in libc (the kernel's walk is right). */
static __always_inline void unwind_libc(__u64 ip, __u64 sp, __u64 bp, struct unwound *out)
{
	__u64 start_bp = bp, cfa, ret;
	struct cfi_row *row;
	int i;

	if (!libc_cfi_rows || !in_libc(ip))
		return;
	for (i = 0; i < LIBC_DEPTH; i++) {
		row = cfi_row_at(ip - libc_bias);
		if (!row || row->cfa_base == CFA_UNKNOWN)
			break;
		cfa = (row->cfa_base == CFA_RSP ? sp : bp) + row->cfa_offset;
		if (row->rbp_offset &&
		    bpf_probe_read_user(&bp, sizeof(bp), (void *)(cfa + row->rbp_offset)))
			break;
		if (bpf_probe_read_user(&ret, sizeof(ret), (void *)(cfa - 8)) || !ret)
			break;
		out->pc[i] = ret;
		out->nr = i + 1;
		sp = cfa;
		ip = ret;
		if (!in_libc(ret)) {
			/* The kernel's walk from the probe's rbp holds only if it is the
			 * server frame's rbp. */
			out->fp_lost = bp != start_bp;
			counter_add(CNT_UNWIND_STEPS, i + 1);
			if (out->fp_lost)
				walk_frame_pointers(bp, out);
			return;
		}
	}
	/* Lost inside libc: the kernel's walk alone is printed. */
	out->nr = 0;
	counter_add(CNT_UNWIND_FAILS, 1);
}

/* The user stack of the current thread at a uprobe: the kernel's frame-pointer walk, and
 * the libc frames it skips. */
static __always_inline void user_stack_at(struct pt_regs *regs, struct stack_key *key)
{
	__u64 start = bpf_ktime_get_ns();

	key->stack_id = bpf_get_stackid(regs, &stack_traces, BPF_F_USER_STACK);
	unwind_libc(PT_REGS_IP(regs), PT_REGS_SP(regs), PT_REGS_FP(regs), &key->libc);
	counter_add(CNT_LATCH_EXTRA_NS, bpf_ktime_get_ns() - start);
}

#endif /* __UNWIND_BPF_H */
