// SPDX-License-Identifier: GPL-2.0
/* What a probe hit costs here: the loader probes calibration targets, functions of its
 * own, with programs shaped like ours (probes/calibrate.bpf.c), and times calls to it
 * bare, with an entry probe, then with entry and return probes. Each call is timed alone on
 * the monotonic clock (read in user space, the same few ns in every timing, so it cancels)
 * and a timing is the median of its calls: a call that an interrupt or another thread cut
 * into lands in the tail the median ignores.
 *
 * A busy server comes to each trap with the caches full of its own work, so the kernel's
 * uprobe path and our maps miss there; timed with hot caches, a hit costs half of what it
 * costs in the server. So the L2 cache is flushed before each call (a pass over a buffer of
 * its size), in the bare timing too, and the difference is the hit. The pass stays outside
 * the clock: it takes ~50 us, and timed with it the hit was 2% of what the clock saw.
 *
 * Like the server's functions, the targets start with `push %rbp`, an instruction the
 * kernel emulates instead of single-stepping it; a probed instruction that must be
 * single-stepped costs about five times more here. They are written in assembly so that no
 * compiler can drop that prologue from a leaf function.
 *
 * A loaded machine makes any one timing noisy, and the fastest of several bare timings
 * against the fastest of several probed ones could come out equal: a hit that costs
 * nothing, and a governor that never samples. So three identical functions are timed in
 * turn, round after round: one bare, one with an entry probe, one with both; each round
 * gives a difference, and the median of the rounds is the cost. A median below what a trap
 * can cost on any x86-64 kernel (MIN_ENTRY_NS, MIN_RETURN_NS) is timed again, twice at
 * most (one return in 20 starts under a flat-out load came out below); still below, it is
 * floored there, and said.
 *
 * The scheduler tracepoints run at every switch and wakeup of the server's threads, tens of
 * thousands of times a second, and most runs stop after a test or two: what matters is
 * the kernel's dispatch to the program. It is timed on the syscall tracepoint, round after
 * round, a cheap syscall bare and with a program that stops after the same tests.
 *
 * Rounds of 300 calls a timing, not 1,000: the rounds' spread comes from the machine, not
 * from the calls' count. Six starts of each, interleaved on a busy 2-core VM, gave entry
 * medians of 685-1,342 ns (1,000 calls: 729-1,388) and the calibration took 0.7-2.0 s
 * instead of 1.8-3.5 s, at every start of every recording.
 *
 * When the kernel times our programs (run_time.c), the governor adds each program's own
 * run time to its hits, so what is kept here is the trap alone: the calibration programs'
 * average run is taken off each median. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
#include "innostall.h"
#include "innostall.skel.h"
#include "calibrate.h"
#include "attachment.h"
#include "attacher.h"
#include "trace_helpers.h"
#include "uprobe.h"
#include "run_time.h"

#define CALLS 300 /* per timing: ~15 ms each, most of it the evictions; see below */
#define ROUNDS 7   /* each times the three functions in turn */
#define ATTEMPTS 3 /* rounds of seven taken again while a median comes out below its floor */
#define CACHE_LINE 64
/* Floors: an int3 trap, the kernel's uprobe lookup and return to user space cost more than
 * this on any x86-64 machine (0.9 us an entry here with warm caches, the cheapest case);
 * the return probe adds a second trap at the hijacked return address. */
#define MIN_ENTRY_NS 500.0
#define MIN_RETURN_NS 200.0
/* A tracepoint's dispatch to a BPF program (migrate_disable, RCU, the recursion guard) and
 * a map lookup or two cost more than this anywhere. */
#define MIN_TRACEPOINT_NS 20.0
#define SYSCALLS 2000 /* per tracepoint timing: about 1 ms each */

