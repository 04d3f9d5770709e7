// SPDX-License-Identifier: GPL-2.0
/* What a probe hit costs here: the loader probes calibration_target, a function of its
 * own, with programs shaped like ours (probes/calibrate.bpf.c), and times calls to it
 * bare, with an entry probe, then with entry and return probes. Thread CPU time is used,
 * because the kernel charges a hit to the thread that traps, as it does in the server.
 *
 * Like the server's functions, calibration_target starts with `push %rbp`, an instruction
 * the kernel emulates instead of single-stepping it; a probed instruction that must be
 * single-stepped costs about five times more here. It is written in assembly so that no
 * compiler can drop that prologue from a leaf function. */
#include <errno.h>
#include <bpf/libbpf.h>
#include "innostall.h"
#include "innostall.skel.h"
#include "calibrate.h"
#include "loader.h"

#define CALLS 10000 /* per timing: 10-30 ms each */
#define TRIES 3     /* the fastest of three: the machine is shared */

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

static double ns_per_call(void)
{
	double best = 0;
	int try, i;

	for (try = 0; try < TRIES; try++) {
		unsigned long long start = now_ns(CLOCK_THREAD_CPUTIME_ID);
		volatile int sink = 0;
		double ns;

		for (i = 0; i < CALLS; i++)
			sink += calibration_target(i);
		ns = (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - start) / CALLS;
		if (!try || ns < best)
			best = ns;
	}
	return best;
}

static struct bpf_link *probe_self(struct bpf_program *prog, bool retprobe)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = "calibration_target", .retprobe = retprobe,
		    .bpf_cookie = MAX_ATTACHMENTS - 1); /* a hits slot no real probe uses */

	return bpf_program__attach_uprobe_opts(prog, 0 /* this process */, "/proc/self/exe", 0,
					       &opts);
}

int calibrate(struct innostall_bpf *obj, struct hit_cost *cost)
{
	struct bpf_link *entry = NULL, *ret = NULL;
	double bare, with_entry, with_both;
	int err = 0;

	bare = ns_per_call();
	entry = probe_self(obj->progs.calibrate_enter, false);
	if (!entry)
		return -errno;
	with_entry = ns_per_call();
	ret = probe_self(obj->progs.calibrate_exit, true);
	if (!ret) {
		err = -errno;
		goto out;
	}
	with_both = ns_per_call();
	cost->entry_ns = with_entry > bare ? with_entry - bare : 0;
	cost->return_ns = with_both > with_entry ? with_both - with_entry : 0;
out:
	bpf_link__destroy(ret);
	bpf_link__destroy(entry);
	return err;
}
