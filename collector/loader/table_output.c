// SPDX-License-Identifier: GPL-2.0
/* The loader's cumulative tables, printed as JSON lines beside the snapshots (json_output.c):
 * contended latches and pages, who waited on them and from where, who released them, who
 * wrote redo, who waited for flushing, the replica's appliers, and the latches purge's and
 * the applier's work waited on. Stacks go out as return addresses; the recorder folds them.
 * Each table's line holds only its rows that changed since the line before (changed_rows.c):
 * the tables grow with every page and stack seen, and reprinting them whole made up most of
 * a long recording's journal and of the recorder's work. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "innostall.h"
#include "innostall.skel.h"
#include "changed_rows.h"
#include "table_output.h"
#include "trace_helpers.h"

/* [space, page_no, waits, ns] per contended block */
static void print_pages(struct bpf_map *map)
{
	static struct changed_rows printed;
	int pages_fd = bpf_map__fd(map);
	struct page_key page, prev;
	struct wait_sum sum;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(pages_fd, NULL, &page); more;
	     more = !bpf_map_get_next_key(pages_fd, &prev, &page)) {
		prev = page;
		if (bpf_map_lookup_elem(pages_fd, &page, &sum) ||
		    !row_changed(&printed, bpf_map__max_entries(map), &page, sizeof(page), &sum, sizeof(sum)))
			continue;
		printf("%s[%u,%u,%llu,%llu]", first ? "" : ",", page.space, page.page_no, sum.count,
		       sum.total_ns);
		first = false;
	}
}

/* The return addresses of a user stack, innermost first, comma-separated; none when the
 * stack could not be taken (a negative id) or has left the map. */
void print_frames(int traces_fd, __s32 stack_id)
{
	__u64 frames[MAX_STACK_DEPTH] = {};
	int i;

	if (stack_id < 0 || bpf_map_lookup_elem(traces_fd, &stack_id, frames))
		return;
	for (i = 0; i < MAX_STACK_DEPTH && frames[i]; i++)
		printf("%s%llu", i ? "," : "", frames[i]);
}

/* As print_frames, with the frames unwound through libc spliced in after the first
 * (innostall.h, struct unwound): the kernel's walk from the frame pointer resumes above
 * the server frame that called libc, unless libc code had moved the frame pointer. */
static void print_unwound_frames(int traces_fd, __s32 stack_id, const struct unwound *libc)
{
	__u64 frames[MAX_STACK_DEPTH] = {};
	__u32 i, n = libc->nr < UNWOUND_FRAMES ? libc->nr : UNWOUND_FRAMES;

	if (!n) {
		print_frames(traces_fd, stack_id);
		return;
	}
	if (stack_id < 0 || bpf_map_lookup_elem(traces_fd, &stack_id, frames))
		return;
	printf("%llu", frames[0]);
	for (i = 0; i < n; i++)
		printf(",%llu", libc->pc[i]);
	for (i = 1; !libc->fp_lost && i < MAX_STACK_DEPTH && frames[i]; i++)
		printf(",%llu", frames[i]);
}

/* [mode, waits, ns, [addresses], row id] per user stack, innermost frame first: the
 * row id (changed_rows.h) tells apart stacks whose frames print alike */
static void print_stacks(struct bpf_map *map, int traces_fd)
{
	static struct changed_rows printed;
	int stacks_fd = bpf_map__fd(map);
	struct stack_key stack, prev;
	struct wait_sum sum;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(stacks_fd, NULL, &stack); more;
	     more = !bpf_map_get_next_key(stacks_fd, &prev, &stack)) {
		prev = stack;
		if (bpf_map_lookup_elem(stacks_fd, &stack, &sum) ||
		    !row_changed(&printed, bpf_map__max_entries(map), &stack, sizeof(stack), &sum, sizeof(sum)))
			continue;
		printf("%s[%u,%llu,%llu,[", first ? "" : ",", stack.mode, sum.count, sum.total_ns);
		first = false;
		print_unwound_frames(traces_fd, stack.stack_id, &stack.libc);
		printf("],%llu]", row_id(&stack, sizeof(stack)));
	}
}

/* A thread name, as JSON: printable ASCII kept, anything else (and quotes) as '?'. */
static void print_comm(const char *comm)
{
	int i;

	putchar('"');
	for (i = 0; i < COMM_LEN && comm[i]; i++)
		putchar(comm[i] >= 0x20 && comm[i] < 0x7f && comm[i] != '"' && comm[i] != '\\' ?
			comm[i] : '?');
	putchar('"');
}

