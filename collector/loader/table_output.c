// SPDX-License-Identifier: GPL-2.0
/* The loader's cumulative tables, printed as JSON lines beside the snapshots (json_output.c):
 * contended latches and pages, who waited on them and from where, who released them, who
 * wrote redo, who waited for flushing, the replica's appliers, and the latches purge's and
 * the applier's work waited on. Which tables, and each row's columns, are INNOSTALL_TABLES
 * (probes/innostall_tables.h): the printers below are made from it, so a row is printed as
 * the schema describes it and a new table needs no printer of its own. Stacks go out as
 * return addresses; the recorder folds them. Each table's line holds only its rows that
 * changed since the line before (changed_rows.c): the tables grow with every page and stack
 * seen, and reprinting them whole made up most of a long recording's journal and of the
 * recorder's work. */
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


/* A stack column's value: the kernel's stack and the frames unwound through libc, printed
 * only when taken (a redo writer's, until it first writes outside purge, is not). */
struct stack_at {
	__s32 stack_id;
	const struct unwound *libc;
	bool taken;
};
#define STACK_AT(id, unwound, was_taken) ((struct stack_at){ .stack_id = (id), .libc = (unwound), .taken = (was_taken) })

static void print_stack(int traces_fd, struct stack_at stack)
{
	putchar('[');
	if (stack.taken)
		print_unwound_frames(traces_fd, stack.stack_id, stack.libc);
	putchar(']');
}

/* log2 microsecond buckets up to the last used */
static void print_slots(const __u64 *slots)
{
	int s, used;

	for (used = LATCH_SLOTS; used > 0 && !slots[used - 1]; used--)
		;
	putchar('[');
	for (s = 0; s < used; s++)
		printf("%s%llu", s ? "," : "", slots[s]);
	putchar(']');
}

/* How each kind of column prints (innostall_tables.h lists the kinds); a named column is the
 * recorder's to add. */
#define PRINT_count(v) printf("%llu", (unsigned long long)(v))
#define PRINT_identity(v) printf("%llu", (unsigned long long)(v))
#define PRINT_tid(v) printf("%u", (unsigned int)(v))
#define PRINT_code(v) printf("%u", (unsigned int)(v))
#define PRINT_mode(v) printf("%u", (unsigned int)(v))
#define PRINT_text(v) print_comm(v)
#define PRINT_stack(v) print_stack(traces_fd, v)
#define PRINT_row_id(v) printf("%llu", row_id(&key, sizeof(key)))
#define PRINT_slots(v) print_slots(v)
#define PRINT_named(v)
#define PRINTED_KEY 1
#define PRINTED_VALUE 1
#define PRINTED_ADDED 0
#define PRINT_COLUMN(column, kind, role, v)               \
	if (PRINTED_##role) {                             \
		fputs(sep, stdout);                       \
		sep = ",";                                \
		PRINT_##kind(v);                          \
	}

/* print_rows_NAME: the rows of one table that changed since they were last printed, each as a
 * JSON list of its columns, comma-separated. */
#define TABLE_PRINTER(name, line, field, scope, map, key_type, value_type, ROW)                  \
	static void print_rows_##name(struct innostall_bpf *obj, int traces_fd)                      \
	{                                                                                         \
		static struct changed_rows printed;                                               \
		struct bpf_map *rows = obj->maps.map;                                             \
		int fd = bpf_map__fd(rows);                                                       \
		key_type key, prev;                                                               \
		value_type value;                                                                 \
		bool first = true, more;                                                          \
                                                                                                  \
		(void)traces_fd;                                                                  \
		for (more = !bpf_map_get_next_key(fd, NULL, &key); more;                          \
		     more = !bpf_map_get_next_key(fd, &prev, &key)) {                             \
			const char *sep = "";                                                     \
                                                                                                  \
			prev = key;                                                               \
			if (bpf_map_lookup_elem(fd, &key, &value) ||                              \
			    !row_changed(&printed, bpf_map__max_entries(rows), &key, sizeof(key), \
					 &value, sizeof(value)))                                  \
				continue;                                                         \
			fputs(first ? "[" : ",[", stdout);                                        \
			first = false;                                                            \
			ROW(PRINT_COLUMN)                                                         \
			putchar(']');                                                             \
		}                                                                                 \
	}
INNOSTALL_TABLES(TABLE_PRINTER)

struct table_printer {
	const char *line, *field, *scope;
	void (*print)(struct innostall_bpf *obj, int traces_fd);
};

#define TABLE_ENTRY(name, line, field, scope, ...) { line, field, scope, print_rows_##name },
static const struct table_printer tables[] = { INNOSTALL_TABLES(TABLE_ENTRY) };
#define NR_TABLES (sizeof(tables) / sizeof(tables[0]))

/* The tables of one scope, each line holding its tables (neighbours in the list) under
 * their fields: {"type":LINE,"mono_ns":N,"rows":"changed","FIELD":[ROWS],...} */
static void print_tables(struct innostall_bpf *obj, const char *scope)
{
	int traces_fd = bpf_map__fd(obj->maps.stack_traces);
	const char *line = NULL;
	size_t i;

	for (i = 0; i < NR_TABLES; i++) {
		if (strcmp(tables[i].scope, scope))
			continue;
		if (!line || strcmp(line, tables[i].line)) {
			if (line)
				printf("}\n");
			line = tables[i].line;
			printf("{\"type\":\"%s\",\"mono_ns\":%llu,\"rows\":\"changed\"", line,
			       now_ns(CLOCK_MONOTONIC));
		}
		printf(",\"%s\":[", tables[i].field);
		tables[i].print(obj, traces_fd);
		putchar(']');
	}
	if (line)
		printf("}\n");
	fflush(stdout);
}

void print_latch_tables(struct innostall_bpf *obj)
{
	print_tables(obj, "recording");
}

void print_latches(struct innostall_bpf *obj)
{
	print_tables(obj, "interval");
}
