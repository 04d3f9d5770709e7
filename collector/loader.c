// SPDX-License-Identifier: GPL-2.0
/* innostall-loader: load the linked BPF object, attach its programs where the caller
 * says (discovery lives in Python), and print the kernel maps as one JSON line per
 * interval on stdout until the duration ends, a signal arrives or the target exits.
 * Events from the ring buffer (deep version walks) are printed as they arrive, one JSON
 * line each, between the interval lines.
 *
 * The loader never decides *what* to trace: `--attach PROG=OFFSET[@PATH]` names a
 * program of the object and the file offset of the instruction to probe. Every link is
 * owned by a file descriptor, so the probes vanish with this process, however it ends.
 *
 * `--set NAME=VALUE` sets a `const volatile` global of the BPF programs before load
 * (e.g. deep_walk_threshold), found by name in the object's BTF.
 *
 * Usage: innostall-loader --binary PATH [--pid PID] [--interval-ms N] [--duration-ms N]
 *                         --attach PROG=OFFSET ... [--set NAME=VALUE ...] [--verbose]
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "innostall.h"
#include "innostall.skel.h"

#define MAX_ATTACH 64
#define MAX_SETTINGS 16

struct attach_spec {
	const char *prog;
	const char *path; /* NULL: the --binary */
	size_t offset;
	bool retprobe;
	struct bpf_link *link;
};

struct setting {
	const char *name;
	long value;
};

static struct env {
	const char *binary;
	pid_t pid;
	long interval_ms;
	long duration_ms;
	bool verbose;
	struct attach_spec attach[MAX_ATTACH];
	int nr_attach;
	struct setting settings[MAX_SETTINGS];
	int nr_settings;
} env = { .interval_ms = 1000, .pid = -1 };

static const char *hist_names[] = {
#define HIST_NAME(id, name, unit) name,
	INNOSTALL_HISTS(HIST_NAME)
};
static const char *counter_names[] = {
#define COUNTER_NAME(id, name) name,
	INNOSTALL_COUNTERS(COUNTER_NAME)
};

static volatile sig_atomic_t exiting;

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("innostall-loader: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !env.verbose)
		return 0;
	if (level == LIBBPF_INFO && !env.verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static void on_signal(int sig)
{
	exiting = 1;
}

static long parse_long(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || *end || v < 0)
		die("invalid %s: '%s'", what, s);
	return v;
}

/* PROG=OFFSET[@PATH]; programs of SEC("uretprobe") are attached to returns. */
static void add_attach(char *arg)
{
	struct attach_spec *a;
	char *eq = strchr(arg, '='), *at;

	if (!eq || env.nr_attach == MAX_ATTACH)
		die("invalid --attach '%s' (want PROG=OFFSET[@PATH])", arg);
	a = &env.attach[env.nr_attach++];
	*eq = '\0';
	a->prog = arg;
	at = strchr(eq + 1, '@');
	if (at) {
		*at = '\0';
		a->path = at + 1;
	}
	a->offset = parse_long(eq + 1, "offset");
}

/* NAME=VALUE, applied to the BPF object's rodata once it is open. */
static void add_setting(char *arg)
{
	char *eq = strchr(arg, '=');

	if (!eq || eq == arg || env.nr_settings == MAX_SETTINGS)
		die("invalid --set '%s' (want NAME=VALUE)", arg);
	*eq = '\0';
	env.settings[env.nr_settings].name = arg;
	env.settings[env.nr_settings++].value = parse_long(eq + 1, arg);
}

static void parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "binary", required_argument, NULL, 'b' },
		{ "pid", required_argument, NULL, 'p' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "duration-ms", required_argument, NULL, 'd' },
		{ "attach", required_argument, NULL, 'a' },
		{ "set", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{},
	};
	int c;

	while ((c = getopt_long(argc, argv, "b:p:i:d:a:s:v", opts, NULL)) != -1) {
		switch (c) {
		case 'b': env.binary = optarg; break;
		case 'p': env.pid = parse_long(optarg, "pid"); break;
		case 'i': env.interval_ms = parse_long(optarg, "interval"); break;
		case 'd': env.duration_ms = parse_long(optarg, "duration"); break;
		case 'a': add_attach(optarg); break;
		case 's': add_setting(optarg); break;
		case 'v': env.verbose = true; break;
		default: exit(2);
		}
	}
	if (!env.binary || !env.nr_attach)
		die("--binary and at least one --attach are required");
	if (env.interval_ms < 10)
		die("--interval-ms must be at least 10");
}

static unsigned long long now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The `const volatile` global called name: its place in .rodata comes from the object's
 * BTF, so new settings need no change here. */
static const struct btf_var_secinfo *find_setting(struct innostall_bpf *obj, const char *name)
{
	const struct btf *btf = bpf_object__btf(obj->obj);
	const struct btf_var_secinfo *var;
	const struct btf_type *sec;
	int id, i;

	id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -1;
	if (id < 0)
		return NULL;
	sec = btf__type_by_id(btf, id);
	var = btf_var_secinfos(sec);
	for (i = 0; i < btf_vlen(sec); i++, var++)
		if (!strcmp(btf__name_by_offset(btf, btf__type_by_id(btf, var->type)->name_off), name))
			return var;
	return NULL;
}

