// SPDX-License-Identifier: GPL-2.0
/* A replica's applier at work (catalog: applier_event, row_lock_wait, commit_order_wait).
 *
 * Each event an applier thread applies is a span, from the entry of the function that
 * applies one event to its return: MariaDB's apply_event_and_update_pos_apply (the SQL
 * thread's and the parallel workers' alike; the coordinator only hands events out),
 * MySQL's Slave_worker::slave_worker_exec_event (the workers') and Log_event::apply_event
 * (the SQL thread's without workers; with workers, the coordinator's, which only hands the
 * event out: see applier_dispatch_lo). The span is kept in
 * applier_start beside purge's (maps.bpf.h), so that page reads (undo.bpf.c), latch waits
 * (latch.bpf.c) and sleeps (sched.bpf.c) inside it are charged to it as they are to purge's
 * batches. Two waits only an applier has in its way are timed here: for a row lock another
 * transaction on the replica holds (MariaDB lock_wait, MySQL and older MariaDB
 * lock_wait_suspend_thread), and for the transactions before it to commit first (the
 * commit order of a parallel applier: wait_for_commit::wait_for_prior_commit2,
 * Commit_order_manager::wait); a third it shares with every committing thread, for the
 * redo log to be written up to its commit (log_write_up_to). The row-lock and commit-order
 * waits are charged by role: a thread seen applying an event is kept in applier_roles, and
 * its waits count in the split at their end, whole, whether or not the event around them
 * was watched (row_lock_wait is never sampled on a replica, so a stall on a row lock is
 * seen however little the event probe was attached). At the span's end its time goes into the applier_* counters,
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

/* The threads seen applying an event: a wait of theirs is the applier's (applier.bpf.c's
 * role charge). Kept from the first event seen to the end, as the applier threads are. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32); /* thread id */
	__type(value, __u32); /* unused: presence is the role */
} applier_roles SEC(".maps");

/* Their row-lock and commit-order waits in progress (struct role_wait). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32); /* thread id */
	__type(value, struct role_wait);
} role_waits SEC(".maps");

/* MySQL's Log_event::apply_event applies the event on the SQL thread when there are no
 * workers (replica_parallel_workers=0), and on a coordinator only hands it to a worker,
 * through Log_event::get_slave_worker (called out of line from it: D 8.0.15, 9.7.4). The
 * programs are attached at all three functions; the recorder sets get_slave_worker's code
 * range here (the catalog's `caller`). A thread entering it is a coordinator: its span is
 * a dispatch, dropped, and it begins no other (the few events it applies itself, a
 * rotation's, are in no worker's count either). A server variable would not do: a changed
 * replica_parallel_workers takes effect at the SQL thread's next start. */
const volatile __u64 applier_dispatch_lo = 0;
const volatile __u64 applier_dispatch_hi = 0;

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 64);
	__type(key, __u32); /* thread id */
	__type(value, __u32); /* unused: presence is the role */
} applier_coordinators SEC(".maps");

static __always_inline bool dispatching(void *ctx, __u32 tid)
{
	__u64 ip = PT_REGS_IP((struct pt_regs *)ctx);
	__u32 one = 1;

	if (!applier_dispatch_hi || ip < applier_dispatch_lo || ip >= applier_dispatch_hi)
		return bpf_map_lookup_elem(&applier_coordinators, &tid) != NULL;
	if (bpf_map_update_elem(&applier_coordinators, &tid, &one, BPF_NOEXIST))
		return true; /* known already */
	purge_span_drop(&applier_start, &tid);
	bpf_map_delete_elem(&applier_roles, &tid);
	return true;
}

SEC("uprobe")
int BPF_KPROBE(applier_event_enter)
{
	__u32 tid = current_tid(), one = 1;

	count_hit(ctx);
	if (!traced_process() || dispatching(ctx, tid))
		return 0;
	if (!bpf_map_lookup_elem(&applier_roles, &tid))
		bpf_map_update_elem(&applier_roles, &tid, &one, BPF_NOEXIST);
	span_begin(ctx, &applier_start, tid);
	return 0;
}

