/* SPDX-License-Identifier: GPL-2.0 */
/* Constants shared by the BPF programs and the loader. Each list is an X-macro so
 * that the kernel side (ids) and the loader (names it prints) cannot drift apart. */
#ifndef __INNOSTALL_H
#define __INNOSTALL_H

#define MAX_ATTACHMENTS 64 /* probes one loader may attach */
#define MAX_GROUPS 16 /* sampling groups of the cost governor; group 0 is never sampled */
#define MAX_SLOTS 32 /* log2 buckets; the last one also takes everything above 2^31 */

/* Log2 histograms kept in the kernel: X(id, name, unit) */
#define INNOSTALL_HISTS(X)                                       \
	X(HIST_PURGE_BATCH_US, "purge_batch_latency", "usecs")   \
	X(HIST_PURGE_BATCH_PAGES, "purge_batch_pages", "pages")  \
	X(HIST_VERSION_DEPTH, "version_walk_depth", "versions")  \
	X(HIST_VERSION_WALK_US, "version_walk_latency", "usecs") \
	X(HIST_BLOCK_WAIT_S_US, "block_wait_s", "usecs")         \
	X(HIST_BLOCK_WAIT_X_US, "block_wait_x", "usecs")         \
	X(HIST_BLOCK_WAIT_SX_US, "block_wait_sx", "usecs")       \
	X(HIST_OTHER_LATCH_WAIT_US, "other_latch_wait", "usecs") \
	X(HIST_PAGE_READ_US, "page_read_latency", "usecs")       \
	X(HIST_PURGE_BATCH_RECORDS, "purge_batch_records", "records") \
	X(HIST_DML_DELAY_US, "dml_delay", "usecs")

/* Monotonic counters kept in the kernel: X(id, name). version_walk_max_depth is a running
 * maximum: it never decreases, so per-interval deltas still sum to it. window_cuts counts
 * spans a sampling window's edge cut in two (not measured; see maps.bpf.h). */
#define INNOSTALL_COUNTERS(X)                                   \
	X(CNT_PURGE_BATCHES, "purge_batches")                   \
	X(CNT_PURGE_EMPTY_BATCHES, "purge_empty_batches")       \
	X(CNT_PURGE_PAGES, "purge_pages")                       \
	X(CNT_UNMATCHED_RETURNS, "unmatched_returns")           \
	X(CNT_VERSION_WALKS, "version_walks")                   \
	X(CNT_VERSION_WALKS_ZERO, "version_walks_zero")         \
	X(CNT_VERSION_STEPS, "version_steps")                   \
	X(CNT_VERSION_STEPS_OUTSIDE, "version_steps_outside")   \
	X(CNT_VERSION_WALK_MAX_DEPTH, "version_walk_max_depth") \
	X(CNT_DEEP_WALKS, "deep_walks")                         \
	X(CNT_DROPS, "drops")                                   \
	X(CNT_BLOCK_WAITS_S, "block_waits_s")                   \
	X(CNT_BLOCK_WAITS_X, "block_waits_x")                   \
	X(CNT_BLOCK_WAITS_SX, "block_waits_sx")                 \
	X(CNT_BLOCK_WAIT_NS, "block_wait_ns")                   \
	X(CNT_BLOCK_IO_WAITS, "block_io_waits")                 \
	X(CNT_OTHER_LATCH_WAITS, "other_latch_waits")           \
	X(CNT_OTHER_LATCH_WAIT_NS, "other_latch_wait_ns")       \
	X(CNT_LATCH_MAP_FULL, "latch_map_full")                 \
	X(CNT_UNDO_FETCHES_WALK, "undo_fetches_walk")           \
	X(CNT_UNDO_FETCHES_PURGE, "undo_fetches_purge")         \
	X(CNT_UNDO_FETCHES_OTHER, "undo_fetches_other")         \
	X(CNT_PAGE_READS_WALK, "page_reads_walk")               \
	X(CNT_PAGE_READS_PURGE, "page_reads_purge")             \
	X(CNT_PAGE_READS_OTHER, "page_reads_other")             \
	X(CNT_PURGE_RECORDS, "purge_records")                   \
	X(CNT_DML_DELAYS, "dml_delays")                         \
	X(CNT_DML_DELAY_US, "dml_delay_us")                     \
	X(CNT_WINDOW_CUTS, "window_cuts")                       \
	X(CNT_VERSION_WALKS_UNSTEPPED, "version_walks_unstepped")

#define INNOSTALL_ID(id, ...) id,
enum hist_id { INNOSTALL_HISTS(INNOSTALL_ID) NR_HISTS };
enum counter_id { INNOSTALL_COUNTERS(INNOSTALL_ID) NR_COUNTERS };

struct hist {
	__u64 slots[MAX_SLOTS];
};

/* Records sent through the `events` ring buffer; each starts with its type. */
enum event_type { EVENT_DEEP_WALK = 1 };

#define MAX_STACK_DEPTH 64 /* user frames kept per event */

/* One consistent read that built at least deep_walk_threshold row versions. */
struct deep_walk_event {
	__u32 type; /* EVENT_DEEP_WALK */
	__u32 pid; /* the server process (tgid) */
	__u32 tid;
	__u32 nr_frames;
	__u64 end_ns; /* CLOCK_MONOTONIC at return, as the loader's mono_ns */
	__u64 depth;
	__u64 latency_ns;
	__u64 stack[MAX_STACK_DEPTH]; /* return addresses, innermost first */
};

/* Latch wait modes: rows of the wait_stacks map and of the recording's tables. */
enum wait_mode { MODE_S, MODE_X, MODE_SX, MODE_OTHER };

struct page_key {
	__u32 space;
	__u32 page_no;
};

struct stack_key {
	__s32 stack_id; /* in stack_traces; negative when the stack could not be taken */
	__u32 mode;
};

struct wait_sum {
	__u64 count;
	__u64 total_ns;
};

#endif /* __INNOSTALL_H */
