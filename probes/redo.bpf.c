// SPDX-License-Identifier: GPL-2.0
/* Redo written, and by whom: one hit per mini-transaction that writes redo, at the function
 * that reserves its place in the log and is given its length (catalog: redo_write), the
 * second argument: mtr_t::finish_writer<spin, pmem>(mtr, len) (MariaDB 11),
 * mtr_t::finish_write(len) (10.8-10.11), mtr_t::Command::finish_write(len) (MariaDB
 * 10.2-10.4, MySQL 5.7), log_buffer_reserve(log, len) (MySQL 8.0.30+; before, the third).
 * A length past MAX_MTR_BYTES is a pointer read where the length was expected: dropped.
 *
 * The length is the mini-transaction's own bytes. Where the log is cut into 512-byte
 * blocks (MySQL; MariaDB before 10.8) the LSN also counts each block's 16 bytes of header
 * and trailer, so it grows 512/496 times as fast; the report takes the total from the
 * server's LSN where it can read it (collector/server/state.py) and the split from here.
 *
 * A write is charged to purge's coordinator while its thread is inside a batch
 * (trx_purge), to purge's workers while inside a task (purge.bpf.c's spans), else to the
 * rest: user connections, the page cleaner, the master thread... Each thread's bytes are
 * also summed in redo_writers, with the stack of its first write outside purge, from which
 * user space names its role: MariaDB and MySQL before 8.0.27 leave their threads unnamed,
 * so the stack is what tells a connection from the master thread. One stack per thread,
 * not per write. Entry only: nothing changes in the server's stack.
 *
 * Pages made dirty are charged the same way, where the build calls a function to put a
 * clean page on the flush list (page_dirtied, below). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"
#include "unwind.bpf.h"

#define MAX_MTR_BYTES (1ULL << 30) /* a length past this is not one: the symbol is not what we think */
#define MAX_STACK_TRIES 16

/* Threads inside one of purge's coordinator tasks (MariaDB 10.6+: purge_coordinator_callback,
 * which runs trx_purge and then the undo truncation, and on 11.x purge_truncation_callback,
 * which frees the purged undo logs): outside the batch's span, but purge's work and purge's
 * redo (22% of a catch-up's on 11.4.5). Elsewhere the freeing runs inside trx_purge. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32); /* thread id */
	__type(value, __u8);
} coordinator_tasks SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(purge_task_enter)
{
	__u32 tid = current_tid();
	__u8 yes = 1;

	count_hit(ctx);
	if (traced_process())
		bpf_map_update_elem(&coordinator_tasks, &tid, &yes, BPF_ANY);
	return 0;
}

/* A tpool task returns normally; no exception leaves it (the pool would terminate). */
SEC("uretprobe")
int BPF_KRETPROBE(purge_task_exit)
{
	__u32 tid = current_tid();

	count_hit(ctx);
	bpf_map_delete_elem(&coordinator_tasks, &tid);
	return 0;
}

/* Threads that wrote redo, by thread id. A thread that ends leaves its entry (its bytes
 * were written); a map full of them costs the newcomers' attribution, counted in
 * redo_writers_full, not their bytes. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* thread id */
	__type(value, struct redo_writer);
} redo_writers SEC(".maps");

static __always_inline struct redo_writer *writer_of(__u32 tid)
{
	struct redo_writer *w = bpf_map_lookup_elem(&redo_writers, &tid), fresh = {};

	if (w)
		return w;
	bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
	bpf_map_update_elem(&redo_writers, &tid, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&redo_writers, &tid);
}

enum purge_part { NOT_PURGE, PURGE_COORDINATOR, PURGE_WORKERS };

/* Whose work the thread is doing now: purge's coordinator (inside a batch or one of its
 * tasks), purge's workers (inside a task), or neither. */
static __always_inline enum purge_part purge_part_of(__u32 tid)
{
	if (bpf_map_lookup_elem(&batch_start, &tid) || bpf_map_lookup_elem(&coordinator_tasks, &tid))
		return PURGE_COORDINATOR;
	return bpf_map_lookup_elem(&worker_start, &tid) ? PURGE_WORKERS : NOT_PURGE;
}

static __always_inline void charge(struct pt_regs *ctx, __u64 len)
{
	struct redo_writer *w;
	enum purge_part part;
	bool purge = true;
	__u32 tid;

	if (!traced_process() || !len || len > MAX_MTR_BYTES)
		return;
	tid = current_tid();
	counter_add(CNT_REDO_WRITES, 1);
	counter_add(CNT_REDO_BYTES, len);
	part = purge_part_of(tid);
	if (part == PURGE_COORDINATOR)
		counter_add(CNT_REDO_BYTES_PURGE_COORDINATOR, len);
	else if (part == PURGE_WORKERS)
		counter_add(CNT_REDO_BYTES_PURGE_WORKERS, len);
	else
		purge = false;
	w = writer_of(tid);
	if (!w) {
		counter_add(CNT_REDO_WRITERS_FULL, 1);
		return;
	}
	w->writes++; /* only this thread writes its entry */
	w->bytes += len;
	if (purge) {
		w->purge_bytes += len;
	} else if (!w->stack_taken && w->stack_tries < MAX_STACK_TRIES) {
		/* bpf_get_stackid fails when the stack's bucket holds another stack: threads
		 * that all start on one path (a pool's connections) would all fail together,
		 * so a later write, on another path, tries again */
		w->stack_tries++;
		user_stack_at(ctx, &w->stack);
		w->stack_taken = w->stack.stack_id >= 0;
	}
}

SEC("uprobe")
int BPF_KPROBE(redo_write, void *object, __u64 len)
{
	count_hit(ctx);
	charge(ctx, len);
	return 0;
}

/* MySQL 8.0 before the Log_handle lost its lock_no (8.0.15 checked): the 24-byte handle is
 * returned through a hidden pointer in rdi, so &log is in rsi and the length in rdx. */
SEC("uprobe")
int BPF_KPROBE(redo_write_arg3, void *result, void *log, __u64 len)
{
	count_hit(ctx);
	charge(ctx, len);
	return 0;
}

/* A clean page put on the flush list: made dirty by a mini-transaction's commit, in the
 * committing thread (catalog: page_dirtied; buf_flush_insert_into_flush_list, called only
 * for a page whose oldest modification was 0). Charged as redo is: to purge's coordinator,
 * its workers, or the rest. */
SEC("uprobe")
int BPF_KPROBE(page_dirtied)
{
	enum purge_part part;

	count_hit(ctx);
	if (!traced_process())
		return 0;
	counter_add(CNT_PAGES_DIRTIED, 1);
	part = purge_part_of(current_tid());
	if (part == PURGE_COORDINATOR)
		counter_add(CNT_PAGES_DIRTIED_PURGE_COORDINATOR, 1);
	else if (part == PURGE_WORKERS)
		counter_add(CNT_PAGES_DIRTIED_PURGE_WORKERS, 1);
	return 0;
}
