/* SPDX-License-Identifier: GPL-2.0 */
/* Maps and helpers every measurement shares. common.bpf.c defines the maps; the other
 * objects see them as externs, and `bpftool gen object` links them into one object. */
#ifndef __MAPS_BPF_H
#define __MAPS_BPF_H

#include "innostall.h"
#include "bits.bpf.h"

#ifdef INNOSTALL_DEFINE_SHARED
#define SHARED
#else
#define SHARED extern
#endif

SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NR_HISTS);
	__type(key, __u32);
	__type(value, struct hist);
} hists SEC(".maps");

SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NR_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Events too rare and too rich for a map slot (struct deep_walk_event, ...); the loader
 * prints each one as it arrives. A full buffer costs the event, counted in `drops`. */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} events SEC(".maps");


/* The scheduler tracepoint's sampling group (sched.bpf.c; 0: never sampled), set by the
 * recorder. */
SHARED const volatile __u32 sleep_group;

/* Per-thread scopes, kept by purge.bpf.c and mvcc.bpf.c and read by undo.bpf.c and
 * latch.bpf.c to say who caused an undo page read or waited on a latch: threads inside a
 * purge batch or a purge worker's task, and inside a consistent read's version walk. */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* thread id */
	__type(value, struct purge_span);
} batch_start SEC(".maps");

SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* thread id */
	__type(value, struct purge_span);
} worker_start SEC(".maps");

/* The replica's applier threads inside an event (applier.bpf.c): kept here, with purge's,
 * so that page reads, latch waits and sleeps are charged to it as to purge's spans. */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* thread id */
	__type(value, struct purge_span);
} applier_start SEC(".maps");

/* How many threads are inside a purge span now: the scheduler tracepoint (sched.bpf.c),
 * which runs at every switch of the server's threads, has nothing to do while none is, and
 * stops at once. Counted when an entry is added to batch_start or worker_start and when
 * one is deleted; an entry left behind by a thread that never returned keeps it above 0,
 * which only costs that shortcut. */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s64);
} purge_spans_open SEC(".maps");

/* How many spans of work (batch_start, worker_start, applier_start) are open per slot of
 * thread ids, a thread's slot its id modulo SPAN_SLOTS: work_of looks a thread up in the
 * three hash maps only when its slot is above 0. The scheduler tracepoint asks at every
 * switch of the server's threads, twice, and for all but purge's and the applier's threads
 * all six lookups missed. Two threads sharing a slot only cost the lookups again; an entry
 * left behind keeps its slot above 0, as purge_spans_open. */
#define SPAN_SLOTS 4096
SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SPAN_SLOTS);
	__type(key, __u32);
	__type(value, __s32);
} span_slots SEC(".maps");

/* User stacks, by id: latch waits (latch.bpf.c) and read views (views.bpf.c). */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
} stack_traces SEC(".maps");

struct walk {
	__u64 start_ns;
	__u64 depth; /* steps so far; only the owning thread writes it */
	__u64 window; /* window_token() at entry */
	__u64 steps;  /* the version_step group's token at entry */
	__u64 index;  /* the walk's dict_index_t* (its third argument) */
	__u64 scan_index; /* the secondary index of the lookup that led here, or 0 */
};

SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* threads inside a walk at once */
	__type(key, __u32); /* thread id */
	__type(value, struct walk);
} walks SEC(".maps");

/* Hits per attachment, counted before any filter: what the loader's cost governor reads.
 * A row of MAX_ATTACHMENTS slots per CPU, as a per-CPU array keeps them, so that a hit
 * never waits for another CPU's; in the row, the attachment's number (the low half of its
 * BPF cookie), and last the scheduler tracepoints' runs and calibration's hits (innostall.h
 * HITS_*). A plain array the loader sizes to the machine's CPUs and maps into its memory:
 * it reads the counts at each check without a system call (a batched read of a per-CPU
 * array was a third of its CPU time). */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MAX_ATTACHMENTS); /* a row per CPU: set by the loader */
	__type(key, __u32);
	__type(value, __u64);
} probe_hits SEC(".maps");

/* Sampling windows, one slot per sampled group (the high half of the cookie; group 0 is
 * never sampled). The loader makes a group's slot odd once all its probes are attached and
 * even again before it detaches any, so an entry and its return that saw the same odd
 * value were both watched from one window: nothing between them was missed. */
SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_GROUPS);
	__type(key, __u32);
	__type(value, __u64);
} windows SEC(".maps");

/* Set by the loader before load: only this process is traced (0 = any process). */
SHARED const volatile pid_t targ_tgid;
/* Set by the loader before load: the kernel times our programs (BPF_STATS_RUN_TIME), so a
 * program that runs at every switch need not time its own runs (*_extra_ns). */
