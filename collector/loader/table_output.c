// SPDX-License-Identifier: GPL-2.0
/* The loader's cumulative tables, printed as JSON lines beside the snapshots (json_output.c):
 * contended latches and pages, who waited on them and from where, who released them, who
 * wrote redo, who waited for flushing, the replica's appliers, and the latches purge's and
 * the applier's work waited on. Stacks go out as return addresses; the recorder folds them. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "innostall.h"
#include "innostall.skel.h"
#include "table_output.h"
#include "trace_helpers.h"

/* [space, page_no, waits, ns] per contended block */
static void print_pages(int pages_fd)
{
	struct page_key page, prev;
	struct wait_sum sum;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(pages_fd, NULL, &page); more;
	     more = !bpf_map_get_next_key(pages_fd, &prev, &page)) {
		prev = page;
		if (bpf_map_lookup_elem(pages_fd, &page, &sum))
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

/* [mode, waits, ns, [addresses]] per user stack, innermost frame first */
static void print_stacks(int stacks_fd, int traces_fd)
{
	struct stack_key stack, prev;
	struct wait_sum sum;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(stacks_fd, NULL, &stack); more;
	     more = !bpf_map_get_next_key(stacks_fd, &prev, &stack)) {
		prev = stack;
		if (bpf_map_lookup_elem(stacks_fd, &stack, &sum))
			continue;
		printf("%s[%u,%llu,%llu,[", first ? "" : ",", stack.mode, sum.count, sum.total_ns);
		first = false;
		print_unwound_frames(traces_fd, stack.stack_id, &stack.libc);
		printf("]]");
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

/* [latch, mode, waker's thread name, waits, ns, [waker's stack]] per latch and holder */
static void print_holders(int holders_fd, int traces_fd)
{
	struct holder_key key, prev;
	struct wait_sum sum;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(holders_fd, NULL, &key); more;
	     more = !bpf_map_get_next_key(holders_fd, &prev, &key)) {
		prev = key;
		if (bpf_map_lookup_elem(holders_fd, &key, &sum))
			continue;
		printf("%s[%llu,%u,", first ? "" : ",", key.latch, key.stack.mode);
		print_comm(key.comm);
		printf(",%llu,%llu,[", sum.count, sum.total_ns);
		first = false;
		print_unwound_frames(traces_fd, key.stack.stack_id, &key.stack.libc);
		printf("]]");
	}
}

/* [kind, id, mode, waits, ns, [addresses]] per latch and user stack, innermost frame first */
static void print_latch_stacks(int stacks_fd, int traces_fd)
{
	struct latch_stack_key key, prev;
	struct wait_sum sum;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(stacks_fd, NULL, &key); more;
	     more = !bpf_map_get_next_key(stacks_fd, &prev, &key)) {
		prev = key;
		if (bpf_map_lookup_elem(stacks_fd, &key, &sum))
			continue;
		printf("%s[%u,%llu,%u,%llu,%llu,[", first ? "" : ",", key.kind, key.id, key.mode,
		       sum.count, sum.total_ns);
		first = false;
		print_unwound_frames(traces_fd, key.stack_id, &key.libc);
		printf("]]");
	}
}

/* [tid, thread name, bytes, purge's bytes, writes, [stack of its first write outside purge]]
 * per thread that wrote redo (redo.bpf.c) */
static void print_redo_writers(int writers_fd, int traces_fd)
{
	struct redo_writer w;
	__u32 tid, prev;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(writers_fd, NULL, &tid); more;
	     more = !bpf_map_get_next_key(writers_fd, &prev, &tid)) {
		prev = tid;
		if (bpf_map_lookup_elem(writers_fd, &tid, &w))
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

/* [kind, thread name, waits, ns, [the waiter's stack]] per kind of flushing wait, waiter's
 * stack and thread name (flush.bpf.c) */
static void print_flush_waits(int waits_fd, int traces_fd)
{
	struct flush_wait_key key, prev;
	struct wait_sum sum;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(waits_fd, NULL, &key); more;
	     more = !bpf_map_get_next_key(waits_fd, &prev, &key)) {
		prev = key;
		if (bpf_map_lookup_elem(waits_fd, &key, &sum))
			continue;
		printf("%s[%u,", first ? "" : ",", key.stack.mode);
		print_comm(key.comm);
		printf(",%llu,%llu,[", sum.count, sum.total_ns);
		first = false;
		print_unwound_frames(traces_fd, key.stack.stack_id, &key.stack.libc);
		printf("]]");
	}
}

