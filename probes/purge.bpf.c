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

SEC("uprobe")
int BPF_KPROBE(purge_batch_enter)
{
	__u32 tid = current_tid();
	__u64 now = bpf_ktime_get_ns();

	if (traced_process())
		bpf_map_update_elem(&batch_start, &tid, &now, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(purge_batch_exit, long pages)
{
	__u32 tid = current_tid();
	__u64 *start = bpf_map_lookup_elem(&batch_start, &tid);

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
	counter_add(CNT_PURGE_PAGES, pages);
	if (!pages)
		counter_add(CNT_PURGE_EMPTY_BATCHES, 1);
	return 0;
}
