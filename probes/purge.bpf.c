// SPDX-License-Identifier: GPL-2.0
/* Purge batches: trx_purge() runs one whole batch on the purge coordinator, so entry to
 * return is the batch latency and its return value is the number of undo pages handled
 * (every server family: MySQL 5.6-8.4, MariaDB 10.2-11.x).
 *
 * Why a return probe is safe here: a uretprobe replaces the return address, and a C++
 * exception unwinding through that frame would crash the server. trx_purge and its
 * callees report errors by return codes and no caller wraps it in try/catch, so an
 * exception leaving it would terminate the server with or without us. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"

/* batch_start and worker_start (thread id -> struct purge_span) are shared: page reads and
 * latch waits are charged to the purge work they happen in (undo.bpf.c, latch.bpf.c). */

/* Records handed out since the running batch began, on any thread (one batch at a time:
 * only the coordinator runs trx_purge). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} batch_records SEC(".maps");

/* Runtime address of srv_dml_needed_delay (us), set by the recorder; 0 when unknown. */
const volatile __u64 dml_delay_global = 0;

static __always_inline __u64 *records_slot(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&batch_records, &zero);
}

/* Wall time of a span that began on this thread: NULL if it began before we attached.
 * Page reads and latch waits inside it were added to it as they ended. */
static __always_inline struct purge_span *span_end(void *map, __u32 tid, __u64 *wall_ns)
{
	struct purge_span *span = bpf_map_lookup_elem(map, &tid);

	if (span)
		*wall_ns = bpf_ktime_get_ns() - span->start_ns;
	return span;
}

/* A span's time split into counters (first of four: the wall time split, its CPU time,
 * page reads and latch waits; io_asleep, its sleeps waiting on I/O), when the sleep tracepoint
 * watched all of it; the part not asleep was on a CPU or waiting for one (sched.bpf.c
 * counts only sleeps). A span it did not watch whole counts in the wall time only. */
static __always_inline void span_split(struct purge_span *span, __u64 wall_ns, __u32 first,
				       __u32 io_asleep)
{
	if (!window_unbroken(span->sleeps))
		return;
	counter_add(first, wall_ns);
	counter_add(first + 1, wall_ns > span->asleep_ns ? wall_ns - span->asleep_ns : 0);
	counter_add(first + 2, span->io_ns);
	counter_add(first + 3, span->latch_ns);
	counter_add(io_asleep, span->io_asleep_ns);
}

/* The history list length, where the server keeps it as a member,
 * trx_sys_t::rseg_history_len (MySQL, Percona, MariaDB 10.2-10.5; 4 bytes wide in MariaDB
 * 10.3): the batch programs below read it at each batch's entry and return, at no trap of
 * its own, since the coordinator may run thousands of tiny batches a second there. The
 * runtime address of the global trx_sys is set by the recorder (the history_length
 * probe's `globals`); the layout says whether it is a pointer to the object and where the
 * member lies in it. */
const volatile __u64 trx_sys_global = 0;

static __always_inline void read_history_member(void)
{
	__u64 object = trx_sys_global, length;

	if (!traced_process() || !object || !layout.history_len)
		return;
	if (layout.trx_sys_pointer &&
	    (bpf_probe_read_user(&object, sizeof(object), (void *)object) || !object))
		return;
	length = 0; /* a 4-byte counter fills the low half (x86-64 is little-endian) */
	if (!bpf_probe_read_user(&length, layout.history_len_size == 4 ? 4 : 8,
				 (void *)(object + layout.history_len)))
		history_set(length);
}

