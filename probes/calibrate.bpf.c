// SPDX-License-Identifier: GPL-2.0
/* Programs for measuring what one probe hit costs on this kernel: the loader probes a
 * function of its own and times calls to it (collector/calibrate.c). Their bodies do what
 * a typical measurement does per hit (count the hit, look up per-thread state, add to a
 * counter), so the cost measured is the trap plus a representative program. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"

static __always_inline int typical_hit(void *ctx)
{
	__u32 tid = current_tid();
	struct walk *walk;

	count_hit(ctx);
	walk = bpf_map_lookup_elem(&walks, &tid); /* none: the loader never walks versions */
	if (walk)
		walk->depth++;
	else
		counter_add(CNT_VERSION_STEPS_OUTSIDE, 0);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(calibrate_enter)
{
	return typical_hit(ctx);
}

SEC("uretprobe")
int BPF_KRETPROBE(calibrate_exit)
{
	return typical_hit(ctx);
}