/* [latch, mode, waker's thread name, waits, ns, [waker's stack], row id] per latch and holder */
static void print_holders(struct bpf_map *map, int traces_fd)
{
	static struct changed_rows printed;
	int holders_fd = bpf_map__fd(map);
	struct holder_key key, prev;
	struct wait_sum sum;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(holders_fd, NULL, &key); more;
	     more = !bpf_map_get_next_key(holders_fd, &prev, &key)) {
		prev = key;
		if (bpf_map_lookup_elem(holders_fd, &key, &sum) ||
		    !row_changed(&printed, bpf_map__max_entries(map), &key, sizeof(key), &sum, sizeof(sum)))
			continue;
		printf("%s[%llu,%u,", first ? "" : ",", key.latch, key.stack.mode);
		print_comm(key.comm);
		printf(",%llu,%llu,[", sum.count, sum.total_ns);
		first = false;
		print_unwound_frames(traces_fd, key.stack.stack_id, &key.stack.libc);
		printf("],%llu]", row_id(&key, sizeof(key)));
	}
}

/* [kind, id, mode, waits, ns, [addresses], row id] per latch and user stack, innermost frame first */
static void print_latch_stacks(struct bpf_map *map, int traces_fd)
{
	static struct changed_rows printed;
	int stacks_fd = bpf_map__fd(map);
	struct latch_stack_key key, prev;
	struct wait_sum sum;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(stacks_fd, NULL, &key); more;
	     more = !bpf_map_get_next_key(stacks_fd, &prev, &key)) {
		prev = key;
		if (bpf_map_lookup_elem(stacks_fd, &key, &sum) ||
		    !row_changed(&printed, bpf_map__max_entries(map), &key, sizeof(key), &sum, sizeof(sum)))
			continue;
		printf("%s[%u,%llu,%u,%llu,%llu,[", first ? "" : ",", key.kind, key.id, key.mode,
		       sum.count, sum.total_ns);
		first = false;
		print_unwound_frames(traces_fd, key.stack_id, &key.libc);
		printf("],%llu]", row_id(&key, sizeof(key)));
	}
}

/* [tid, thread name, bytes, purge's bytes, writes, [stack of its first write outside purge]]
 * per thread that wrote redo (redo.bpf.c) */
static void print_redo_writers(struct bpf_map *map, int traces_fd)
{
	static struct changed_rows printed;
	int writers_fd = bpf_map__fd(map);
	struct redo_writer w;
	__u32 tid, prev;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(writers_fd, NULL, &tid); more;
	     more = !bpf_map_get_next_key(writers_fd, &prev, &tid)) {
		prev = tid;
		if (bpf_map_lookup_elem(writers_fd, &tid, &w) ||
		    !row_changed(&printed, bpf_map__max_entries(map), &tid, sizeof(tid), &w, sizeof(w)))
			continue;
		printf("%s[%u,", first ? "" : ",", tid);
		print_comm(w.comm);
		printf(",%llu,%llu,%llu,[", w.bytes, w.purge_bytes, w.writes);
		first = false;
		if (w.stack_taken)
			print_unwound_frames(traces_fd, w.stack.stack_id, &w.stack.libc);
		printf("]]");
	}
}

/* [kind, thread name, waits, ns, [the waiter's stack], row id] per kind of flushing wait, waiter's
 * stack and thread name (flush.bpf.c) */
static void print_flush_waits(struct bpf_map *map, int traces_fd)
{
	static struct changed_rows printed;
	int waits_fd = bpf_map__fd(map);
	struct flush_wait_key key, prev;
	struct wait_sum sum;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(waits_fd, NULL, &key); more;
	     more = !bpf_map_get_next_key(waits_fd, &prev, &key)) {
		prev = key;
		if (bpf_map_lookup_elem(waits_fd, &key, &sum) ||
		    !row_changed(&printed, bpf_map__max_entries(map), &key, sizeof(key), &sum, sizeof(sum)))
			continue;
		printf("%s[%u,", first ? "" : ",", key.stack.mode);
		print_comm(key.comm);
		printf(",%llu,%llu,[", sum.count, sum.total_ns);
		first = false;
		print_unwound_frames(traces_fd, key.stack.stack_id, &key.stack.libc);
		printf("],%llu]", row_id(&key, sizeof(key)));
	}
}

