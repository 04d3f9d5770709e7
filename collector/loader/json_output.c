// SPDX-License-Identifier: GPL-2.0
/* Every line the loader prints. Strings are ours (the X-macro names of innostall.h and
 * BPF program names), never the server's, so none needs escaping. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "innostall.h"
#include "innostall.skel.h"
#include "governor.h"
#include "json_output.h"
#include "read_views.h"
#include "table_output.h"
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

/* The tables (probes/innostall_tables.h): each with its columns, their kind and role. */
#define COLUMN_ROLE_KEY "key"
#define COLUMN_ROLE_VALUE "value"
#define COLUMN_ROLE_ADDED "added"
#define LOADER_COLUMN_JSON(column, kind, role, value)                                          \
	printf("%s{\"name\":\"%s\",\"kind\":\"%s\",\"role\":\"%s\"}", column_sep, #column, #kind, \
	       COLUMN_ROLE_##role), column_sep = ",";
#define TABLE_JSON(name, line, field, scope, map, key_type, value_type, ROW)                   \
	do {                                                                                   \
		const char *column_sep = "";                                                   \
		printf("%s{\"name\":\"%s\",\"line\":\"%s\",\"field\":\"%s\",\"scope\":\"%s\",\"columns\":[", \
		       sep, #name, line, field, scope);                                       \
		ROW(LOADER_COLUMN_JSON)                                                        \
		printf("]}"), sep = ",";                                                       \
	} while (0);
#define RECORDING_COLUMN_JSON(column, type, role)                                              \
	printf("%s{\"name\":\"%s\",\"type\":\"%s\",\"role\":\"%s\"}", column_sep, #column, #type, \
	       COLUMN_ROLE_##role), column_sep = ",";
#define RECORDING_TABLE_JSON(name, from, scope, COLUMNS)                                       \
	do {                                                                                   \
		const char *column_sep = "";                                                   \
		printf("%s{\"name\":\"%s\",\"from\":\"%s\",\"scope\":\"%s\",\"columns\":[", sep, #name, \
		       from, scope);                                                           \
		COLUMNS(RECORDING_COLUMN_JSON)                                                 \
		printf("]}"), sep = ",";                                                       \
	} while (0);

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
	JSON_LIST("tables", INNOSTALL_TABLES, TABLE_JSON);
	JSON_LIST("recording_tables", INNOSTALL_RECORDING_TABLES, RECORDING_TABLE_JSON);
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

/* A row-lock or commit-order wait by an applier thread in progress (struct role_wait), if
 * its probe has watched it since it began; NULL otherwise. */
static const struct role_wait *open_role_wait(int waits_fd, __u32 tid, const struct governor *gov,
					      struct role_wait *wait)
{
	if (waits_fd < 0 || bpf_map_lookup_elem(waits_fd, &tid, wait) ||
	    !attacher_in_window(&gov->attacher, wait->window))
		return NULL;
	return wait;
}

/* The events the replica's appliers are applying now (applier.bpf.c), begun in their group's
 * current window, and their time so far, split as applier_event_exit splits a whole one;
 * and their row-lock and commit-order waits in progress, charged by role as at their end
 * (the span leaves them out of its own time): gauges from which the report puts a long
 * event's time in the intervals it took. */
static void gauge_open_applier(int spans_fd, int waits_fd, const struct governor *gov, int counters_fd)
{
	__u64 now = now_ns(CLOCK_MONOTONIC), sum[CNT_APPLIER_OPEN_REDO_NS - CNT_APPLIER_OPEN_EVENTS + 1] = {};
	__u64 elapsed, asleep, waited, wait_ns, wait_asleep;
	struct role_wait wait_buf;
	const struct role_wait *wait;
	struct purge_span span;
	__u32 tid, prev, id;
	bool more;

	for (more = !bpf_map_get_next_key(spans_fd, NULL, &tid); more;
	     more = !bpf_map_get_next_key(spans_fd, &prev, &tid)) {
		prev = tid;
		if (bpf_map_lookup_elem(spans_fd, &tid, &span) || span.start_ns > now ||
		    !attacher_in_window(&gov->attacher, span.window))
			continue;
		asleep = span.asleep_ns + (span.asleep_since && span.asleep_since < now ? now - span.asleep_since : 0);
		wait = open_role_wait(waits_fd, tid, gov, &wait_buf);
		wait_ns = wait && wait->since >= span.start_ns && wait->since < now ? now - wait->since : 0;
		wait_asleep = wait_ns && asleep > wait->span_asleep ? asleep - wait->span_asleep : 0;
		elapsed = now - span.start_ns;
		elapsed = elapsed > span.taken_ns + wait_ns ? elapsed - span.taken_ns - wait_ns : 0;
		asleep = asleep > span.taken_asleep + wait_asleep ? asleep - span.taken_asleep - wait_asleep : 0;
		sum[0]++;
		sum[CNT_APPLIER_OPEN_NS - CNT_APPLIER_OPEN_EVENTS] += elapsed;
		if (!attacher_in_window(&gov->attacher, span.sleeps))
			continue; /* its split is not known whole, as at its end */
		waited = span.wait_since && span.wait_since < now ? now - span.wait_since : 0;
		sum[CNT_APPLIER_OPEN_SPLIT_NS - CNT_APPLIER_OPEN_EVENTS] += elapsed;
		sum[CNT_APPLIER_OPEN_CPU_NS - CNT_APPLIER_OPEN_EVENTS] += elapsed > asleep ? elapsed - asleep : 0;
		sum[CNT_APPLIER_OPEN_IO_NS - CNT_APPLIER_OPEN_EVENTS] += span.io_ns;
		sum[CNT_APPLIER_OPEN_LATCH_NS - CNT_APPLIER_OPEN_EVENTS] += span.latch_ns;
		sum[CNT_APPLIER_OPEN_REDO_NS - CNT_APPLIER_OPEN_EVENTS] += span.redo_ns +
			(span.wait_kind == WAIT_REDO && waited && asleep > span.wait_asleep ? asleep - span.wait_asleep : 0);
	}
	for (more = waits_fd >= 0 && !bpf_map_get_next_key(waits_fd, NULL, &tid); more;
	     more = !bpf_map_get_next_key(waits_fd, &prev, &tid)) {
		prev = tid;
		wait = open_role_wait(waits_fd, tid, gov, &wait_buf);
		if (!wait || wait->since >= now)
			continue;
		wait_ns = now - wait->since;
		sum[CNT_APPLIER_OPEN_NS - CNT_APPLIER_OPEN_EVENTS] += wait_ns;
		sum[CNT_APPLIER_OPEN_SPLIT_NS - CNT_APPLIER_OPEN_EVENTS] += wait_ns;
		sum[(wait->kind == WAIT_ROW_LOCK ? CNT_APPLIER_OPEN_ROW_LOCK_NS : CNT_APPLIER_OPEN_COMMIT_WAIT_NS) -
		    CNT_APPLIER_OPEN_EVENTS] += wait_ns;
	}
	for (id = CNT_APPLIER_OPEN_EVENTS; id <= CNT_APPLIER_OPEN_REDO_NS; id++)
		bpf_map_update_elem(counters_fd, &id, &sum[id - CNT_APPLIER_OPEN_EVENTS], BPF_ANY);
}

/* The applier threads that have exited, forgotten (applier.bpf.c's applier_roles): a new
 * thread given one's id later (a connection, after the replica's threads restart) is no
 * applier, and its row-lock waits are not the applier's; a wait it left open with it. */
static void forget_exited_appliers(int roles_fd, int waits_fd, pid_t pid)
{
	__u32 tid, prev, gone[256];
	char task[64];
	int n = 0, i;
	bool more;

	if (pid <= 0)
		return;
	for (more = !bpf_map_get_next_key(roles_fd, NULL, &tid); more && n < 256;
	     more = !bpf_map_get_next_key(roles_fd, &prev, &tid)) {
		prev = tid;
		snprintf(task, sizeof(task), "/proc/%d/task/%u", pid, tid);
		if (access(task, F_OK) && errno == ENOENT)
			gone[n++] = tid;
	}
	for (i = 0; i < n; i++) {
		bpf_map_delete_elem(roles_fd, &gone[i]);
		bpf_map_delete_elem(waits_fd, &gone[i]);
	}
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
	gauge_open_applier(bpf_map__fd(obj->maps.applier_start), bpf_map__fd(obj->maps.role_waits), gov, counters_fd);
	forget_exited_appliers(bpf_map__fd(obj->maps.applier_roles), bpf_map__fd(obj->maps.role_waits), gov->cfg.pid);
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

/* The oldest open read views, before each snapshot: the views that hold purge back. Each
 * view's key (&trx->read_view) lets the recorder match it with the views it reads from the
 * server's memory (collector/server/view_walk.py); the recorder drops it. */
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

		printf("%s{\"key\":%llu,\"tid\":%u,\"pid\":%u,\"opened_ns\":%llu,\"history_at_open\":",
		       i ? "," : "", views[i].key, rv->tid, rv->tgid, rv->opened_ns);
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
