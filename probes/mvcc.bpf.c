// SPDX-License-Identifier: GPL-2.0
/* MVCC version-chain walks. A consistent read that meets a clustered-index record its read
 * view cannot see calls row_vers_build_for_consistent_read() once for that row. The
 * function loops: each trx_undo_prev_version_build() call builds one older version from
 * one undo record, until the view sees a version (or the row did not exist for it).
 * Depth of one walk = the step calls made on the same thread between entry to and return
 * from the walk (one call site, inside that loop, in every family).
 *
 * Steps made outside a walk come from purge, implicit-lock checks, semi-consistent reads,
 * online DDL and CHECK TABLE. They are counted apart (version_steps_outside) so that they
 * never inflate the depth of consistent reads.
 *
 * Cost: the step probe fires once per version built, and each hit traps (about 1.5 us
 * here, measured on a 2000-version walk: 0.6 ms unprobed, 3.6 ms probed). The walk
 * latency we report includes that cost, so deep walks look slower than they are.
 *
 * When the cost governor samples the steps, a walk gets a depth only if the step probe was
 * attached from its entry to its return (window_unbroken); the others are counted in
 * version_walks_unstepped. So every depth reported is whole.
 *
 * Why a return probe is safe here: a uretprobe replaces the return address, and a C++
 * exception unwinding through that frame would crash the server. The walk reports its
 * errors as a dberr_t (DB_MISSING_HISTORY, DB_CORRUPTION); its loop allocates from
 * mem_heap (out-of-memory there is fatal in InnoDB, not thrown), reads undo records and
 * copies rows, with no throw and no try/catch on the way. Read in row0vers.cc of MySQL
 * 5.6 and 8.0 and of current MariaDB; the 10.2-11.4 builds we probe share that shape.
 * InnoDB reports errors by code, never by exception, so none leaves this frame while
 * the server keeps running. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"

/* Walks of at least this many versions are sent as events with their user stack. */
const volatile __u64 deep_walk_threshold = 100;
/* The loader's sampling group of version_step (0: never sampled). */
const volatile __u32 step_group = 0;

/* walks (thread id -> struct walk) is shared: undo reads are attributed by it. */

/* The secondary index of each thread's last clustered-record lookup from a secondary-index
 * scan (row_sel_get_clust_rec_for_mysql), with the window it was seen in. The walk that
 * lookup leads to runs inside it, so a walk in the same unbroken window takes it; one
 * reached another way finds a stale entry, and user space keeps the index only for walks
 * whose stack passes through the lookup. No return probe: a trap saved per lookup. */
struct secondary_lookup {
	__u64 index;
	__u64 window;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* thread id */
	__type(value, struct secondary_lookup);
} secondary_lookups SEC(".maps");

static __always_inline int note_secondary_lookup(void *ctx, __u64 index)
{
	struct secondary_lookup lookup = { .index = index, .window = window_token(ctx) };
	__u32 tid = current_tid();

	count_hit(ctx);
	if (traced_process())
		bpf_map_update_elem(&secondary_lookups, &tid, &lookup, BPF_ANY);
	return 0;
}

/* row_sel_get_clust_rec_for_mysql(prebuilt, sec_index, ...): MySQL 5.6/5.7, MariaDB 10.2+ */
SEC("uprobe")
int BPF_KPROBE(secondary_lookup_enter, void *prebuilt, void *sec_index)
{
	return note_secondary_lookup(ctx, (__u64)sec_index);
}

/* Row_sel_get_clust_rec_for_mysql::operator()(this, prebuilt, sec_index, ...): MySQL 8.0+,
 * MariaDB where it became a class */
SEC("uprobe")
int BPF_KPROBE(secondary_lookup_method_enter, void *self, void *prebuilt, void *sec_index)
{
	return note_secondary_lookup(ctx, (__u64)sec_index);
}

static __always_inline __u64 scan_index_of(__u32 tid, __u64 window)
{
	struct secondary_lookup *lookup = bpf_map_lookup_elem(&secondary_lookups, &tid);

	return lookup && lookup->window == window && window_unbroken(window) ? lookup->index : 0;
}

