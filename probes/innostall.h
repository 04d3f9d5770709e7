/* SPDX-License-Identifier: GPL-2.0 */
/* Constants shared by the BPF programs and the loader. Each list is an X-macro so
 * that the kernel side (ids) and the loader (names it prints) cannot drift apart. */
#ifndef __INNOSTALL_H
#define __INNOSTALL_H

#define MAX_SLOTS 32 /* log2 buckets; the last one also takes everything above 2^31 */

/* Log2 histograms kept in the kernel: X(id, name, unit) */
#define INNOSTALL_HISTS(X)                                     \
	X(HIST_PURGE_BATCH_US, "purge_batch_latency", "usecs") \
	X(HIST_PURGE_BATCH_PAGES, "purge_batch_pages", "pages")

/* Monotonic counters kept in the kernel: X(id, name) */
#define INNOSTALL_COUNTERS(X)                           \
	X(CNT_PURGE_BATCHES, "purge_batches")           \
	X(CNT_PURGE_EMPTY_BATCHES, "purge_empty_batches") \
	X(CNT_PURGE_PAGES, "purge_pages")               \
	X(CNT_UNMATCHED_RETURNS, "unmatched_returns")

#define INNOSTALL_ID(id, ...) id,
enum hist_id { INNOSTALL_HISTS(INNOSTALL_ID) NR_HISTS };
enum counter_id { INNOSTALL_COUNTERS(INNOSTALL_ID) NR_COUNTERS };

struct hist {
	__u64 slots[MAX_SLOTS];
};

#endif /* __INNOSTALL_H */