/* [tid, thread name, events, ns] per replica applier thread (applier.bpf.c) */
static void print_appliers(int appliers_fd)
{
	struct applier_thread t;
	__u32 tid, prev;
	bool first = true, more;

	for (more = !bpf_map_get_next_key(appliers_fd, NULL, &tid); more;
	     more = !bpf_map_get_next_key(appliers_fd, &prev, &tid)) {
		prev = tid;
		if (bpf_map_lookup_elem(appliers_fd, &tid, &t))
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

	printf("{\"type\":\"latch_tables\",\"mono_ns\":%llu,\"pages\":[", now_ns(CLOCK_MONOTONIC));
	print_pages(bpf_map__fd(obj->maps.block_pages));
	printf("],\"stacks\":[");
	print_stacks(bpf_map__fd(obj->maps.wait_stacks), traces_fd);
	printf("],\"latch_stacks\":[");
	print_latch_stacks(bpf_map__fd(obj->maps.latch_stacks), traces_fd);
	printf("],\"holders\":[");
	print_holders(bpf_map__fd(obj->maps.latch_holders), traces_fd);
	printf("],\"redo_writers\":[");
	print_redo_writers(bpf_map__fd(obj->maps.redo_writers), traces_fd);
	printf("],\"flush_waits\":[");
	print_flush_waits(bpf_map__fd(obj->maps.flush_waits), traces_fd);
	printf("],\"appliers\":[");
	print_appliers(bpf_map__fd(obj->maps.applier_threads));
	printf("]}\n");
	fflush(stdout);
}

/* The wait count of each latch as last printed, so that each interval prints only the
 * latches waited for since: under a scan, thousands of pages may hold a wait or two each, and
 * printing them all every second would fill the journal. Open addressing, twice the map
 * (latches or work_latches) it follows, so it never fills. */
#define PRINTED_SLOTS 16384
#define PRINTED_WORK_SLOTS 8192

struct printed {
	unsigned char key[sizeof(struct work_latch_key)]; /* the larger of the two keys */
	__u64 count;
	bool used;
};

static struct printed printed_latches[PRINTED_SLOTS], printed_work[PRINTED_WORK_SLOTS];

/* The slot for key (of len bytes, whose first member is a struct latch_key): its own, or
 * the free one it would take. */
static struct printed *printed_slot(struct printed *table, unsigned int slots, const void *key, size_t len)
{
	const struct latch_key *latch = key;
	__u64 h = (latch->id ^ (__u64)latch->mode << 56 ^ (__u64)latch->kind << 60) * 0x9E3779B97F4A7C15ULL;
	unsigned int i = (h >> 32) % slots, n;

	if (len == sizeof(struct work_latch_key))
		i = (i + ((const struct work_latch_key *)key)->owner) % slots;
	for (n = 0; n < slots; n++, i = (i + 1) % slots)
		if (!table[i].used || !memcmp(table[i].key, key, len))
			return &table[i];
	return NULL;
}

/* Whether the entry's count changed since it was last printed, noting it printed now. */
static bool changed(struct printed *table, unsigned int slots, const void *key, size_t len, __u64 count)
{
	struct printed *seen = printed_slot(table, slots, key, len);

	if (seen && seen->used && seen->count == count)
		return false;
	if (seen) {
		memcpy(seen->key, key, len);
		seen->count = count;
		seen->used = true;
	}
	return true;
}

/* The latches purge's work (owner 1) and a replica applier's events (2) waited on since the
 * last line, cumulative, before each snapshot (latch.bpf.c's work_latches): [owner, kind,
 * id, mode, waits, ns]. The report names the latches of each phase from them. */
static void print_work_latches(struct innostall_bpf *obj)
{
	int fd = bpf_map__fd(obj->maps.work_latches);
	struct work_latch_key key, prev;
	struct wait_sum sum;
	bool first = true, more;

	printf("{\"type\":\"work_latches\",\"mono_ns\":%llu,\"latches\":[", now_ns(CLOCK_MONOTONIC));
	for (more = !bpf_map_get_next_key(fd, NULL, &key); more;
	     more = !bpf_map_get_next_key(fd, &prev, &key)) {
		prev = key;
		if (bpf_map_lookup_elem(fd, &key, &sum) ||
		    !changed(printed_work, PRINTED_WORK_SLOTS, &key, sizeof(key), sum.count))
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
	int fd = bpf_map__fd(obj->maps.latches);
	struct latch_key key, prev;
	struct latch_sum sum;
	bool first = true, more;
	int s, used;

	printf("{\"type\":\"latches\",\"mono_ns\":%llu,\"latches\":[", now_ns(CLOCK_MONOTONIC));
	for (more = !bpf_map_get_next_key(fd, NULL, &key); more;
	     more = !bpf_map_get_next_key(fd, &prev, &key)) {
		prev = key;
		if (bpf_map_lookup_elem(fd, &key, &sum))
			continue;
		if (!changed(printed_latches, PRINTED_SLOTS, &key, sizeof(key), sum.count))
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
