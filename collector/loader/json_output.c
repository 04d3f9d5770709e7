// SPDX-License-Identifier: GPL-2.0
/* Every line the loader prints. Strings are ours (the X-macro names of innostall.h and
 * BPF program names), never the server's, so none needs escaping. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "innostall.h"
#include "innostall.skel.h"
#include "governor.h"
#include "json_output.h"
#include "read_views.h"
#include "trace_helpers.h"

#define SCHEMA_VERSION 1 /* bump when a name changes meaning, not when one is added */

static const char *hist_names[] = {
#define HIST_NAME(id, name, ...) name,
	INNOSTALL_HISTS(HIST_NAME)
};
static const char *counter_names[] = {
#define COUNTER_NAME(id, name, ...) name,
	INNOSTALL_COUNTERS(COUNTER_NAME)
};

/* Each X-macro entry prints itself after sep, the separator the previous one left. */
#define COUNTER_JSON(id, name, kind, unit)                                                    \
	printf("%s{\"name\":\"%s\",\"kind\":\"%s\",\"unit\":\"%s\"}", sep, name, kind, unit), sep = ",";
#define HIST_JSON(id, name, unit, section, title)                                          \
	printf("%s{\"name\":\"%s\",\"unit\":\"%s\",\"section\":\"%s\",\"title\":\"%s\"}", sep, name, \
	       unit, section, title), sep = ",";
#define NAME_JSON(id, name) printf("%s\"%s\"", sep, name), sep = ",";
#define LAYOUT_JSON(field, member, meaning) \
	printf("%s{\"member\":\"%s\",\"meaning\":\"%s\"}", sep, member, meaning), sep = ",";

/* ,"key":[ITEMS] with each item printed by the X-macro entry ITEM of LIST */
#define JSON_LIST(key, LIST, ITEM)          \
	do {                                \
		const char *sep = "";       \
		printf(",\"" key "\":[");   \
		LIST(ITEM)                  \
		printf("]");                \
	} while (0)

void print_schema(void)
{
	printf("{\"type\":\"schema\",\"version\":%d,\"max_slots\":%d,\"max_groups\":%d,"
	       "\"max_attachments\":%d", SCHEMA_VERSION, MAX_SLOTS, MAX_GROUPS, MAX_ATTACHMENTS);
	JSON_LIST("counters", INNOSTALL_COUNTERS, COUNTER_JSON);
	JSON_LIST("hists", INNOSTALL_HISTS, HIST_JSON);
	JSON_LIST("wait_modes", INNOSTALL_WAIT_MODES, NAME_JSON);
	JSON_LIST("latch_models", INNOSTALL_LATCH_MODELS, NAME_JSON);
	JSON_LIST("layout", INNOSTALL_LAYOUT, LAYOUT_JSON);
	printf("}\n");
	fflush(stdout);
}

void print_calibration(const struct hit_cost *cost, bool measured)
{
	printf("{\"type\":\"calibration\",\"entry_ns\":%.0f,\"return_ns\":%.0f,"
	       "\"tracepoint_ns\":%.0f,\"measured\":%s", cost->entry_ns, cost->return_ns,
	       cost->tracepoint_ns, measured ? "true" : "false");
	if (measured)
		printf(",\"entry_range_ns\":[%.0f,%.0f],\"floored\":%s,\"programs_apart\":%s",
		       cost->entry_low_ns, cost->entry_high_ns, cost->floored ? "true" : "false",
		       cost->programs_apart ? "true" : "false");
	printf(",\"indirect_factor\":%.2f", HIT_INDIRECT_FACTOR);
	printf("}\n");
	fflush(stdout);
}

void print_attached(const struct attachment *attach, int nr_attach)
{
	int i;

	printf("{\"type\":\"attached\",\"mono_ns\":%llu,\"real_ns\":%llu,\"programs\":[",
	       now_ns(CLOCK_MONOTONIC), now_ns(CLOCK_REALTIME));
	for (i = 0; i < nr_attach; i++)
		printf("%s{\"prog\":\"%s\",\"offset\":%zu,\"retprobe\":%s,\"tracepoint\":%s,"
		       "\"group\":%u}", i ? "," : "", attach[i].prog, attach[i].offset,
		       attach[i].retprobe ? "true" : "false",
		       attach[i].tracepoint ? "true" : "false", attach[i].group);
	printf("]}\n");
	fflush(stdout);
}

/* Peaks cover one interval each: zero them once printed. A value raised between the read
 * and the zeroing is lost; the next one counts. */
static void reset_peaks(int counters_fd)
{
	__u32 id = CNT_HISTORY_PEAK;
	__u64 zero = 0;

	bpf_map_update_elem(counters_fd, &id, &zero, BPF_ANY);
}

/* Open waits, as their programs keep them per thread: each value begins with its start. */
union open_wait {
	__u64 start_ns; /* bpf_ktime_get_ns's clock: CLOCK_MONOTONIC */
	struct flush_wait flush;
	struct wait_state latch;
};