static __always_inline void thread_add(__u32 tid, __u64 events, __u64 ns)
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
	t->events += events;
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
	wall_ns = wall_ns > span->taken_ns ? wall_ns - span->taken_ns : 0; /* counted by role */
	if (span->asleep_ns > span->taken_asleep)
		span->asleep_ns -= span->taken_asleep;
	else
		span->asleep_ns = 0;
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
			counter_add(CNT_APPLIER_REDO_WAITS, span->redo_waits);
		}
		thread_add(tid, 1, wall_ns);
	}
	purge_span_drop(&applier_start, &tid);
	return 0;
}

/* A wait inside the thread's event: row lock or commit order (innostall.h enum applier_wait). */
static __always_inline int wait_begin(void *ctx, enum applier_wait kind)
{
	__u32 tid = current_tid();
	struct purge_span *span = bpf_map_lookup_elem(&applier_start, &tid);
	struct role_wait *open, wait = { .since = bpf_ktime_get_ns(), .window = window_token(ctx), .kind = kind };

	if (kind != WAIT_REDO) {
		if (!bpf_map_lookup_elem(&applier_roles, &tid))
			return 0; /* not an applier: a connection's own wait on the replica */
		open = bpf_map_lookup_elem(&role_waits, &tid);
		if (open && window_unbroken(open->window))
			return 0; /* an inner wait of another kind */
		wait.span_asleep = span ? span->asleep_ns : 0;
		bpf_map_update_elem(&role_waits, &tid, &wait, BPF_ANY);
		return 0;
	}
	if (span && !span->wait_since) {
		span->wait_kind = kind;
		span->wait_since = wait.since;
		span->wait_asleep = span->asleep_ns;
	}
	return 0;
}

/* A row-lock or commit-order wait's end: its time is the applier's, busy and split, all of
 * it that wait's part; the span around it, if any, leaves it out of its own. */
static __always_inline int role_wait_end(enum applier_wait kind)
{
	__u32 tid = current_tid();
	struct role_wait *wait = bpf_map_lookup_elem(&role_waits, &tid);
	struct purge_span *span;
	__u64 ns, since;

	if (!wait || wait->kind != kind) /* an inner wait of another kind */
		return 0;
	since = wait->since;
	ns = bpf_ktime_get_ns() - since;
	if (!window_unbroken(wait->window)) { /* its probe closed while it waited */
		counter_add(CNT_WINDOW_CUTS, 1);
		bpf_map_delete_elem(&role_waits, &tid);
		return 0;
	}
	counter_add(CNT_APPLIER_NS, ns);
	counter_add(CNT_APPLIER_SPLIT_NS, ns);
	counter_add(kind == WAIT_ROW_LOCK ? CNT_APPLIER_ROW_LOCK_NS : CNT_APPLIER_COMMIT_WAIT_NS, ns);
	thread_add(tid, 0, ns);
	span = bpf_map_lookup_elem(&applier_start, &tid);
	if (span && span->start_ns <= since) {
		span->taken_ns += ns;
		if (span->asleep_ns > wait->span_asleep)
			span->taken_asleep += span->asleep_ns - wait->span_asleep;
	}
	bpf_map_delete_elem(&role_waits, &tid);
	return 0;
}

static __always_inline int wait_end(enum applier_wait kind)
{
	__u32 tid = current_tid();
	struct purge_span *span = bpf_map_lookup_elem(&applier_start, &tid);

	if (kind != WAIT_REDO)
		return role_wait_end(kind);
	if (!span || !span->wait_since || span->wait_kind != kind) /* an inner wait of another kind */
		return 0;
	span->wait_since = 0;
	if (span->asleep_ns > span->wait_asleep) { /* its sleep only: the log's write is CPU */
		span->redo_ns += span->asleep_ns - span->wait_asleep;
		span->redo_waits++; /* a call that found the log written already is no wait */
	}
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(row_lock_wait_enter)
{
	count_hit(ctx);
	return wait_begin(ctx, WAIT_ROW_LOCK);
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
	return wait_begin(ctx, WAIT_COMMIT_ORDER);
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
	return wait_begin(ctx, WAIT_REDO);
}

SEC("uretprobe")
int BPF_KRETPROBE(redo_wait_exit)
{
	count_hit(ctx);
	return wait_end(WAIT_REDO);
}