SHARED const volatile bool kernel_times_programs;
/* The build's struct layout, set by the loader from the catalog (innostall.h). */
SHARED const volatile struct innodb_layout layout;

static __always_inline bool traced_process(void)
{
	return !targ_tgid || (bpf_get_current_pid_tgid() >> 32) == targ_tgid;
}

static __always_inline __u32 current_tid(void)
{
	return (__u32)bpf_get_current_pid_tgid();
}

static __always_inline void count_in_slot(__u32 slot)
{
	__u32 key = bpf_get_smp_processor_id() * MAX_ATTACHMENTS + slot;
	__u64 *hits;

	if (slot >= MAX_ATTACHMENTS)
		return;
	hits = bpf_map_lookup_elem(&probe_hits, &key);
	if (hits)
		(*hits)++; /* this CPU's row: nobody else writes it */
}

static __always_inline void count_hit(void *ctx)
{
	count_in_slot((__u32)bpf_get_attach_cookie(ctx));
}

static __always_inline __u64 window_of(__u32 group)
{
	__u64 *gen = group ? bpf_map_lookup_elem(&windows, &group) : NULL;

	return gen ? *gen : 0;
}

/* The current window of a group: the group in the top 16 bits, the window's generation
 * below. Always 0 for group 0, whose probes are never sampled. */
static __always_inline __u64 group_token(__u32 group)
{
	return group ? (__u64)group << 48 | window_of(group) : 0;
}

/* The window this probe runs in. */
static __always_inline __u64 window_token(void *ctx)
{
	return group_token(bpf_get_attach_cookie(ctx) >> 32);
}

/* Whether a group's probes are attached now (group 0's always are). */
static __always_inline bool group_attached(__u32 group)
{
	return !group || (window_of(group) & 1);
}

/* False when state saved under token was cut by a window edge: a sampled probe closed
 * between the entry that saved it and now, so what happened in between was not seen. */
static __always_inline bool window_unbroken(__u64 token)
{
	__u32 group = token >> 48;

	return !group || ((token & 0xffffffffffffULL) == window_of(group) && (token & 1));
}

static __always_inline void counter_add(__u32 id, __u64 n)
{
	__u64 *value = bpf_map_lookup_elem(&counters, &id);

	if (value)
		__sync_fetch_and_add(value, n);
}

/* For a return whose entry saved window in map under tid: true, once the state is dropped
 * and counted in window_cuts, when a window's edge cut the span in two. */
static __always_inline bool span_cut(void *map, __u32 *tid, __u64 window)
{
	if (window_unbroken(window))
		return false;
	bpf_map_delete_elem(map, tid);
	counter_add(CNT_WINDOW_CUTS, 1);
	return true;
}

/* Raise a counter slot to `value` if it is higher: a compare-and-swap loop, so two CPUs
 * ending walks at once cannot lower it. Bounded for the verifier; losing the race that
 * many times in a row is not a real possibility. */
static __always_inline void counter_max(__u32 id, __u64 value)
{
	__u64 *slot = bpf_map_lookup_elem(&counters, &id);
	__u64 seen;
	int i;

	if (!slot)
		return;
	for (i = 0; i < 8; i++) {
		seen = *slot;
		if (value <= seen || __sync_val_compare_and_swap(slot, seen, value) == seen)
			return;
	}
}

/* waits more waits of ns in all under key in a map of wait_sum (a wait's stack, page,
 * holder ...); a full map costs the row, counted in overflow_counter. */
static __always_inline void sum_add_n(void *map, void *key, __u64 waits, __u64 ns,
				      __u32 overflow_counter)
{
	struct wait_sum *sum = bpf_map_lookup_elem(map, key), fresh = { waits, ns };

	if (!sum) {
		if (!bpf_map_update_elem(map, key, &fresh, BPF_NOEXIST))
			return;
		/* full, or another CPU inserted the key first: then it is there to add to */
		sum = bpf_map_lookup_elem(map, key);
		if (!sum) {
			counter_add(overflow_counter, 1);
			return;
		}
	}
	__sync_fetch_and_add(&sum->count, waits);
	__sync_fetch_and_add(&sum->total_ns, ns);
}

static __always_inline void sum_add(void *map, void *key, __u64 ns, __u32 overflow_counter)
{
	sum_add_n(map, key, 1, ns, overflow_counter);
}

static __always_inline void hist_add(__u32 id, __u64 value)
{
	struct hist *h = bpf_map_lookup_elem(&hists, &id);
	__u32 slot = log2_u64(value);

	if (!h)
		return;
	if (slot >= MAX_SLOTS)
		slot = MAX_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[slot], 1);
}

/* The purge work the thread is doing: its batch (the coordinator) or its task (a worker);
 * NULL if none. */
