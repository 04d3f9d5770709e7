// SPDX-License-Identifier: GPL-2.0
/* Undo page reads, told apart by who caused them: a consistent read walking versions
 * (the walks map of mvcc.bpf.c), purge (a batch or a worker's task, of purge.bpf.c), or
 * another thread. Lookups of undo pages are counted; physical reads are counted and timed,
 * and those inside purge work are charged to its time (purge_*_io_ns).
 *
 * Why a return probe on the physical read is safe: buf_read_page reports failure as a
 * dberr_t/bool and has no throwing callee; an exception cannot leave it. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"

enum scope { SCOPE_WALK, SCOPE_PURGE, SCOPE_OTHER };

struct read_state {
	__u64 start_ns;
	__u64 window;
	__u32 scope;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* thread id */
	__type(value, struct read_state);
} page_reads SEC(".maps");

static __always_inline __u32 current_scope(void)
{
	__u32 tid = current_tid();
	struct walk *walk = bpf_map_lookup_elem(&walks, &tid);

	if (walk && window_unbroken(walk->window))
		return SCOPE_WALK;
	if (purge_span_of(tid))
		return SCOPE_PURGE;
	return SCOPE_OTHER;
}

/* A function that only ever looks up undo records (trx_undo_get_undo_rec_low). */
SEC("uprobe")
int BPF_KPROBE(undo_fetch_enter)
{
	count_hit(ctx);
	if (traced_process())
		counter_add(CNT_UNDO_FETCHES_WALK + current_scope(), 1);
	return 0;
}

/* A generic page lookup that fetches undo pages when called inside a version walk. */
SEC("uprobe")
int BPF_KPROBE(walk_page_get)
{
	count_hit(ctx);
	if (traced_process() && current_scope() == SCOPE_WALK)
		counter_add(CNT_UNDO_FETCHES_WALK, 1);
	return 0;
}

/* A page lookup that fetches undo pages when called by the purge coordinator's batch. */
SEC("uprobe")
int BPF_KPROBE(purge_page_get)
{
	count_hit(ctx);
	if (traced_process() && current_scope() == SCOPE_PURGE)
		counter_add(CNT_UNDO_FETCHES_PURGE, 1);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(page_read_enter)
{
	__u32 tid = current_tid();
	struct read_state state;

	count_hit(ctx);
	if (!traced_process())
		return 0;
	state.start_ns = bpf_ktime_get_ns();
	state.window = window_token(ctx);
	state.scope = current_scope();
	bpf_map_update_elem(&page_reads, &tid, &state, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(page_read_exit)
{
	__u32 tid = current_tid();
	struct read_state *state;
	__u64 ns;

	count_hit(ctx);
	state = bpf_map_lookup_elem(&page_reads, &tid);
	if (!state)
		return 0;
	if (span_cut(&page_reads, &tid, state->window))
		return 0;
	ns = bpf_ktime_get_ns() - state->start_ns;
	hist_add(HIST_PAGE_READ_US, ns / 1000);
	purge_charge(tid, true, ns);
	counter_add(CNT_PAGE_READS_WALK + state->scope, 1);
	bpf_map_delete_elem(&page_reads, &tid);
	return 0;
}
