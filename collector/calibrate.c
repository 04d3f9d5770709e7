// SPDX-License-Identifier: GPL-2.0
/* What a probe hit costs here: the loader probes calibration_target, a function of its
 * own, with programs shaped like ours (probes/calibrate.bpf.c), and times calls to it
 * bare, with an entry probe, then with entry and return probes. Thread CPU time is used,
 * because the kernel charges a hit to the thread that traps, as it does in the server.
 *
 * A busy server comes to each trap with the caches full of its own work, so the kernel's
 * uprobe path and our maps miss there; timed with hot caches, a hit costs half of what it
 * costs in the server. So the L2 cache is flushed before each call (a pass over a buffer of
 * its size), in the bare timing too, and the difference is the hit.
 *
 * Like the server's functions, calibration_target starts with `push %rbp`, an instruction
 * the kernel emulates instead of single-stepping it; a probed instruction that must be
 * single-stepped costs about five times more here. It is written in assembly so that no
 * compiler can drop that prologue from a leaf function. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "innostall.h"
#include "innostall.skel.h"
#include "calibrate.h"
#include "attachment.h"
#include "trace_helpers.h"
#include "uprobe.h"

#define CALLS 2000 /* per timing: 20-40 ms each */
#define TRIES 5    /* the fastest of five: the machine is shared */
#define CACHE_LINE 64

int calibration_target(int x);
asm(".text\n"
    ".globl calibration_target\n"
    ".type calibration_target, @function\n"
    "calibration_target:\n"
    "	push %rbp\n"
    "	mov %rsp, %rbp\n"
    "	lea 1(%rdi), %eax\n"
    "	pop %rbp\n"
    "	ret\n"
    ".size calibration_target, . - calibration_target\n");

static volatile char *cold;
static long cold_size;

/* Evict what the last call left in the L2 cache. */
static void chill(void)
{
	long i;

	for (i = 0; i < cold_size; i += CACHE_LINE)
		cold[i]++;
}

static double ns_per_call(void)
{
	double best = 0;
	int try, i;

	for (try = 0; try < TRIES; try++) {
		unsigned long long start = now_ns(CLOCK_THREAD_CPUTIME_ID);
		volatile int sink = 0;
		double ns;

		for (i = 0; i < CALLS; i++) {
			chill();
			sink += calibration_target(i);
		}
		ns = (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - start) / CALLS;
		if (!try || ns < best)
			best = ns;
	}
	return best;
}

/* Where calibration_target is in our executable's file, from the mapping that holds it. */
static long self_file_offset(void)
{
	unsigned long start, end, offset, target = (unsigned long)calibration_target;
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

static int probe_self(struct bpf_program *prog, bool retprobe)
{
	long offset = self_file_offset();

	if (offset < 0)
		return -ENOENT;
	return uprobe_link(bpf_program__fd(prog), "/proc/self/exe", offset, retprobe, getpid(),
			   MAX_ATTACHMENTS - 1); /* a hits slot no real probe uses */
}

int calibrate(struct innostall_bpf *obj, struct hit_cost *cost)
{
	double bare, with_entry, with_both;
	int entry, ret;

	cold_size = sysconf(_SC_LEVEL2_CACHE_SIZE);
	if (cold_size <= 0)
		cold_size = 1 << 20;
	cold = calloc(1, cold_size);
	if (!cold)
		return -ENOMEM;
	bare = ns_per_call();
	entry = probe_self(obj->progs.calibrate_enter, false);
	if (entry < 0) {
		free((void *)cold);
		return entry;
	}
	with_entry = ns_per_call();
	ret = probe_self(obj->progs.calibrate_exit, true);
	if (ret < 0) {
		close(entry);
		free((void *)cold);
		return ret;
	}
	with_both = ns_per_call();
	cost->entry_ns = with_entry > bare ? with_entry - bare : 0;
	cost->return_ns = with_both > with_entry ? with_both - with_entry : 0;
	close(ret);
	close(entry);
	free((void *)cold);
	return 0;
}
