// SPDX-License-Identifier: GPL-2.0
/* innostall-loader: load the linked BPF object, attach its programs where the caller
 * says (discovery lives in Python), and print the kernel maps as one JSON line per
 * interval on stdout until the duration ends, a signal arrives or the target exits.
 * Events from the ring buffer (deep version walks) are printed as they arrive, one JSON
 * line each, between the interval lines.
 *
 * The loader never decides *what* to trace: `--attach PROG=OFFSET[@PATH][#GROUP]` names a
 * program of the object and the file offset of the instruction to probe; GROUP (1-15) puts
 * it in a sampling group of the cost governor (governor.c), which keeps the probes' cost
 * within `--budget-ppm` of the server's CPU time, using the per-hit cost calibrate.c
 * measures at start. Every link is owned by a file descriptor (uprobe.c), so the probes
 * vanish with this process, however it ends.
 *
 * `--set NAME=VALUE` sets a `const volatile` global of the BPF programs before load
 * (e.g. deep_walk_threshold), found by name in the object's BTF; `--layout MEMBER=VALUE`
 * sets one member of the server's struct layout the latch programs read (innostall.h).
 *
 * The lines it prints are in json_output.c; `--schema` prints the measurement schema
 * (every counter and histogram with its kind and unit) and exits. See usage() below.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
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
#include "attachment.h"
#include "calibrate.h"
#include "run_time.h"
#include "governor.h"
#include "json_output.h"
#include "table_output.h"
#include "trace_helpers.h"
#include "uprobe.h"

#define MAX_SETTINGS 24

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
	bool calibrate_only;
	long budget_ppm;
	struct hit_cost hit_cost; /* given, or measured at start when zero */
	struct attachment attach[MAX_PROBES]; /* the last hits slots are no probe's (innostall.h) */
	int nr_attach;
	struct setting settings[MAX_SETTINGS];
	int nr_settings;
	struct innodb_layout layout;
	const char *unwind_table;
	const char *home_cgroup; /* cgroup.procs to move into once the BPF object is loaded */
	struct state_signals signals; /* --signal: the server's state that opens groups */
} env = { .interval_ms = 1000, .pid = -1 };

static volatile sig_atomic_t exiting;
#define MIN_FINAL_NS 5000000ULL /* see wait_out_sliver */
static unsigned long long last_interval_ns; /* when the last interval's snapshot was printed */

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

#define AFTER_CALL "after-call:"

/* PROG=[after-call:]OFFSET[@PATH][#GROUP]; programs of SEC("uretprobe") are attached to
 * returns, or with after-call: to the instruction after a call, as a plain uprobe: the call's
 * end seen at its call site, so that a callee shared by other callers (libc's) is not probed. */
static void add_attach(char *arg)
{
	struct attachment *a;
	char *eq = strchr(arg, '='), *at, *hash;

	if (!eq || env.nr_attach == MAX_PROBES)
		die("invalid --attach '%s' (want PROG=OFFSET[@PATH][#GROUP])", arg);
	a = &env.attach[env.nr_attach++];
	*eq = '\0';
	a->prog = arg;
	hash = strrchr(eq + 1, '#');
	if (hash) {
		*hash = '\0';
		a->group = parse_long(hash + 1, "group");
		if (a->group >= MAX_GROUPS)
			die("sampling group %u out of range (0-%d)", a->group, MAX_GROUPS - 1);
	}
	at = strchr(eq + 1, '@');
	if (at) {
		*at = '\0';
		a->path = at + 1;
	}
	a->after_call = !strncmp(eq + 1, AFTER_CALL, strlen(AFTER_CALL));
	a->offset = parse_long(eq + 1 + (a->after_call ? strlen(AFTER_CALL) : 0), "offset");
}