typedef bool (*open_wait_filter)(const union open_wait *open, const struct governor *gov);

/* The waits open now in one map that keep() accepts, and how long they have waited so far,
 * into two gauges: a wait is counted when it ends, which may be after the recording. */
static void gauge_open_waits(int map_fd, open_wait_filter keep, const struct governor *gov,
			     int counters_fd, __u32 waits_id, __u32 ns_id)
{
	__u64 now = now_ns(CLOCK_MONOTONIC), waits = 0, ns = 0;
	union open_wait open;
	__u32 tid, prev;
	bool more;

	for (more = !bpf_map_get_next_key(map_fd, NULL, &tid); more;
	     more = !bpf_map_get_next_key(map_fd, &prev, &tid)) {
		prev = tid;
		if (bpf_map_lookup_elem(map_fd, &tid, &open) || open.start_ns > now || !keep(&open, gov))
			continue;
		waits++;
		ns += now - open.start_ns;
	}
	bpf_map_update_elem(counters_fd, &waits_id, &waits, BPF_ANY);
	bpf_map_update_elem(counters_fd, &ns_id, &ns, BPF_ANY);
}

/* Writers waiting for the log, and threads waiting for a free page (flush.bpf.c). */
static bool log_room_wait(const union open_wait *open, const struct governor *gov)
{
	return open->flush.kind == FLUSH_WAIT_LOG_ROOM;
}

static bool free_page_wait(const union open_wait *open, const struct governor *gov)
{
	return open->flush.kind == FLUSH_WAIT_FREE_PAGE;
}

/* Latch waits on pages being written out (latch.bpf.c), begun in their group's current
 * window: one a window's edge cut is left in the map but never ends there. */
static bool block_write_wait(const union open_wait *open, const struct governor *gov)
{
	return open->latch.page_io == PAGE_IO_WRITE && attacher_in_window(&gov->attacher, open->latch.window);
}

/* The events the replica's appliers are applying now (applier.bpf.c), begun in their group's
 * current window, and their time so far, split as applier_event_exit splits a whole one:
 * gauges from which the report puts a long event's time in the intervals it took. */
static void gauge_open_applier(int spans_fd, const struct governor *gov, int counters_fd)
{
	__u64 now = now_ns(CLOCK_MONOTONIC), sum[CNT_APPLIER_OPEN_REDO_NS - CNT_APPLIER_OPEN_EVENTS + 1] = {};
	__u64 elapsed, asleep, waited;
	struct purge_span span;
	__u32 tid, prev, id;
	bool more;

	for (more = !bpf_map_get_next_key(spans_fd, NULL, &tid); more;
	     more = !bpf_map_get_next_key(spans_fd, &prev, &tid)) {
		prev = tid;
		if (bpf_map_lookup_elem(spans_fd, &tid, &span) || span.start_ns > now ||
		    !attacher_in_window(&gov->attacher, span.window))
			continue;
		elapsed = now - span.start_ns;
		sum[0]++;
		sum[CNT_APPLIER_OPEN_NS - CNT_APPLIER_OPEN_EVENTS] += elapsed;
		if (!attacher_in_window(&gov->attacher, span.sleeps))
			continue; /* its split is not known whole, as at its end */
		asleep = span.asleep_ns + (span.asleep_since && span.asleep_since < now ? now - span.asleep_since : 0);
		waited = span.wait_since && span.wait_since < now ? now - span.wait_since : 0;
		sum[CNT_APPLIER_OPEN_SPLIT_NS - CNT_APPLIER_OPEN_EVENTS] += elapsed;
		sum[CNT_APPLIER_OPEN_CPU_NS - CNT_APPLIER_OPEN_EVENTS] += elapsed > asleep ? elapsed - asleep : 0;
		sum[CNT_APPLIER_OPEN_IO_NS - CNT_APPLIER_OPEN_EVENTS] += span.io_ns;
		sum[CNT_APPLIER_OPEN_LATCH_NS - CNT_APPLIER_OPEN_EVENTS] += span.latch_ns;
		sum[CNT_APPLIER_OPEN_ROW_LOCK_NS - CNT_APPLIER_OPEN_EVENTS] +=
			span.row_lock_ns + (span.wait_kind == WAIT_ROW_LOCK ? waited : 0);
		sum[CNT_APPLIER_OPEN_COMMIT_WAIT_NS - CNT_APPLIER_OPEN_EVENTS] +=
			span.commit_ns + (span.wait_kind == WAIT_COMMIT_ORDER ? waited : 0);
		sum[CNT_APPLIER_OPEN_REDO_NS - CNT_APPLIER_OPEN_EVENTS] += span.redo_ns +
			(span.wait_kind == WAIT_REDO && waited && asleep > span.wait_asleep ? asleep - span.wait_asleep : 0);
	}
	for (id = CNT_APPLIER_OPEN_EVENTS; id <= CNT_APPLIER_OPEN_REDO_NS; id++)
		bpf_map_update_elem(counters_fd, &id, &sum[id - CNT_APPLIER_OPEN_EVENTS], BPF_ANY);
}