static void apply_settings(struct innostall_bpf *obj)
{
	char *rodata = (char *)obj->rodata;
	int i;

	for (i = 0; i < env.nr_settings; i++) {
		const struct setting *set = &env.settings[i];
		const struct btf_var_secinfo *var = find_setting(obj, set->name);

		if (!var)
			die("no setting named '%s'", set->name);
		switch (var->size) {
		case 4: *(__u32 *)(rodata + var->offset) = set->value; break;
		case 8: *(__u64 *)(rodata + var->offset) = set->value; break;
		default: die("setting '%s' is not a 32- or 64-bit integer", set->name);
		}
	}
}

static bool is_retprobe(struct innostall_bpf *obj, const char *name)
{
	struct bpf_program *prog = bpf_object__find_program_by_name(obj->obj, name);

	if (!prog)
		die("no BPF program named '%s'", name);
	return !strcmp(bpf_program__section_name(prog), "uretprobe");
}

/* Return probes go first: every entry seen after that has its return seen too, so no
 * per-thread state is left behind by a call entered between two attachments. */
static void order_returns_first(struct innostall_bpf *obj)
{
	struct attach_spec sorted[MAX_ATTACH];
	int i, n = 0, pass;

	for (pass = 0; pass < 2; pass++) {
		bool returns = pass == 0;

		for (i = 0; i < env.nr_attach; i++)
			if (is_retprobe(obj, env.attach[i].prog) == returns)
				sorted[n++] = env.attach[i];
	}
	memcpy(env.attach, sorted, n * sizeof(sorted[0]));
}

static void attach_all(struct innostall_bpf *obj)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uopts);
	int i;

	order_returns_first(obj);
	for (i = 0; i < env.nr_attach; i++) {
		struct attach_spec *a = &env.attach[i];

		uopts.retprobe = is_retprobe(obj, a->prog);
		a->link = bpf_program__attach_uprobe_opts(
			bpf_object__find_program_by_name(obj->obj, a->prog), env.pid,
			a->path ?: env.binary, a->offset, &uopts);
		if (!a->link)
			die("cannot attach %s at %s+0x%zx: %s", a->prog, a->path ?: env.binary,
			    a->offset, strerror(errno));
		a->retprobe = uopts.retprobe;
	}
}

/* In reverse: entries go first, so calls still in flight meet their return probes. */
static void detach_all(void)
{
	int i;

	for (i = env.nr_attach - 1; i >= 0; i--)
		bpf_link__destroy(env.attach[i].link);
}

static void print_attached(void)
{
	int i;

	printf("{\"type\":\"attached\",\"mono_ns\":%llu,\"real_ns\":%llu,\"programs\":[",
	       now_ns(CLOCK_MONOTONIC), now_ns(CLOCK_REALTIME));
	for (i = 0; i < env.nr_attach; i++)
		printf("%s{\"prog\":\"%s\",\"offset\":%zu,\"retprobe\":%s}", i ? "," : "",
		       env.attach[i].prog, env.attach[i].offset,
		       env.attach[i].retprobe ? "true" : "false");
	printf("]}\n");
	fflush(stdout);
}

/* One line with the cumulative value of every counter and histogram. */
static void print_snapshot(struct innostall_bpf *obj, const char *type)
{
	int hists_fd = bpf_map__fd(obj->maps.hists);
	int counters_fd = bpf_map__fd(obj->maps.counters);
	struct hist h;
	__u64 value;
	__u32 id;
	int s;

	printf("{\"type\":\"%s\",\"mono_ns\":%llu,\"real_ns\":%llu,\"counters\":{", type,
	       now_ns(CLOCK_MONOTONIC), now_ns(CLOCK_REALTIME));
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
	printf("}}\n");
	fflush(stdout);
}

#define LATCH_TABLES_EVERY 10 /* intervals: bounded output, and a killed recording keeps most */

/* Cumulative latch sums, one line: [space, page_no, waits, ns] per contended block, and
 * [mode, waits, ns, [addresses]] per user stack (innermost first). */