SEC("uprobe")
int BPF_KPROBE(purge_batch_enter)
{
	__u64 *records = records_slot();

	count_hit(ctx);
	if (!traced_process())
		return 0;
	span_begin(ctx, &batch_start, current_tid());
	if (records)
		*records = 0;
	read_history_member();
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(purge_batch_exit, long pages)
{
	__u32 tid = current_tid();
	struct purge_span *span;
	__u64 wall_ns;

	count_hit(ctx);
	span = span_end(&batch_start, tid, &wall_ns);
	if (!span) { /* began before we attached */
		if (traced_process())
			counter_add(CNT_UNMATCHED_RETURNS, 1);
		return 0;
	}
	if (!window_unbroken(span->window)) { /* a window's edge cut it: neither seen whole */
		counter_add(CNT_WINDOW_CUTS, 1);
		purge_span_drop(&batch_start, &tid);
		return 0;
	}
	span_split(span, wall_ns, CNT_PURGE_BATCH_SPLIT_NS, CNT_PURGE_BATCH_IO_ASLEEP_NS);
	purge_span_drop(&batch_start, &tid);
	hist_add(HIST_PURGE_BATCH_US, wall_ns / 1000);
	counter_add(CNT_PURGE_BATCH_NS, wall_ns);
	if (pages < 0)
		pages = 0;
	hist_add(HIST_PURGE_BATCH_PAGES, pages);
	counter_add(CNT_PURGE_BATCHES, 1);
	if (records_slot())
		hist_add(HIST_PURGE_BATCH_RECORDS, *records_slot());
	counter_add(CNT_PURGE_PAGES, pages);
	if (!pages)
		counter_add(CNT_PURGE_EMPTY_BATCHES, 1);
	read_history_member(); /* the length the batch left */
	return 0;
}

/* One purge task on a worker (MariaDB 10.5+: purge_worker_callback, a tpool task). It
 * reports errors by code, like trx_purge: a return probe is safe for the same reason. */
SEC("uprobe")
int BPF_KPROBE(purge_worker_enter)
{
	count_hit(ctx);
	if (traced_process())
		span_begin(ctx, &worker_start, current_tid());
	return 0;
}

/* MySQL, Percona, MariaDB 10.2-10.4: a worker thread runs each purge task it is handed by
 * que_run_threads(), called straight from srv_worker_thread (the task loop is inlined
 * there). que_run_threads also runs the coordinator's own share, rollbacks and internal
 * SQL: a call is a worker's task when it returns into srv_worker_thread, whose code range
 * the recorder sets. The return address is at the top of the stack at entry. It reports
 * errors through the query graph, never by exception: a return probe is safe. */
const volatile __u64 worker_caller_lo = 0;
const volatile __u64 worker_caller_hi = 0;

SEC("uprobe")
int BPF_KPROBE(purge_worker_called)
{
	__u64 caller = 0;

	count_hit(ctx);
	if (!traced_process() || !worker_caller_hi ||
	    bpf_probe_read_user(&caller, sizeof(caller), (void *)PT_REGS_SP(ctx)) ||
	    caller < worker_caller_lo || caller >= worker_caller_hi)
		return 0;
	span_begin(ctx, &worker_start, current_tid());
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(purge_worker_exit)
{
	__u32 tid = current_tid();
	struct purge_span *span;
	__u64 wall_ns;

	count_hit(ctx);
	span = span_end(&worker_start, tid, &wall_ns);
	if (!span)
		return 0;
	if (!window_unbroken(span->window)) { /* a window's edge cut it */
		counter_add(CNT_WINDOW_CUTS, 1);
	} else {
		span_split(span, wall_ns, CNT_PURGE_WORKER_SPLIT_NS, CNT_PURGE_WORKER_IO_ASLEEP_NS);
		counter_add(CNT_PURGE_WORKER_TASKS, 1);
		counter_add(CNT_PURGE_WORKER_NS, wall_ns);
	}
	purge_span_drop(&worker_start, &tid);
	return 0;
}

/* The history list length. MariaDB 10.6+ keeps no total: trx_sys_t::history_size() adds
 * up the rollback segments' counts, and the purge coordinator calls it every time it
 * wakes (then rarely anyone else: INNODB_METRICS uses history_size_approx). It only takes
 * latches and adds: no exception can leave it, so a return probe is safe. */
SEC("uretprobe")
int BPF_KRETPROBE(history_size_exit, __u64 length)
{
	count_hit(ctx);
	if (traced_process())
		history_set(length);
	return 0;
}

/* trx_sys_t::history_exists() false: the history is empty. The coordinator asks it after
 * each batch and stops when it says so, without calling history_size() again: without
 * this the last length seen would stay while the history is in fact gone. */
SEC("uretprobe")
int BPF_KRETPROBE(history_exists_exit, __u64 exists)
{
	count_hit(ctx);
	if (traced_process() && !(exists & 0xff)) /* a bool, in al */
		history_set(0);
	return 0;
}

static __always_inline void record_purged(void)
{
	__u64 *records = records_slot();

	counter_add(CNT_PURGE_RECORDS, 1);
	if (records)
		__sync_fetch_and_add(records, 1);
}

/* row_purge_step: one undo record per call (MySQL, MariaDB 10.2-10.5). */
SEC("uprobe")
int BPF_KPROBE(purge_record_enter)
{
	count_hit(ctx);
	if (traced_process())
		record_purged();
	return 0;
}

/* trx_purge_get_next_rec (MariaDB 10.6-10.11) returns a record, 0 at the end of the batch
 * or -1 to skip a whole undo log. It returns normally: errors are return values. */
SEC("uretprobe")
int BPF_KRETPROBE(purge_record_fetched, long rec)
{
	count_hit(ctx);
	if (traced_process() && rec != 0 && rec != -1)
		record_purged();
	return 0;
}

/* The DML delay of innodb_max_purge_lag: a row insert or update sleeping so purge can catch
 * up. Timed from entry to return of the sleep (a sleep cannot throw). */
struct dml_sleep {
	__u64 start_ns;
	__u64 window;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct dml_sleep);
} dml_sleeps SEC(".maps");

static __always_inline int dml_sleep_begin(void *ctx)
{
	struct dml_sleep sleep = { bpf_ktime_get_ns(), window_token(ctx) };
	__u32 tid = current_tid();

	bpf_map_update_elem(&dml_sleeps, &tid, &sleep, BPF_ANY);
	return 0;
}

/* MariaDB 10.6+: the out-of-line sleep_for<long, micro> serves only the DML delay. */
SEC("uprobe")
int BPF_KPROBE(dml_delay_enter)
{
	count_hit(ctx);
	return traced_process() ? dml_sleep_begin(ctx) : 0;
}

/* os_thread_sleep(us) has many callers: a DML delay sleeps exactly srv_dml_needed_delay. */
SEC("uprobe")
int BPF_KPROBE(dml_delay_filtered, __u64 usecs)
{
	__u64 needed = 0;

	count_hit(ctx);
	if (!traced_process() || !dml_delay_global || !usecs ||
	    bpf_probe_read_user(&needed, sizeof(needed), (void *)dml_delay_global) || usecs != needed)
		return 0;
	return dml_sleep_begin(ctx);
}

SEC("uretprobe")
int BPF_KRETPROBE(dml_delay_exit)
{
	__u32 tid = current_tid();
	struct dml_sleep *sleep;
	__u64 us;

	count_hit(ctx);
	sleep = bpf_map_lookup_elem(&dml_sleeps, &tid);
	if (!sleep)
		return 0;
	if (span_cut(&dml_sleeps, &tid, sleep->window))
		return 0;
	us = (bpf_ktime_get_ns() - sleep->start_ns) / 1000;
	hist_add(HIST_DML_DELAY_US, us);
	counter_add(CNT_DML_DELAYS, 1);
	counter_add(CNT_DML_DELAY_US, us);
	bpf_map_delete_elem(&dml_sleeps, &tid);
	return 0;
}

/* MySQL 8.0 inlines the sleep: charge each row insert or update the delay in force. */
SEC("uprobe")
int BPF_KPROBE(dml_delay_charged)
{
	__u64 needed = 0;

	count_hit(ctx);
	if (!traced_process() || !dml_delay_global ||
	    bpf_probe_read_user(&needed, sizeof(needed), (void *)dml_delay_global) || !needed)
		return 0;
	hist_add(HIST_DML_DELAY_US, needed);
	counter_add(CNT_DML_DELAYS, 1);
	counter_add(CNT_DML_DELAY_US, needed);
	return 0;
}