static void note_open_waits(struct innostall_bpf *obj, const struct governor *gov)
{
	int counters_fd = bpf_map__fd(obj->maps.counters);

	gauge_open_waits(bpf_map__fd(obj->maps.open_flush_waits), log_room_wait, gov, counters_fd,
			 CNT_LOG_ROOM_WAITS_OPEN, CNT_LOG_ROOM_OPEN_NS);
	gauge_open_waits(bpf_map__fd(obj->maps.open_flush_waits), free_page_wait, gov, counters_fd,
			 CNT_FREE_PAGE_WAITS_OPEN, CNT_FREE_PAGE_OPEN_NS);
	gauge_open_waits(bpf_map__fd(obj->maps.latch_waits), block_write_wait, gov, counters_fd,
			 CNT_BLOCK_WRITE_WAITS_OPEN, CNT_BLOCK_WRITE_OPEN_NS);
	gauge_open_applier(bpf_map__fd(obj->maps.applier_start), gov, counters_fd);
}

void print_snapshot(struct innostall_bpf *obj, struct governor *gov, const char *type)
{
	int hists_fd = bpf_map__fd(obj->maps.hists);
	int counters_fd = bpf_map__fd(obj->maps.counters);
	struct hist h;
	__u64 value;
	__u32 id;
	int s;

	note_open_waits(obj, gov);
	printf("{\"type\":\"%s\",\"mono_ns\":%llu,\"real_ns\":%llu,\"counters\":{", type,
	       governor_now(gov, CLOCK_MONOTONIC), governor_now(gov, CLOCK_REALTIME));
	for (id = 0; id < NR_COUNTERS; id++) {
		if (bpf_map_lookup_elem(counters_fd, &id, &value))
			value = 0;
		printf("%s\"%s\":%llu", id ? "," : "", counter_names[id], value);
	}
	printf("},\"hists\":{");
	for (id = 0; id < NR_HISTS; id++) {
		if (bpf_map_lookup_elem(hists_fd, &id, &h))
			memset(&h, 0, sizeof(h));
		printf("%s\"%s\":[", id ? "," : "", hist_names[id]);
		for (s = 0; s < MAX_SLOTS; s++)
			printf("%s%llu", s ? "," : "", h.slots[s]);
		printf("]");
	}
	printf("}");
	governor_print(gov, stdout);
	printf("}\n");
	fflush(stdout);
	reset_peaks(counters_fd);
}

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
static void print_frames(int traces_fd, __s32 stack_id)
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

int print_event(void *ctx, void *data, size_t size)
{
	const struct deep_walk_event *e = data;
	__u32 i;

	if (size < sizeof(*e) || e->type != EVENT_DEEP_WALK)
		return 0;
	printf("{\"type\":\"deep_walk\",\"mono_ns\":%llu,\"pid\":%u,\"tid\":%u,\"depth\":%llu,"
	       "\"latency_ns\":%llu,\"index\":%llu,\"scan_index\":%llu,\"stack\":[", e->end_ns,
	       e->pid, e->tid, e->depth, e->latency_ns, e->index, e->scan_index);
	for (i = 0; i < e->nr_frames && i < MAX_STACK_DEPTH; i++)
		printf("%s%llu", i ? "," : "", e->stack[i]);
	printf("]}\n");
	return 0;
}

/* The oldest open read views, before each snapshot: the views that hold purge back. */
void print_read_views(struct innostall_bpf *obj, __u32 flag_offset)
{
	struct open_view views[REPORTED_VIEWS];
	int traces_fd = bpf_map__fd(obj->maps.stack_traces);
	int nr, open, i;

	open = oldest_read_views(obj, flag_offset, views, REPORTED_VIEWS, &nr);
	printf("{\"type\":\"read_views\",\"mono_ns\":%llu,\"open\":%d,\"views\":[",
	       now_ns(CLOCK_MONOTONIC), open);
	for (i = 0; i < nr; i++) {
		const struct read_view *rv = &views[i].rv;

		printf("%s{\"tid\":%u,\"pid\":%u,\"opened_ns\":%llu,\"history_at_open\":",
		       i ? "," : "", rv->tid, rv->tgid, rv->opened_ns);
		if (rv->history < 0)
			printf("null");
		else
			printf("%lld", rv->history);
		printf(",\"seen_open\":%s,\"stack\":[", rv->seen_open ? "true" : "false");
		print_frames(traces_fd, rv->stack_id);
		printf("]}");
	}
	printf("]}\n");
	fflush(stdout);
}

void print_end(const char *reason)
{
	printf("{\"type\":\"end\",\"reason\":\"%s\"}\n", reason);
	fflush(stdout);
}
