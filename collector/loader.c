// SPDX-License-Identifier: GPL-2.0
/* innostall-loader: load the linked BPF object, attach its programs where the caller
 * says (discovery lives in Python), and print the kernel maps as one JSON line per
 * interval on stdout until the duration ends, a signal arrives or the target exits.
 *
 * The loader never decides *what* to trace: `--attach PROG=OFFSET[@PATH]` names a
 * program of the object and the file offset of the instruction to probe. Every link is
 * owned by a file descriptor, so the probes vanish with this process, however it ends.
 *
 * Usage: innostall-loader --binary PATH [--pid PID] [--interval-ms N] [--duration-ms N]
 *                         --attach PROG=OFFSET ... [--verbose]
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
#include <bpf/libbpf.h>
#include "innostall.h"
#include "innostall.skel.h"

#define MAX_ATTACH 64

struct attach_spec {
	const char *prog;
	const char *path; /* NULL: the --binary */
	size_t offset;
	bool retprobe;
	struct bpf_link *link;
};

static struct env {
	const char *binary;
	pid_t pid;
	long interval_ms;
	long duration_ms;
	bool verbose;
	struct attach_spec attach[MAX_ATTACH];
	int nr_attach;
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

static void parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "binary", required_argument, NULL, 'b' },
		{ "pid", required_argument, NULL, 'p' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "duration-ms", required_argument, NULL, 'd' },
		{ "attach", required_argument, NULL, 'a' },
		{ "verbose", no_argument, NULL, 'v' },
		{},
	};
	int c;

	while ((c = getopt_long(argc, argv, "b:p:i:d:a:v", opts, NULL)) != -1) {
		switch (c) {
		case 'b': env.binary = optarg; break;
		case 'p': env.pid = parse_long(optarg, "pid"); break;
		case 'i': env.interval_ms = parse_long(optarg, "interval"); break;
		case 'd': env.duration_ms = parse_long(optarg, "duration"); break;
		case 'a': add_attach(optarg); break;
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

static void attach_all(struct innostall_bpf *obj)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uopts);
	struct bpf_program *prog;
	int i;

	for (i = 0; i < env.nr_attach; i++) {
		struct attach_spec *a = &env.attach[i];

		prog = bpf_object__find_program_by_name(obj->obj, a->prog);
		if (!prog)
			die("no BPF program named '%s'", a->prog);
		uopts.retprobe = !strcmp(bpf_program__section_name(prog), "uretprobe");
		a->link = bpf_program__attach_uprobe_opts(prog, env.pid, a->path ?: env.binary,
							  a->offset, &uopts);
		if (!a->link)
			die("cannot attach %s at %s+0x%zx: %s", a->prog, a->path ?: env.binary,
			    a->offset, strerror(errno));
		a->retprobe = uopts.retprobe;
	}
}

static void detach_all(void)
{
	int i;

	for (i = 0; i < env.nr_attach; i++)
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

static int open_target(void)
{
	if (env.pid <= 0)
		return -1;
	return syscall(SYS_pidfd_open, env.pid, 0);
}

/* Sleep until the next interval; returns false once the traced process has exited. */
static bool wait_interval(int pidfd, long ms)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

	if (pidfd < 0) {
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
		return true;
	}
	return poll(&pfd, 1, ms) <= 0 || !(pfd.revents & POLLIN);
}

int main(int argc, char **argv)
{
	struct innostall_bpf *obj;
	unsigned long long start, deadline, next;
	const char *reason = "signal";
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
	if (innostall_bpf__load(obj))
		die("cannot load the BPF object: %s (run as root, with BTF)", strerror(errno));
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

		if (until > now && !wait_interval(pidfd, (until - now + 999999) / 1000000)) {
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
			next += env.interval_ms * 1000000ULL;
		}
		if (ferror(stdout)) {
			reason = "output-closed";
			break;
		}
	}
	print_snapshot(obj, "final");
	printf("{\"type\":\"end\",\"reason\":\"%s\"}\n", reason);
	fflush(stdout);
	detach_all();
	innostall_bpf__destroy(obj);
	return 0;
}
