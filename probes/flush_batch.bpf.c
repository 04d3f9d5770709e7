// SPDX-License-Identifier: GPL-2.0
/* Page-cleaner batches: one call that writes a set of dirty pages, timed from entry to
 * return, with the pages it wrote (catalog: flush_batch for the flush list, flush_lru_batch
 * for the LRU list). Where the count is:
 *  - returned (MariaDB 10.3+: buf_do_flush_list_batch, buf_flush_list_holding_mutex,
 *    buf_flush_list, buf_flush_LRU): rax at return;
 *  - written through a pointer argument (MySQL and MariaDB 10.2: buf_flush_do_batch(pool,
 *    type, min_n, lsn, ulint *n_processed | flush_counters_t *n), both kinds in one
 *    function, its type in the second argument; MariaDB 10.3-10.4:
 *    buf_flush_LRU_list_batch(pool, max, flush_counters_t *n)): the 8 bytes there at return
 *    (flush_counters_t begins with `flushed`). buf_flush_do_batch returns false when a
 *    batch of that type was already running: then it wrote nothing.
 * Several page-cleaner threads run batches at once: a batch is its thread's. A call that
 * wrote nothing (10.5+ returns 0 when another batch was running, or nothing was due) is
 * counted apart, so that the batches' latency is the writing ones'. Never sampled: a few
 * batches a second per cleaner. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"

/* buf_flush_t (MySQL, MariaDB 10.2): BUF_FLUSH_LRU = 0, BUF_FLUSH_LIST = 1 */
enum { FLUSH_LRU, FLUSH_LIST };

struct open_batch {
	__u64 start_ns;
	__u64 pages_at; /* where the count is written, or 0: returned */
	__u32 kind;
	__u32 ran_flag; /* the return value says whether a batch ran (buf_flush_do_batch) */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* thread id */
	__type(value, struct open_batch);
} open_batches SEC(".maps");

static __always_inline int batch_enter(__u32 kind, __u64 pages_at, bool ran_flag)
{
	struct open_batch batch = { .kind = kind, .pages_at = pages_at, .ran_flag = ran_flag };
	__u32 tid = current_tid();

	if (!traced_process())
		return 0;
	batch.start_ns = bpf_ktime_get_ns();
	bpf_map_update_elem(&open_batches, &tid, &batch, BPF_ANY);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(flush_list_enter)
{
	count_hit(ctx);
	return batch_enter(FLUSH_LIST, 0, false);
}

SEC("uprobe")
int BPF_KPROBE(flush_lru_enter)
{
	count_hit(ctx);
	return batch_enter(FLUSH_LRU, 0, false);
}

/* buf_flush_do_batch(pool, type, min_n, lsn_limit, count): the type's low byte (9.7.4
 * passes it in sil alone). */
SEC("uprobe")
int BPF_KPROBE(flush_batch_typed_enter, void *pool, __u64 type, __u64 min_n, __u64 lsn, void *count)
{
	count_hit(ctx);
	return batch_enter((type & 0xff) == 0 ? FLUSH_LRU : FLUSH_LIST, (__u64)count, true);
}

/* buf_flush_LRU_list_batch(pool, max, flush_counters_t *n) */
SEC("uprobe")
int BPF_KPROBE(flush_lru_counted_enter, void *pool, __u64 max, void *count)
{
	count_hit(ctx);
	return batch_enter(FLUSH_LRU, (__u64)count, false);
}

SEC("uretprobe")
int BPF_KRETPROBE(flush_batch_exit, __u64 ret)
{
	__u32 tid = current_tid();
	struct open_batch *batch;
	__u64 pages = ret, ns;
	bool lru;

	count_hit(ctx);
	batch = bpf_map_lookup_elem(&open_batches, &tid);
	if (!batch)
		return 0;
	ns = bpf_ktime_get_ns() - batch->start_ns;
	lru = batch->kind == FLUSH_LRU;
	if (batch->ran_flag && !(ret & 0xff))
		pages = 0; /* buf_flush_do_batch: no batch ran, its count may be stale */
	else if (batch->pages_at && bpf_probe_read_user(&pages, sizeof(pages), (void *)batch->pages_at))
		pages = 0;
	bpf_map_delete_elem(&open_batches, &tid);
	if (!pages || pages > (1ULL << 32)) { /* nothing written, or not a count */
		counter_add(CNT_FLUSH_BATCHES_EMPTY, 1);
		return 0;
	}
	counter_add(lru ? CNT_FLUSH_LRU_BATCHES : CNT_FLUSH_LIST_BATCHES, 1);
	counter_add(lru ? CNT_FLUSH_LRU_PAGES : CNT_FLUSH_LIST_PAGES, pages);
	counter_add(lru ? CNT_FLUSH_LRU_BATCH_NS : CNT_FLUSH_LIST_BATCH_NS, ns);
	counter_max(CNT_FLUSH_BATCH_MAX_NS, ns);
	hist_add(HIST_FLUSH_BATCH_US, ns / 1000);
	hist_add(HIST_FLUSH_BATCH_PAGES, pages);
	return 0;
}
