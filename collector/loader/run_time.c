// SPDX-License-Identifier: GPL-2.0
/* Program run times from the kernel, as bpftop and `bpftool prog profile` take them.
 *
 * Why: a hit costs the trap, which calibrate.c measures, plus the program, which depends
 * on what it does and on the server's caches: under an OLTP load ours took 0.1-1.3 us a
 * run, and 4.9 us for a latch wait's return with its stacks, where calibration's small
 * program took a fraction of that. Counting the calibrated cost alone, the governor saw a
 * third of what the server paid.
 *
 * The kernel times programs while any process holds the fd BPF_ENABLE_STATS returns; it
 * stops when the loader exits, however it exits. It costs two clock reads per program
 * run, for every BPF program on the host while we hold it; ours count it in their time. */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include "run_time.h"

static int stats_fd = -1;

bool run_time_start(void)
{
	if (stats_fd < 0)
		stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	return stats_fd >= 0;
}

bool run_time_on(void)
{
	return stats_fd >= 0;
}

bool run_time_of(struct bpf_program *prog, unsigned long long *ns, unsigned long long *runs)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (stats_fd < 0 || bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return false;
	*ns = info.run_time_ns;
	*runs = info.run_cnt;
	return true;
}
