// SPDX-License-Identifier: GPL-2.0
/* A replica's applier at work (catalog: applier_event, row_lock_wait, commit_order_wait).
 *
 * Each event an applier thread applies is a span, from the entry of the function that
 * applies one event to its return: MariaDB's apply_event_and_update_pos_apply (the SQL
 * thread's and the parallel workers' alike; the coordinator only hands events out),
 * MySQL's Slave_worker::slave_worker_exec_event (the workers'). The span is kept in
 * applier_start beside purge's (maps.bpf.h), so that page reads (undo.bpf.c), latch waits
 * (latch.bpf.c) and sleeps (sched.bpf.c) inside it are charged to it as they are to purge's
 * batches. Two waits only an applier has in its way are timed here: for a row lock another
 * transaction on the replica holds (MariaDB lock_wait, MySQL and older MariaDB
 * lock_wait_suspend_thread), and for the transactions before it to commit first (the
 * commit order of a parallel applier: wait_for_commit::wait_for_prior_commit2,
 * Commit_order_manager::wait); a third it shares with every committing thread, for the
 * redo log to be written up to its commit (log_write_up_to). At the span's end its time goes into the applier_* counters,
 * split only when the sleep tracepoint watched it whole; and into the thread's row of
 * applier_threads, from which the report names the applier threads. An event still being
 * applied at a snapshot is read there by the loader (applier_open_* gauges): a stall in
 * progress shows in the intervals it lasts, not only in the one it ends in.
 *
 * Return probes are safe: these functions report errors by return codes; an exception
 * leaving them would end the applier thread with or without us (MySQL's worker catches
 * none around slave_worker_exec_event). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32); /* thread id */
	__type(value, struct applier_thread);
} applier_threads SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(applier_event_enter)
{
	count_hit(ctx);
	if (traced_process())
		span_begin(ctx, &applier_start, current_tid());
	return 0;
}

static __always_inline void thread_add(__u32 tid, __u64 ns)
{
	struct applier_thread *t = bpf_map_lookup_elem(&applier_threads, &tid), fresh = {};

	if (!t) {
		bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
		if (bpf_map_update_elem(&applier_threads, &tid, &fresh, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&applier_threads, &tid)) {
			counter_add(CNT_APPLIER_THREADS_FULL, 1);
			return;
		}
		t = bpf_map_lookup_elem(&applier_threads, &tid);
		if (!t)
			return;
	}
	t->events++;
	t->apply_ns += ns;
}

SEC("uretprobe")
int BPF_KRETPROBE(applier_event_exit)
{
	__u32 tid = current_tid();
	struct purge_span *span;
	__u64 wall_ns;

	count_hit(ctx);
	span = bpf_map_lookup_elem(&applier_start, &tid);
	if (!span)
		return 0;
	wall_ns = bpf_ktime_get_ns() - span->start_ns;
	if (!window_unbroken(span->window)) { /* a window's edge cut it */
		counter_add(CNT_WINDOW_CUTS, 1);
	} else {
		counter_add(CNT_APPLIER_EVENTS, 1);
		counter_add(CNT_APPLIER_NS, wall_ns);
		if (window_unbroken(span->sleeps)) {
			counter_add(CNT_APPLIER_SPLIT_NS, wall_ns);
			counter_add(CNT_APPLIER_CPU_NS, wall_ns > span->asleep_ns ? wall_ns - span->asleep_ns : 0);
			counter_add(CNT_APPLIER_IO_NS, span->io_ns);
			counter_add(CNT_APPLIER_LATCH_NS, span->latch_ns);
			counter_add(CNT_APPLIER_ROW_LOCK_NS, span->row_lock_ns);
			counter_add(CNT_APPLIER_COMMIT_WAIT_NS, span->commit_ns);
			counter_add(CNT_APPLIER_REDO_NS, span->redo_ns);
		}
		thread_add(tid, wall_ns);
	}
	purge_span_drop(&applier_start, &tid);
	return 0;
}

/* A wait inside the thread's event: row lock or commit order (innostall.h enum applier_wait). */
static __always_inline int wait_begin(enum applier_wait kind)
{
	__u32 tid = current_tid();
	struct purge_span *span = bpf_map_lookup_elem(&applier_start, &tid);

	if (span && !span->wait_since) {
		span->wait_kind = kind;
		span->wait_since = bpf_ktime_get_ns();
		span->wait_asleep = span->asleep_ns;
	}
	return 0;
}

static __always_inline int wait_end(enum applier_wait kind)
{
	__u32 tid = current_tid();
	struct purge_span *span = bpf_map_lookup_elem(&applier_start, &tid);
	__u64 ns;

	if (!span || !span->wait_since || span->wait_kind != kind) /* an inner wait of another kind */
		return 0;
	ns = bpf_ktime_get_ns() - span->wait_since;
	span->wait_since = 0;
	if (kind == WAIT_ROW_LOCK)
		span->row_lock_ns += ns;
	else if (kind == WAIT_COMMIT_ORDER)
		span->commit_ns += ns;
	else if (span->asleep_ns > span->wait_asleep) /* its sleep only: the log's write is CPU */
		span->redo_ns += span->asleep_ns - span->wait_asleep;
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(row_lock_wait_enter)
{
	count_hit(ctx);
	return wait_begin(WAIT_ROW_LOCK);
}

SEC("uretprobe")
int BPF_KRETPROBE(row_lock_wait_exit)
{
	count_hit(ctx);
	return wait_end(WAIT_ROW_LOCK);
}

SEC("uprobe")
int BPF_KPROBE(commit_order_wait_enter)
{
	count_hit(ctx);
	return wait_begin(WAIT_COMMIT_ORDER);
}

SEC("uretprobe")
int BPF_KRETPROBE(commit_order_wait_exit)
{
	count_hit(ctx);
	return wait_end(WAIT_COMMIT_ORDER);
}

/* log_write_up_to: the redo log written, and with innodb_flush_log_at_trx_commit=1 flushed,
 * up to the commit (or a wait for the thread that does it). Every committing thread calls
 * it, so on a busy server it fires at every commit; only an applier's is kept, and of it
 * only the time asleep (the sync, or the wait for the thread doing it): copying and writing
 * the log is on CPU, which the split already counts (measured on MariaDB 11.4.5: wall time
 * here made the parts 2.2 s more than the 22.6 s they split). */
SEC("uprobe")
int BPF_KPROBE(redo_wait_enter)
{
	count_hit(ctx);
	return wait_begin(WAIT_REDO);
}

SEC("uretprobe")
int BPF_KRETPROBE(redo_wait_exit)
{
	count_hit(ctx);
	return wait_end(WAIT_REDO);
}