/* ENTRY_NS,RETURN_NS,TRACEPOINT_NS */
static void parse_hit_cost(const char *arg)
{
	struct hit_cost *c = &env.hit_cost;

	if (sscanf(arg, "%lf,%lf,%lf", &c->entry_ns, &c->return_ns, &c->tracepoint_ns) != 3 ||
	    c->entry_ns <= 0 || c->return_ns < 0 || c->tracepoint_ns < 0)
		die("invalid --hit-cost '%s' (want ENTRY_NS,RETURN_NS,TRACEPOINT_NS)", arg);
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

/* MEMBER=VALUE: a member of the server's struct layout by its C name (innostall.h). */
static void set_layout(char *arg)
{
	char *eq = strchr(arg, '=');

	if (!eq)
		die("invalid --layout '%s' (want MEMBER=VALUE)", arg);
	*eq = '\0';
#define SET_MEMBER(field, member, meaning)                        \
	if (!strcmp(arg, member)) {                               \
		env.layout.field = parse_long(eq + 1, member);   \
		return;                                           \
	}
	INNOSTALL_LAYOUT(SET_MEMBER)
	die("no layout member named '%s' (innostall-loader --schema lists them)", arg);
}

static void usage(FILE *out)
{
	fputs("usage: innostall-loader --binary PATH [--pid PID] --attach PROG=OFFSET[@PATH][#GROUP] ...\n"
	      "           [--interval-ms N] [--duration-ms N] [--budget-ppm N]\n"
	      "           [--hit-cost ENTRY_NS,RETURN_NS,TRACEPOINT_NS] [--set NAME=VALUE ...]\n"
	      "           [--layout MEMBER=VALUE ...] [--unwind-table PATH] [--home-cgroup PATH]\n"
	      "           [--verbose]\n"
	      "       innostall-loader --calibrate   print the cost of a probe hit and exit\n"
	      "       innostall-loader --schema      print the measurement schema and exit\n"
	      "\n"
	      "Attaches the programs of the linked BPF object at the given file offsets and prints\n"
	      "the kernel maps as one JSON line per interval until the duration ends, a signal\n"
	      "arrives or the target exits. Run by 'innostall record', which chooses what to attach.\n"
	      "\n"
	      "  --attach PROG=OFFSET[@PATH][#GROUP]  program PROG at OFFSET of the binary (or\n"
	      "                                      PATH), in sampling group GROUP (1-15);\n"
	      "                                      after-call:OFFSET puts a return program at the\n"
	      "                                      instruction after a call, as a plain uprobe\n"
	      "  --budget-ppm N      what the probes may cost, in millionths of the server's CPU\n"
	      "                      (0: no limit, every probe stays attached)\n"
	      "  --set NAME=VALUE    a const volatile setting of the BPF programs\n"
	      "  --signal NAME=KIND:ADDRESS:SIZE:COUNT:STRIDE:MODULO:DIVISOR:FLOOR:GROUP[,GROUP]  words of the\n"
	      "                      server's memory (KIND level, count or climb) whose move opens\n"
	      "                      those sampling groups at once (state_signals.h); ADDRESS stdin:\n"
	      "                      fed as NAME=VALUE lines on standard input (KIND on: above FLOOR)\n"
	      "  --layout MEMBER=VALUE  a member of the server's struct layout, e.g.\n"
	      "                      buf_block_t.lock=136 (--schema lists them)\n"
	      "  --unwind-table PATH  libc's frame table (struct cfi_row records, collector/discovery/libc.py),\n"
	      "                      with --set libc_text_lo=,libc_text_hi=,libc_bias=,libc_cfi_rows=\n"
	      "  --home-cgroup PATH  a cgroup.procs file to move into once the BPF object is loaded:\n"
	      "                      started in an idle cgroup (collector/recorder/idle.py), calibration and\n"
	      "                      the governor must not wait\n", out);
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
		{ "signal", required_argument, NULL, 'g' },
		{ "budget-ppm", required_argument, NULL, 'B' },
		{ "hit-cost", required_argument, NULL, 'H' },
		{ "layout", required_argument, NULL, 'L' },
		{ "unwind-table", required_argument, NULL, 'U' },
		{ "home-cgroup", required_argument, NULL, 'G' },
		{ "calibrate", no_argument, NULL, 'C' },
		{ "schema", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	int c;

	while ((c = getopt_long(argc, argv, "b:p:i:d:a:s:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'b': env.binary = optarg; break;
		case 'p': env.pid = parse_long(optarg, "pid"); break;
		case 'i': env.interval_ms = parse_long(optarg, "interval"); break;
		case 'd': env.duration_ms = parse_long(optarg, "duration"); break;
		case 'a': add_attach(optarg); break;
		case 's': add_setting(optarg); break;
		case 'g':
			if (!state_signals_add(&env.signals, optarg))
				die("bad --signal '%s'", optarg);
			break;
		case 'B': env.budget_ppm = parse_long(optarg, "budget"); break;
		case 'H': parse_hit_cost(optarg); break;
		case 'L': set_layout(optarg); break;
		case 'U': env.unwind_table = optarg; break;
		case 'G': env.home_cgroup = optarg; break;
		case 'C': env.calibrate_only = true; break;
		case 'S': print_schema(); exit(0);
		case 'v': env.verbose = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (env.calibrate_only)
		return;
	if (optind < argc)
		die("unexpected argument '%s' (--help lists the options)", argv[optind]);
	if (!env.binary || !env.nr_attach)
		die("--binary and at least one --attach are required (--help lists the options)");
	if (env.interval_ms < 10)
		die("--interval-ms must be at least 10");
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

/* Programs of SEC("uretprobe") are attached to returns (or after a call, as asked), of
 * SEC("tp_btf/...") to their scheduler tracepoint (their offset is 0). */
static void mark_returns(struct innostall_bpf *obj)
{
	int i;

	for (i = 0; i < env.nr_attach; i++) {
		struct bpf_program *prog =
			bpf_object__find_program_by_name(obj->obj, env.attach[i].prog);

		if (!prog)
			die("no BPF program named '%s'", env.attach[i].prog);
		bool ends = !strcmp(bpf_program__section_name(prog), "uretprobe");

		if (env.attach[i].after_call && !ends)
			die("%s is not a return program: after-call: places return programs only",
			    env.attach[i].prog);
		env.attach[i].retprobe = ends && !env.attach[i].after_call;
		env.attach[i].tracepoint = !strncmp(bpf_program__section_name(prog), "tp_btf/", 7);
	}
}

static void measure_hit_cost(struct innostall_bpf *obj)
{
	bool measured = !env.hit_cost.entry_ns;
	int err = measured ? calibrate(obj, &env.hit_cost) : 0;

	if (err)
		die("cannot measure the cost of a probe hit: %s", strerror(-err));
	print_calibration(&env.hit_cost, measured);
}

#define LATCH_TABLES_EVERY 10 /* intervals: bounded output, and a killed recording keeps most */

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

static struct innostall_bpf *load_object(bool programs_timed)
{
	struct innostall_bpf *obj = innostall_bpf__open();

	if (!obj)
		die("cannot open the BPF object: %s", strerror(errno));
	obj->rodata->targ_tgid = env.pid > 0 ? env.pid : 0;
	obj->rodata->kernel_times_programs = programs_timed;
	obj->rodata->layout = env.layout;
	apply_settings(obj);
	/* a row of hit counts per CPU (maps.bpf.h) */
	if (bpf_map__set_max_entries(obj->maps.probe_hits, MAX_ATTACHMENTS * libbpf_num_possible_cpus()))
		die("cannot size the hit counts: %s", strerror(errno));
	uprobe_programs_prepare(obj->obj);
	if (innostall_bpf__load(obj))
		die("cannot load the BPF object: %s (needs root, BTF and Linux 6.6+ for uprobe_multi)",
		    strerror(errno));
	return obj;
}

/* After the rows, the row in force at each page's start, as many as libc_cfi_page_count. */
static void load_cfi_pages(struct innostall_bpf *obj, FILE *f)
{
	int fd = bpf_map__fd(obj->maps.libc_cfi_pages);
	__u32 pages = obj->rodata->libc_cfi_page_count, i, row;

	for (i = 0; i < pages; i++) {
		if (fread(&row, sizeof(row), 1, f) != 1)
			die("%s: %u page entries, the setting says %u", env.unwind_table, i, pages);
		if (bpf_map_update_elem(fd, &i, &row, BPF_ANY))
			die("cannot fill libc's page index: %s", strerror(errno));
	}
}

/* libc's frame table (unwind.bpf.h), read from the file the recorder wrote: as many rows
 * as the libc_cfi_rows setting says, which the programs search, then its page index. */
static void load_unwind_table(struct innostall_bpf *obj)
{
	int fd = bpf_map__fd(obj->maps.libc_cfi);
	__u32 rows = obj->rodata->libc_cfi_rows, i;
	struct cfi_row row;
	FILE *f;

	if (!env.unwind_table || !rows)
		return;
	f = fopen(env.unwind_table, "rb");
	if (!f)
		die("cannot open %s: %s", env.unwind_table, strerror(errno));
	for (i = 0; i < rows; i++) {
		if (fread(&row, sizeof(row), 1, f) != 1)
			die("%s: %u rows, the setting says %u", env.unwind_table, i, rows);
		if (bpf_map_update_elem(fd, &i, &row, BPF_ANY))
			die("cannot fill libc's frame table: %s", strerror(errno));
	}
	load_cfi_pages(obj, f);
	fclose(f);
}

/* Loading the BPF object ran in the idle cgroup the recorder started us in, on CPU time the
 * server left. Calibration times traps, and a task preempted at every turn scatters its
 * rounds (one return under a saturating load came out at the floor); the governor must
 * close sampling windows on time: both run in the cgroup we came from. A failure leaves us
 * idle, which is only slower. */
static void leave_idle_cgroup(void)
{
	char pid[24];
	int fd, len;

	if (!env.home_cgroup)
		return;
	len = snprintf(pid, sizeof(pid), "%d\n", getpid());
	fd = open(env.home_cgroup, O_WRONLY);
	if (fd < 0 || write(fd, pid, len) != len)
		warn("cannot leave the idle cgroup for %s: %s", env.home_cgroup, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static unsigned long long earliest(unsigned long long a, unsigned long long b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/* Snapshots every interval until the duration ends, a signal comes or the target exits;
 * between them, events are printed. */
static const char *trace(struct innostall_bpf *obj, struct governor *gov, struct ring_buffer *rb,
			 int pidfd)
{
	unsigned long long start = now_ns(CLOCK_MONOTONIC), now, until;
	unsigned long long deadline = env.duration_ms ? start + env.duration_ms * 1000000ULL : 0;
	unsigned long long next = start + env.interval_ms * 1000000ULL;
	unsigned long intervals = 0;

	while (!exiting) {
		now = now_ns(CLOCK_MONOTONIC);
		until = earliest(deadline, next);
		if (until > now && !wait_interval(rb, pidfd, (until - now + 999999) / 1000000))
			return "target-exited";
		if (exiting)
			break;
		now = now_ns(CLOCK_MONOTONIC);
		if (deadline && now >= deadline)
			return "duration";
		if (now >= next) {
			print_read_views(obj, env.layout.view_open_flag);
			print_latches(obj);
			print_snapshot(obj, gov, "interval");
			last_interval_ns = now_ns(CLOCK_MONOTONIC);
			if (++intervals % LATCH_TABLES_EVERY == 0)
				print_latch_tables(obj);
			/* After a stall (a reader that stopped reading blocks our writes), the
			 * snapshot just printed covers the missed intervals: skip them rather
			 * than print one empty interval for each. So too the next one, when it
			 * would come within half an interval: a snapshot taken late (a busy
			 * machine) is not followed by a sliver of an interval. */
			do
				next += env.interval_ms * 1000000ULL;
			while (next <= now_ns(CLOCK_MONOTONIC) + env.interval_ms * 500000ULL);
		}
		if (ferror(stdout))
			return "output-closed";
	}
	return "signal";
}

/* The final snapshot comes at least MIN_FINAL_NS after the last interval's. A report
 * gives times to the millisecond: a final interval of a fraction of one would print the
 * same end as the interval before it, and no reader could tell which of the two a span
 * ending there holds. A signal that lands just after a snapshot waits out the sliver. */
static void wait_out_sliver(void)
{
	unsigned long long since = now_ns(CLOCK_MONOTONIC) - last_interval_ns;
	struct timespec rest = { 0, 0 };

	if (!last_interval_ns || since >= MIN_FINAL_NS)
		return;
	rest.tv_nsec = MIN_FINAL_NS - since;
	while (nanosleep(&rest, &rest) && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	struct governor_config config;
	struct innostall_bpf *obj;
	struct ring_buffer *rb;
	struct governor gov;
	const char *reason;
	bool programs_timed;
	int pidfd;

	parse_args(argc, argv);
	/* Die with the recorder: an orphaned loader must not keep probes attached. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	libbpf_set_print(libbpf_print);

	/* before the load: the programs that time their own runs do so only where it will not */
	programs_timed = run_time_start();
	if (!programs_timed)
		warn("the kernel will not time our programs (%s): a hit counts as the calibrated one",
		     strerror(errno));
	obj = load_object(programs_timed);
	leave_idle_cgroup(); /* calibration times traps: preempted, its rounds scatter */
	measure_hit_cost(obj);
	if (env.calibrate_only) {
		innostall_bpf__destroy(obj);
		return 0;
	}
	mark_returns(obj);
	rb = ring_buffer__new(bpf_map__fd(obj->maps.events), print_event, NULL, NULL);
	if (!rb)
		die("cannot open the event ring buffer: %s", strerror(errno));
	pidfd = open_target();
	if (env.pid > 0 && pidfd < 0)
		die("process %d: %s", env.pid, strerror(errno));
	config = (struct governor_config){ .budget_ppm = env.budget_ppm, .cost = env.hit_cost,
					   .pid = env.pid, .binary = env.binary,
					   .interval_ms = env.interval_ms, .signals = &env.signals };
	load_unwind_table(obj);
	governor_start(&gov, obj, env.attach, env.nr_attach, &config);
	print_attached(env.attach, env.nr_attach);

	reason = trace(obj, &gov, rb, pidfd);
	wait_out_sliver();
	/* Detach first: the last tables then hold every wait the last counters count (a wait
	 * that ended while a slow reader held up our prints was counted, not tabled), and the
	 * probes go as soon as we are told to stop. */
	governor_stop(&gov);
	drain_events(rb);
	print_latch_tables(obj);
	print_latches(obj);
	print_snapshot(obj, &gov, "final");
	print_end(reason);
	ring_buffer__free(rb);
	innostall_bpf__destroy(obj);
	return 0;
}