/* Three copies of one function: timed bare, with an entry probe, with entry and return. */
#define CALIBRATION_TARGET(name)                 \
	int name(int x);                         \
	asm(".text\n"                            \
	    ".globl " #name "\n"                 \
	    ".type " #name ", @function\n"       \
	    #name ":\n"                          \
	    "	push %rbp\n"                      \
	    "	mov %rsp, %rbp\n"                 \
	    "	lea 1(%rdi), %eax\n"              \
	    "	pop %rbp\n"                       \
	    "	ret\n"                            \
	    ".size " #name ", . - " #name "\n");
CALIBRATION_TARGET(calibration_bare)
CALIBRATION_TARGET(calibration_entry)
CALIBRATION_TARGET(calibration_both)

static volatile char *cold;
static long cold_size;

/* Evict what the last call left in the L2 cache. */
static void chill(void)
{
	long i;

	for (i = 0; i < cold_size; i += CACHE_LINE)
		cold[i]++;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *values, int n)
{
	qsort(values, n, sizeof(*values), by_value);
	return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

/* A call's typical cost, eviction excluded: the median of its calls, each timed alone. */
static double ns_per_call(int (*target)(int))
{
	static double took[CALLS];
	volatile int sink = 0;
	int i;

	for (i = 0; i < CALLS; i++) {
		unsigned long long start;

		chill();
		start = now_ns(CLOCK_MONOTONIC);
		sink += target(i);
		took[i] = now_ns(CLOCK_MONOTONIC) - start;
	}
	return median(took, CALLS);
}

struct run_mark {
	unsigned long long ns, runs;
};

static struct run_mark run_mark(struct bpf_program *prog)
{
	struct run_mark mark = {};

	run_time_of(prog, &mark.ns, &mark.runs);
	return mark;
}

/* A program's average run since `was`, as the kernel timed it; 0 when it does not. */
static double average_run_since(struct bpf_program *prog, struct run_mark was)
{
	struct run_mark now = run_mark(prog);

	return now.runs > was.runs ? (double)(now.ns - was.ns) / (now.runs - was.runs) : 0;
}

/* Rounds of the three timings in turn: the entry and return differences of each, less
 * the calibration programs' own runs when the governor counts programs apart. */
static void time_rounds(struct innostall_bpf *obj, struct hit_cost *cost)
{
	struct run_mark enter = run_mark(obj->progs.calibrate_enter);
	struct run_mark exit = run_mark(obj->progs.calibrate_exit);
	double entry[ROUNDS], ret[ROUNDS], enter_run, exit_run;
	int round;

	for (round = 0; round < ROUNDS; round++) {
		double bare = ns_per_call(calibration_bare);
		double with_entry = ns_per_call(calibration_entry);
		double with_both = ns_per_call(calibration_both);

		entry[round] = with_entry - bare;
		ret[round] = with_both - with_entry;
	}
	enter_run = average_run_since(obj->progs.calibrate_enter, enter);
	exit_run = average_run_since(obj->progs.calibrate_exit, exit);
	cost->programs_apart = run_time_on();
	cost->entry_ns = median(entry, ROUNDS) - enter_run;
	cost->return_ns = median(ret, ROUNDS) - exit_run;
	/* The spread is that of the middle rounds (sorted by median()): under load one bare
	 * timing in seven may catch an interrupt, and its round alone would say a hit can cost
	 * less than nothing. */
	cost->entry_low_ns = entry[1] - enter_run;
	cost->entry_high_ns = entry[ROUNDS - 2] - enter_run;
	cost->floored = cost->entry_ns < MIN_ENTRY_NS || cost->return_ns < MIN_RETURN_NS;
	if (cost->entry_ns < MIN_ENTRY_NS)
		cost->entry_ns = MIN_ENTRY_NS;
	if (cost->return_ns < MIN_RETURN_NS)
		cost->return_ns = MIN_RETURN_NS;
}

static double ns_per_syscall(void)
{
	unsigned long long start = now_ns(CLOCK_THREAD_CPUTIME_ID);
	int i;

	for (i = 0; i < SYSCALLS; i++)
		syscall(SYS_getppid);
	return (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - start) / SYSCALLS;
}

/* Rounds of a syscall bare and with the tracepoint program: the median difference. */
static int time_tracepoint(struct innostall_bpf *obj, struct hit_cost *cost)
{
	struct run_mark was = run_mark(obj->progs.calibrate_tracepoint);
	double run[ROUNDS];
	int round;

	obj->bss->calibration_tid = syscall(SYS_gettid);
	for (round = 0; round < ROUNDS; round++) {
		double bare = ns_per_syscall(), with;
		struct bpf_link *link = bpf_program__attach(obj->progs.calibrate_tracepoint);

		if (!link)
			return -errno;
		with = ns_per_syscall();
		bpf_link__destroy(link);
		run[round] = with - bare;
	}
	cost->tracepoint_ns = median(run, ROUNDS) -
			      average_run_since(obj->progs.calibrate_tracepoint, was);
	if (cost->tracepoint_ns < MIN_TRACEPOINT_NS) {
		cost->tracepoint_ns = MIN_TRACEPOINT_NS;
		cost->floored = true;
	}
	return 0;
}

/* Where a function of ours is in our executable's file, from the mapping that holds it. */
static long self_file_offset(int (*function)(int))
{
	unsigned long start, end, offset, target = (unsigned long)function;
	char line[512];
	long found = -1;
	FILE *maps = fopen("/proc/self/maps", "r");

	while (maps && found < 0 && fgets(line, sizeof(line), maps))
		if (sscanf(line, "%lx-%lx %*s %lx", &start, &end, &offset) == 3 &&
		    target >= start && target < end)
			found = target - start + offset;
	if (maps)
		fclose(maps);
	return found;
}

static int probe_self(struct bpf_program *prog, int (*function)(int), bool retprobe)
{
	long offset = self_file_offset(function);

	if (offset < 0)
		return -ENOENT;
	return uprobe_link(bpf_program__fd(prog), "/proc/self/exe", offset, retprobe, getpid(),
			   HITS_CALIBRATION);
}

int calibrate(struct innostall_bpf *obj, struct hit_cost *cost)
{
	int links[3] = { -1, -1, -1 }, err = 0, i;

	cold_size = sysconf(_SC_LEVEL2_CACHE_SIZE);
	if (cold_size <= 0)
		cold_size = 1 << 20;
	cold = calloc(1, cold_size);
	if (!cold)
		return -ENOMEM;
	links[0] = probe_self(obj->progs.calibrate_enter, calibration_entry, false);
	links[1] = probe_self(obj->progs.calibrate_enter, calibration_both, false);
	links[2] = probe_self(obj->progs.calibrate_exit, calibration_both, true);
	for (i = 0; i < 3 && !err; i++)
		if (links[i] < 0)
			err = links[i];
	for (i = 0; i < ATTEMPTS && !err; i++) {
		time_rounds(obj, cost);
		if (!cost->floored)
			break;
	}
	if (!err)
		err = time_tracepoint(obj, cost);
	for (i = 0; i < 3; i++)
		if (links[i] >= 0)
			detach_link(links[i]); /* not waited for: its functions are never called again */
	free((void *)cold);
	return err;
}