SEC("uprobe")
int BPF_KPROBE(version_walk_enter)
{
	/* row_vers_build_for_consistent_read(rec, mtr, index, ...) in every release */
	struct walk walk = { .start_ns = bpf_ktime_get_ns(), .window = window_token(ctx),
			     .steps = group_token(step_group), .index = PT_REGS_PARM3(ctx) };
	__u32 tid = current_tid();

	count_hit(ctx);
	if (!traced_process())
		return 0;
	walk.scan_index = scan_index_of(tid, walk.window);
	if (bpf_map_update_elem(&walks, &tid, &walk, BPF_ANY))
		counter_add(CNT_DROPS, 1); /* the walk goes unmeasured; its steps count outside */
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(version_step_enter)
{
	__u32 tid = current_tid();
	struct walk *walk;

	count_hit(ctx);
	if (!traced_process())
		return 0;
	walk = bpf_map_lookup_elem(&walks, &tid);
	if (walk && !window_unbroken(walk->window))
		return 0; /* left by a walk whose return we stopped watching */
	if (!walk) {
		counter_add(CNT_VERSION_STEPS_OUTSIDE, 1);
		return 0;
	}
	walk->depth++;
	counter_add(CNT_VERSION_STEPS, 1);
	return 0;
}

/* The stack is taken at the walk's return: its first frame is the return address in the
 * caller (row_sel_build_prev_vers_for_mysql or row_search_mvcc), then the caller chain. */
static __always_inline void emit_deep_walk(void *ctx, __u32 tid, __u64 depth, __u64 latency_ns,
					   __u64 index, __u64 scan_index)
{
	struct deep_walk_event *event;
	long size;

	counter_add(CNT_DEEP_WALKS, 1);
	event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
	if (!event) {
		counter_add(CNT_DROPS, 1);
		return;
	}
	event->type = EVENT_DEEP_WALK;
	event->pid = bpf_get_current_pid_tgid() >> 32;
	event->tid = tid;
	event->end_ns = bpf_ktime_get_ns();
	event->depth = depth;
	event->latency_ns = latency_ns;
	event->index = index;
	event->scan_index = scan_index;
	size = bpf_get_stack(ctx, event->stack, sizeof(event->stack), BPF_F_USER_STACK);
	event->nr_frames = size > 0 ? size / sizeof(event->stack[0]) : 0;
	bpf_ringbuf_submit(event, 0);
}

SEC("uretprobe")
int BPF_KRETPROBE(version_walk_exit)
{
	__u32 tid = current_tid();
	struct walk *walk;
	__u64 depth, latency_ns, index, scan_index;

	count_hit(ctx);
	walk = bpf_map_lookup_elem(&walks, &tid);
	if (!walk) { /* the walk began before we attached */
		if (traced_process())
			counter_add(CNT_UNMATCHED_RETURNS, 1);
		return 0;
	}
	if (span_cut(&walks, &tid, walk->window)) /* left by a walk whose return went unseen */
		return 0;
	if (!window_unbroken(walk->steps)) { /* steps may have gone unseen: no depth */
		counter_add(CNT_VERSION_WALKS_UNSTEPPED, 1);
		bpf_map_delete_elem(&walks, &tid);
		return 0;
	}
	latency_ns = bpf_ktime_get_ns() - walk->start_ns;
	depth = walk->depth;
	index = walk->index;
	scan_index = walk->scan_index;
	bpf_map_delete_elem(&walks, &tid);
	if (!depth) { /* returned without building a version: not a version walk */
		counter_add(CNT_VERSION_WALKS_ZERO, 1);
		return 0;
	}
	counter_add(CNT_VERSION_WALKS, 1);
	counter_max(CNT_VERSION_WALK_MAX_DEPTH, depth);
	hist_add(HIST_VERSION_DEPTH, depth);
	hist_add(HIST_VERSION_WALK_US, latency_ns / 1000);
	if (depth >= deep_walk_threshold)
		emit_deep_walk(ctx, tid, depth, latency_ns, index, scan_index);
	return 0;
}