static __always_inline struct purge_span *purge_span_of(__u32 tid)
{
	struct purge_span *span = bpf_map_lookup_elem(&batch_start, &tid);

	return span ? span : bpf_map_lookup_elem(&worker_start, &tid);
}

/* Whether the thread may be inside a span of work: its slot counts one open (span_slots). */
static __always_inline bool span_slot_open(__u32 tid)
{
	__u32 slot = tid % SPAN_SLOTS;
	__s32 *open = bpf_map_lookup_elem(&span_slots, &slot);

	return !open || *open > 0;
}

/* The span whose time a thread's sleeps, page reads and latch waits are charged to, and
 * whose work it is (enum work_owner): purge's (its coordinator's batch or a worker's task),
 * the replica applier's (an event), or none (NULL). A latch wait's end needs both: asked
 * once, as each map is a hash lookup on the hot path. */
static __always_inline struct purge_span *work_of(__u32 tid, enum work_owner *owner)
{
	struct purge_span *span;

	*owner = WORK_NONE;
	if (!span_slot_open(tid))
		return NULL;
	span = purge_span_of(tid);
	*owner = WORK_PURGE;
	if (span)
		return span;
	span = bpf_map_lookup_elem(&applier_start, &tid);
	*owner = span ? WORK_APPLIER : WORK_NONE;
	return span;
}

static __always_inline struct purge_span *work_span_of(__u32 tid)
{
	enum work_owner owner;

	return work_of(tid, &owner);
}

static __always_inline void purge_spans_add(__u32 tid, __s64 n)
{
	__u32 zero = 0, slot = tid % SPAN_SLOTS;
	__s64 *open = bpf_map_lookup_elem(&purge_spans_open, &zero);
	__s32 *in_slot = bpf_map_lookup_elem(&span_slots, &slot);

	if (open)
		__sync_fetch_and_add(open, n);
	if (in_slot)
		__sync_fetch_and_add(in_slot, (__s32)n);
}

static __always_inline bool purge_span_anywhere(void)
{
	__u32 zero = 0;
	__s64 *open = bpf_map_lookup_elem(&purge_spans_open, &zero);

	return open && *open > 0;
}

/* Start the thread's span in batch_start or worker_start (one in force: a new start
 * replaces a span whose return never came). */
static __always_inline void purge_span_start(void *map, __u32 tid, struct purge_span *span)
{
	if (!bpf_map_update_elem(map, &tid, span, BPF_NOEXIST))
		purge_spans_add(tid, 1);
	else
		bpf_map_update_elem(map, &tid, span, BPF_EXIST);
}

/* A span begun now, in the window of the probe running (ctx), its sleeps watched from now. */
static __always_inline void span_begin(void *ctx, void *map, __u32 tid)
{
	struct purge_span span = { .start_ns = bpf_ktime_get_ns(), .window = window_token(ctx),
				   .sleeps = group_token(sleep_group) };

	purge_span_start(map, tid, &span);
}

static __always_inline void purge_span_drop(void *map, __u32 *tid)
{
	if (!bpf_map_delete_elem(map, tid))
		purge_spans_add(*tid, -1);
}

/* Add ns of page reads or latch waits to a span of work (work_of), if any. */
static __always_inline void span_charge(struct purge_span *span, bool io, __u64 ns)
{
	if (!span)
		return;
	if (io)
		span->io_ns += ns;
	else
		span->latch_ns += ns;
}

static __always_inline void purge_charge(__u32 tid, bool io, __u64 ns)
{
	span_charge(work_span_of(tid), io, ns);
}

/* The history list length, as the server computed it or as read from its memory: a gauge
 * (innostall.h), with history_reads counting how often it was refreshed. Its peak in the
 * interval matters as much as its last value: MariaDB's purge coordinator wakes about once
 * a second and drains what accumulated within milliseconds, so the last length it saw is
 * the low point of a saw-tooth (seen: peaks of 5600-7800, last values 0-134). */
static __always_inline void history_set(__u64 length)
{
	__u32 id = CNT_HISTORY_LENGTH;
	__u64 *slot = bpf_map_lookup_elem(&counters, &id);

	if (!slot)
		return;
	*slot = length;
	counter_max(CNT_HISTORY_PEAK, length);
	counter_add(CNT_HISTORY_READS, 1);
}

/* The last history length seen, or -1 when none was seen yet. */
static __always_inline __s64 history_now(void)
{
	__u32 length_id = CNT_HISTORY_LENGTH, reads_id = CNT_HISTORY_READS;
	__u64 *length = bpf_map_lookup_elem(&counters, &length_id);
	__u64 *reads = bpf_map_lookup_elem(&counters, &reads_id);

	return length && reads && *reads ? (__s64)*length : -1;
}

#endif /* __MAPS_BPF_H */
