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

/* batch_start (thread id -> entry time) is shared: undo reads are attributed by it. */

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

SEC("uprobe")
int BPF_KPROBE(purge_batch_enter)
{
	__u32 tid = current_tid();
	__u64 now = bpf_ktime_get_ns();

	__u64 *records = records_slot();

	count_hit(ctx);
	if (!traced_process())
		return 0;
	bpf_map_update_elem(&batch_start, &tid, &now, BPF_ANY);
	if (records)
		*records = 0;
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(purge_batch_exit, long pages)
{
	__u32 tid = current_tid();
	__u64 *start;

	count_hit(ctx); /* purge batches are never sampled: no window to check */
	start = bpf_map_lookup_elem(&batch_start, &tid);
	if (!start) { /* the batch began before we attached */
		if (traced_process())
			counter_add(CNT_UNMATCHED_RETURNS, 1);
		return 0;
	}
	hist_add(HIST_PURGE_BATCH_US, (bpf_ktime_get_ns() - *start) / 1000);
	bpf_map_delete_elem(&batch_start, &tid);
	if (pages < 0)
		pages = 0;
	hist_add(HIST_PURGE_BATCH_PAGES, pages);
	counter_add(CNT_PURGE_BATCHES, 1);
	if (records_slot())
		hist_add(HIST_PURGE_BATCH_RECORDS, *records_slot());
	counter_add(CNT_PURGE_PAGES, pages);
	if (!pages)
		counter_add(CNT_PURGE_EMPTY_BATCHES, 1);
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
