// SPDX-License-Identifier: GPL-2.0
/* Read views: which thread holds the oldest one, since when, and where it opened it.
 * Purge may remove only the history every open read view has seen committed, so the
 * oldest view bounds it: the "pinning" view. Views are kept by the address of the
 * transaction's view: a thread may open an internal transaction's view while its own is
 * open (the statistics update on a table's first use does), and close it again.
 *
 * Only opening is probed. Whether a view is still open, the loader reads from the
 * server's memory at each interval (innostall.h, enum view_check), so a close is never
 * missed, whatever the cost governor detached meanwhile:
 *  - MySQL, Percona, MariaDB 10.2: MVCC::view_open(ReadView*& view, trx_t*), given
 *    &trx->read_view (rsi); it runs only when the transaction has no active view, and
 *    view_close() sets that pointer to NULL or tags its bit 0.
 *  - MariaDB 10.3.4+: ReadView::open(trx_t*), this = &trx->read_view; it also runs on every
 *    consistent read of a transaction whose view is open (and keeps it), which lets a
 *    view opened while the probe was detached be caught later: it is kept as "seen
 *    open", with the time it was first seen. The view is open while its m_open is set
 *    (10.5.23+), or its m_state is not READ_VIEW_STATE_CLOSED (0) before.
 * The user stack at open says which statement opened the view: for a REPEATABLE READ
 * transaction, its first consistent read.
 *
 * Cost: one hit per transaction (per statement for autocommit reads and READ COMMITTED),
 * which on a point-select load is tens of thousands a second: the governor samples the
 * group like any other. */
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

	return !bpf_probe_read_user(&open, sizeof(open), (void *)(view + layout.view_open_flag)) && open;
}

static __always_inline void view_opened(void *ctx, __u64 key, __u8 check, bool seen_open)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct read_view rv = {
		.opened_ns = bpf_ktime_get_ns(),
		.history = history_now(),
		.tid = (__u32)pid_tgid,
		.tgid = pid_tgid >> 32,
		.check = check,
		.seen_open = seen_open,
	};

	rv.stack_id = bpf_get_stackid(ctx, &stack_traces, BPF_F_USER_STACK | 1); /* from the caller */
	if (bpf_map_update_elem(&read_views, &key, &rv, BPF_ANY))
		counter_add(CNT_READ_VIEWS_LOST, 1);
	else
		counter_add(CNT_READ_VIEWS_OPENED, 1);
}

/* ReadView::open(trx_t*): this = &trx->read_view in rdi (MariaDB 10.3.4+). A view already
 * open is kept as it is, unless we never saw it open: then it opened while this probe was
 * detached, and is kept from now on. Attached only where the flag's offset is known
 * (the catalog's `needs`), which may be 0: MariaDB 10.4's m_state comes first. */
SEC("uprobe")
int BPF_KPROBE(read_view_open, void *view)
{
	__u64 key = (__u64)view;

	count_hit(ctx);
	if (!traced_process())
		return 0;
	if (!view_already_open(key))
		view_opened(ctx, key, VIEW_FLAG, false);
	else if (!bpf_map_lookup_elem(&read_views, &key))
		view_opened(ctx, key, VIEW_FLAG, true);
	return 0;
}

/* MVCC::view_open(ReadView*& view, trx_t*): this (the MVCC manager) in rdi, &trx->read_view
 * in rsi. */
SEC("uprobe")
int BPF_KPROBE(mvcc_view_open, void *mvcc, void *slot)
{
	count_hit(ctx);
	if (traced_process())
		view_opened(ctx, (__u64)slot, VIEW_SLOT, false);
	return 0;
}