/* [tid, thread name, events, ns] per replica applier thread (applier.bpf.c) */
static void print_appliers(struct bpf_map *map)
{
	static struct changed_rows printed;
	int appliers_fd = bpf_map__fd(map);
	struct applier_thread t;
	__u32 tid, prev;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(appliers_fd, NULL, &tid); more;
	     more = !bpf_map_get_next_key(appliers_fd, &prev, &tid)) {
		prev = tid;
		if (bpf_map_lookup_elem(appliers_fd, &tid, &t) ||
		    !row_changed(&printed, bpf_map__max_entries(map), &tid, sizeof(tid), &t, sizeof(t)))
			continue;
		printf("%s[%u,", first ? "" : ",", tid);
		print_comm(t.comm);
		printf(",%llu,%llu]", t.events, t.apply_ns);
		first = false;
	}
}

void print_latch_tables(struct innostall_bpf *obj)
{
	int traces_fd = bpf_map__fd(obj->maps.stack_traces);

	printf("{\"type\":\"latch_tables\",\"mono_ns\":%llu,\"rows\":\"changed\",\"pages\":[",
	       now_ns(CLOCK_MONOTONIC));
	print_pages(obj->maps.block_pages);
	printf("],\"stacks\":[");
	print_stacks(obj->maps.wait_stacks, traces_fd);
	printf("],\"latch_stacks\":[");
	print_latch_stacks(obj->maps.latch_stacks, traces_fd);
	printf("],\"holders\":[");
	print_holders(obj->maps.latch_holders, traces_fd);
	printf("],\"redo_writers\":[");
	print_redo_writers(obj->maps.redo_writers, traces_fd);
	printf("],\"flush_waits\":[");
	print_flush_waits(obj->maps.flush_waits, traces_fd);
	printf("],\"appliers\":[");
	print_appliers(obj->maps.applier_threads);
	printf("]}\n");
	fflush(stdout);
}

/* The latches purge's work (owner 1) and a replica applier's events (2) waited on since the
 * last line, cumulative, before each snapshot (latch.bpf.c's work_latches): [owner, kind,
 * id, mode, waits, ns]. The report names the latches of each phase from them. */
static void print_work_latches(struct innostall_bpf *obj)
{
	static struct changed_rows printed;
	int fd = bpf_map__fd(obj->maps.work_latches);
	struct work_latch_key key, prev;
	struct wait_sum sum;
	bool first = true, more;

	printf("{\"type\":\"work_latches\",\"mono_ns\":%llu,\"latches\":[", now_ns(CLOCK_MONOTONIC));
	for (more = !bpf_map_get_next_key(fd, NULL, &key); more;
	     more = !bpf_map_get_next_key(fd, &prev, &key)) {
		prev = key;
		if (bpf_map_lookup_elem(fd, &key, &sum) ||
		    !row_changed(&printed, bpf_map__max_entries(obj->maps.work_latches), &key, sizeof(key),
				 &sum, sizeof(sum)))
			continue;
		printf("%s[%u,%u,%llu,%u,%llu,%llu]", first ? "" : ",", key.owner, key.latch.kind,
		       key.latch.id, key.latch.mode, sum.count, sum.total_ns);
		first = false;
	}
	printf("]}\n");
}

/* Every latch waited for since the last line, cumulative, before each snapshot (the snapshot
 * that follows owns it): [kind, id, mode, waits, ns, max_ns, address, [log2 us slots up to
 * the last used]]. A latch not printed is unchanged. Then the same of purge's and the
 * applier's work (print_work_latches). */
void print_latches(struct innostall_bpf *obj)
{
	static struct changed_rows printed;
	int fd = bpf_map__fd(obj->maps.latches);
	struct latch_key key, prev;
	struct latch_sum sum;
	bool first = true, more;
	int s, used;

	printf("{\"type\":\"latches\",\"mono_ns\":%llu,\"latches\":[", now_ns(CLOCK_MONOTONIC));
	for (more = !bpf_map_get_next_key(fd, NULL, &key); more;
	     more = !bpf_map_get_next_key(fd, &prev, &key)) {
		prev = key;
		if (bpf_map_lookup_elem(fd, &key, &sum) ||
		    !row_changed(&printed, bpf_map__max_entries(obj->maps.latches), &key, sizeof(key),
				 &sum, sizeof(sum)))
			continue;
		printf("%s[%u,%llu,%u,%llu,%llu,%llu,%llu,[", first ? "" : ",", key.kind, key.id,
		       key.mode, sum.count, sum.total_ns, sum.max_ns, sum.latch);
		first = false;
		for (used = LATCH_SLOTS; used > 0 && !sum.slots[used - 1]; used--)
			;
		for (s = 0; s < used; s++)
			printf("%s%llu", s ? "," : "", sum.slots[s]);
		printf("]]");
	}
	printf("]}\n");
	print_work_latches(obj);
}
