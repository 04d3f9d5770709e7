// SPDX-License-Identifier: GPL-2.0
/* Read views: which thread holds the oldest one, since when, and where it opened it.
 * Purge may remove only the history every open read view has seen committed, so the
 * oldest view bounds it: the "pinning" view. Views are kept by the address of the
 * transaction's view: a thread may open an internal transaction's view while its own is
 * open (the statistics update on a table's first use does), and close it again.
 *
 * Opening is probed everywhere. Closing differs:
 *  - MySQL, Percona, MariaDB 10.2: MVCC::view_open(ReadView*&, trx_t*) and
 *    MVCC::view_close(ReadView*&, bool); both are given &trx->read_view (rsi), and
 *    view_open runs only when the transaction has no active view.
 *  - MariaDB 10.6+: ReadView::open(trx_t*) (this = &trx->read_view) also runs when the view
 *    is already open, and keeps it; close() is inlined everywhere. So the entry skips a view
 *    already open (its m_open flag), and the loader drops views whose flag it reads as
 *    cleared (a read of the server's memory, never a write).
 * The user stack at open says which statement opened the view: for a REPEATABLE READ
 * transaction, its first consistent read.
 *
 * Neither program reads or changes anything but the view's open flag; no return probe. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_READ_VIEWS);
	__type(key, __u64); /* &trx->read_view */
	__type(value, struct read_view);
} read_views SEC(".maps");

static __always_inline bool view_already_open(__u64 view)
{
	__u8 open = 0;

	if (!layout.view_open_flag || !view)
		return false;
	return !bpf_probe_read_user(&open, sizeof(open), (void *)(view + layout.view_open_flag)) &&
	       open;
}

static __always_inline void view_opened(void *ctx, __u64 key, __u64 view)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct read_view rv = {
		.opened_ns = bpf_ktime_get_ns(),
		.view = view,
		.history = history_now(),
		.tid = (__u32)pid_tgid,
		.tgid = pid_tgid >> 32,
	};

	rv.stack_id = bpf_get_stackid(ctx, &stack_traces, BPF_F_USER_STACK | 1); /* from the caller */
	if (bpf_map_update_elem(&read_views, &key, &rv, BPF_ANY))
		counter_add(CNT_READ_VIEWS_LOST, 1);
	else
		counter_add(CNT_READ_VIEWS_OPENED, 1);
}

/* ReadView::open(trx_t*): this = &trx->read_view in rdi (MariaDB 10.6+). */
SEC("uprobe")
int BPF_KPROBE(read_view_open, void *view)
{
	count_hit(ctx);
	if (traced_process() && !view_already_open((__u64)view))
		view_opened(ctx, (__u64)view, layout.view_open_flag ? (__u64)view : 0);
	return 0;
}

/* MVCC::view_open(ReadView*& view, trx_t*) / MVCC::view_close(ReadView*& view, bool): this
 * (the MVCC manager) in rdi, &trx->read_view in rsi. */
SEC("uprobe")
int BPF_KPROBE(mvcc_view_open, void *mvcc, void *slot)
{
	count_hit(ctx);
	if (traced_process())
		view_opened(ctx, (__u64)slot, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(mvcc_view_close, void *mvcc, void *slot)
{
	__u64 key = (__u64)slot;

	count_hit(ctx);
	if (traced_process() && !bpf_map_delete_elem(&read_views, &key))
		counter_add(CNT_READ_VIEWS_CLOSED, 1);
	return 0;
}