static void print_latch_tables(struct innostall_bpf *obj)
{
	int pages_fd = bpf_map__fd(obj->maps.block_pages);
	int stacks_fd = bpf_map__fd(obj->maps.wait_stacks);
	int traces_fd = bpf_map__fd(obj->maps.stack_traces);
	struct page_key page, prev_page;
	struct stack_key stack, prev_stack;
	__u64 frames[MAX_STACK_DEPTH];
	struct wait_sum sum;
	bool first = true, more;
	int i;

	printf("{\"type\":\"latch_tables\",\"mono_ns\":%llu,\"pages\":[", now_ns(CLOCK_MONOTONIC));
	for (more = !bpf_map_get_next_key(pages_fd, NULL, &page); more;
	     more = !bpf_map_get_next_key(pages_fd, &prev_page, &page)) {
		prev_page = page;
		if (bpf_map_lookup_elem(pages_fd, &page, &sum))
			continue;
		printf("%s[%u,%u,%llu,%llu]", first ? "" : ",", page.space, page.page_no, sum.count,
		       sum.total_ns);
		first = false;
	}
	printf("],\"stacks\":[");
	first = true;
	for (more = !bpf_map_get_next_key(stacks_fd, NULL, &stack); more;
	     more = !bpf_map_get_next_key(stacks_fd, &prev_stack, &stack)) {
		prev_stack = stack;
		if (bpf_map_lookup_elem(stacks_fd, &stack, &sum))
			continue;
		printf("%s[%u,%llu,%llu,[", first ? "" : ",", stack.mode, sum.count, sum.total_ns);
		first = false;
		memset(frames, 0, sizeof(frames));
		if (stack.stack_id >= 0 && !bpf_map_lookup_elem(traces_fd, &stack.stack_id, frames))
			for (i = 0; i < MAX_STACK_DEPTH && frames[i]; i++)
				printf("%s%llu", i ? "," : "", frames[i]);
		printf("]]");
	}
	printf("]}\n");
	fflush(stdout);
}

static int print_event(void *ctx, void *data, size_t size)
{
	const struct deep_walk_event *e = data;
	__u32 i;

	if (size < sizeof(*e) || e->type != EVENT_DEEP_WALK)
		return 0;
	printf("{\"type\":\"deep_walk\",\"mono_ns\":%llu,\"pid\":%u,\"tid\":%u,\"depth\":%llu,"
	       "\"latency_ns\":%llu,\"stack\":[", e->end_ns, e->pid, e->tid, e->depth, e->latency_ns);
	for (i = 0; i < e->nr_frames && i < MAX_STACK_DEPTH; i++)
		printf("%s%llu", i ? "," : "", e->stack[i]);
	printf("]}\n");
	return 0;
}

static void drain_events(struct ring_buffer *rb)
{
	ring_buffer__consume(rb);
	fflush(stdout);
}

static int open_target(void)
{
	if (env.pid <= 0)
		return -1;
	return syscall(SYS_pidfd_open, env.pid, 0);
}

/* Wait up to ms for events, which are printed, or for the target's exit; a signal ends the
 * wait early too. Returns false once the traced process has exited. */
static bool wait_interval(struct ring_buffer *rb, int pidfd, long ms)
{
	struct pollfd fds[2] = {
		{ .fd = ring_buffer__epoll_fd(rb), .events = POLLIN },
		{ .fd = pidfd, .events = POLLIN }, /* poll skips it when negative (no --pid) */
	};

	if (poll(fds, 2, ms) > 0 && (fds[0].revents & POLLIN))
		drain_events(rb);
	return !(fds[1].revents & POLLIN);
}

int main(int argc, char **argv)
{
	struct innostall_bpf *obj;
	struct ring_buffer *rb;
	unsigned long long start, deadline, next;
	const char *reason = "signal";
	unsigned long intervals = 0;
	int pidfd;

	parse_args(argc, argv);
	/* Die with the recorder: an orphaned loader must not keep probes attached. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	libbpf_set_print(libbpf_print);

	obj = innostall_bpf__open();
	if (!obj)
		die("cannot open the BPF object: %s", strerror(errno));
	obj->rodata->targ_tgid = env.pid > 0 ? env.pid : 0;
	apply_settings(obj);
	if (innostall_bpf__load(obj))
		die("cannot load the BPF object: %s (run as root, with BTF)", strerror(errno));
	rb = ring_buffer__new(bpf_map__fd(obj->maps.events), print_event, NULL, NULL);
	if (!rb)
		die("cannot open the event ring buffer: %s", strerror(errno));
	pidfd = open_target();
	if (env.pid > 0 && pidfd < 0)
		die("process %d: %s", env.pid, strerror(errno));
	attach_all(obj);
	print_attached();

	start = now_ns(CLOCK_MONOTONIC);
	deadline = env.duration_ms ? start + env.duration_ms * 1000000ULL : 0;
	next = start + env.interval_ms * 1000000ULL;
	while (!exiting) {
		unsigned long long now = now_ns(CLOCK_MONOTONIC);
		unsigned long long until = deadline && deadline < next ? deadline : next;

		if (until > now && !wait_interval(rb, pidfd, (until - now + 999999) / 1000000)) {
			reason = "target-exited";
			break;
		}
		if (exiting)
			break;
		now = now_ns(CLOCK_MONOTONIC);
		if (deadline && now >= deadline) {
			reason = "duration";
			break;
		}
		if (now >= next) {
			print_snapshot(obj, "interval");
			if (++intervals % LATCH_TABLES_EVERY == 0)
				print_latch_tables(obj);
			next += env.interval_ms * 1000000ULL;
		}
		if (ferror(stdout)) {
			reason = "output-closed";
			break;
		}
	}
	drain_events(rb);
	print_latch_tables(obj);
	print_snapshot(obj, "final");
	printf("{\"type\":\"end\",\"reason\":\"%s\"}\n", reason);
	fflush(stdout);
	detach_all();
	ring_buffer__free(rb);
	innostall_bpf__destroy(obj);
	return 0;
}
