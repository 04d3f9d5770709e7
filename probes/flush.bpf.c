// SPDX-License-Identifier: GPL-2.0
/* Threads stalled by flushing (catalog: log_room_wait, log_room_cleaner, free_page_wait).
 *
 * Waiting for the log to make room: the checkpoint age passed the point where InnoDB stops
 * writers until the page cleaners have flushed the oldest pages. The function waited in
 * is the one the family sleeps in there: buf_flush_wait_flushed(lsn) (MariaDB, called from
 * log_free_check's margin check once the age passes max_checkpoint_age; 10.2-10.4: from
 * log_preflush_pool_modified_pages), log_free_check_wait(log[, sn]) (MySQL 8.0+). Both
 * return at once when nothing needs flushing: a call that found the log roomy costs a few
 * microseconds and is counted as such, so the waits' time is the stall.
 *
 * On MariaDB 10.6+ a log-room wait has two parts. The writer waits for the page cleaners
 * (buf_flush_wait, called just where the server counts buffer_flush_sync_waits) only when
 * pages older than its target are still dirty; then, or when they were already written,
 * it writes the log and makes the checkpoint itself when the last one is older than the
 * target: a log write, an fsync of every data file and one of the log. On a disk slow to
 * sync, that second part is the stall though the server counts no wait. Probe
 * log_room_cleaner times the first part inside each wait, so that the report tells the two
 * apart.
 *
 * Waiting for a free page: the free list was empty and no clean page was found at the LRU
 * list's tail, so the thread that needed a page (to read one in, or to create one) waits
 * for one to be written out and freed. Timed where the server counts the wait
 * (Innodb_buffer_pool_wait_free), one probe hit per count: in MySQL and MariaDB 10.2-10.4
 * the thread writes one page out itself, buf_flush_single_page_from_LRU (the 10 ms sleep
 * before it, from the third try on, is not timed); in MariaDB 10.6.18+ it waits on
 * buf_pool.done_free (pthread_cond_timedwait, at most a second a time) for the page
 * cleaner, the whole stall, timed at its call site in buf_LRU_get_free_block: the entry at
 * the call instruction, the return program at the instruction after it (a plain uprobe
 * there, as the loader is told), so no other timed wait of the server traps.
 *
 * Summed per waiter's stack and thread name, so that the report says who waited (user
 * connections, the master thread, purge) and from where. A return probe is safe: these
 * functions wait on condition variables or sleep in a loop, and raise no exception; so is
 * the instruction after a call, as pthread_cond_timedwait always returns there. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"
#include "unwind.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* thread id */
	__type(value, struct flush_wait);
} open_flush_waits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct flush_wait_key);
	__type(value, struct wait_sum);
} flush_waits SEC(".maps");

/* The key is built here, not on the BPF stack: a stack key with its unwound libc frames
 * is larger than the stack allows beside the unwinder's own. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct flush_wait_key);
} flush_wait_scratch SEC(".maps");

static __always_inline int wait_enter(void *ctx, __u32 kind)
{
	struct flush_wait *open, fresh = {};
	__u32 tid = current_tid();

	if (!traced_process())
		return 0;
	open = bpf_map_lookup_elem(&open_flush_waits, &tid);
	if (open && window_unbroken(open->window)) {
		open->nested++; /* a wait inside a wait: the outer one owns the time */
		return 0;
	}
	fresh.start_ns = bpf_ktime_get_ns();
	fresh.window = window_token(ctx);
	fresh.kind = kind;
	bpf_map_update_elem(&open_flush_waits, &tid, &fresh, BPF_ANY);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(log_room_wait_enter)
{
	count_hit(ctx);
	return wait_enter(ctx, FLUSH_WAIT_LOG_ROOM);
}

SEC("uprobe")
int BPF_KPROBE(free_page_flush_enter)
{
	count_hit(ctx);
	return wait_enter(ctx, FLUSH_WAIT_FREE_PAGE);
}

/* Runtime address of the global buf_pool (MariaDB 10.6+), set by the recorder; 0 when unknown. */
const volatile __u64 buf_pool_global = 0;

/* At the call of pthread_cond_timedwait(cond, mutex, abstime) in buf_LRU_get_free_block
 * whose cond discovery confirmed in the code to be &buf_pool.done_free (call_sites.py): the
 * call's arguments are in place. cond is checked again, as it costs nothing beside the trap. */
SEC("uprobe")
int BPF_KPROBE(free_page_cond_wait_enter, void *cond)
{
	count_hit(ctx);
	if (!buf_pool_global || !layout.free_cond || (__u64)cond != buf_pool_global + layout.free_cond)
		return 0;
	return wait_enter(ctx, FLUSH_WAIT_FREE_PAGE);
}

/* buf_flush_wait(lsn), entered only from a log-room wait here (the wait owns the thread's
 * entry in open_flush_waits). */
SEC("uprobe")
int BPF_KPROBE(log_room_cleaner_enter)
{
	__u32 tid = current_tid();
	struct flush_wait *open;

	count_hit(ctx);
	open = bpf_map_lookup_elem(&open_flush_waits, &tid);
	if (open && open->kind == FLUSH_WAIT_LOG_ROOM && !open->nested)
		open->cleaner_start_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(log_room_cleaner_exit)
{
	__u32 tid = current_tid();
	struct flush_wait *open;

	count_hit(ctx);
	open = bpf_map_lookup_elem(&open_flush_waits, &tid);
	if (!open || !open->cleaner_start_ns)
		return 0;
	open->cleaner_ns += bpf_ktime_get_ns() - open->cleaner_start_ns;
	open->cleaner_start_ns = 0;
	open->cleaner_waits++;
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(flush_wait_exit)
{
	struct flush_wait_key *key;
	__u32 tid = current_tid(), zero = 0;
	struct flush_wait *open;
	__u64 ns;

	count_hit(ctx);
	open = bpf_map_lookup_elem(&open_flush_waits, &tid);
	if (!open || span_cut(&open_flush_waits, &tid, open->window))
		return 0;
	if (open->nested) {
		open->nested--;
		return 0;
	}
	ns = bpf_ktime_get_ns() - open->start_ns;
	if (open->kind == FLUSH_WAIT_FREE_PAGE) {
		counter_add(CNT_FREE_PAGE_WAITS, 1);
		counter_add(CNT_FREE_PAGE_WAIT_NS, ns);
		hist_add(HIST_FREE_PAGE_WAIT_US, ns / 1000);
	} else {
		counter_add(CNT_LOG_ROOM_WAITS, 1);
		counter_add(CNT_LOG_ROOM_WAIT_NS, ns);
		hist_add(HIST_LOG_ROOM_WAIT_US, ns / 1000);
		if (open->cleaner_waits) {
			counter_add(CNT_LOG_ROOM_CLEANER_WAITS, 1);
			counter_add(CNT_LOG_ROOM_CLEANER_WAIT_NS, open->cleaner_ns);
		}
	}
	key = bpf_map_lookup_elem(&flush_wait_scratch, &zero);
	if (key) {
		__builtin_memset(key, 0, sizeof(*key));
		key->stack.mode = open->kind;
		user_stack_at(ctx, &key->stack);
		bpf_get_current_comm(key->comm, sizeof(key->comm));
		sum_add(&flush_waits, key, ns, CNT_FLUSH_WAITS_FULL);
	}
	bpf_map_delete_elem(&open_flush_waits, &tid);
	return 0;
}
