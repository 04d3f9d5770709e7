// SPDX-License-Identifier: GPL-2.0
/* Programs for measuring what one probe hit costs on this kernel: the loader probes a
 * function of its own and times calls to it (collector/loader/calibrate.c). Their bodies do what
 * a timed span does (mvcc.bpf.c, latch.bpf.c): the entry saves per-thread state in a hash
 * map, the return finds it, adds to a histogram and a counter, and deletes it. So the cost
 * measured is the trap plus a representative program.
 *
 * A scheduler tracepoint's run (sched.bpf.c, wakeup.bpf.c) is measured the same way on
 * the syscall tracepoint, which the loader can fire at will: its program does what theirs
 * do for a switch or a wakeup of the server's that they stop at early, the common case. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* thread id */
	__type(value, struct walk);
} calibration_spans SEC(".maps");

SEC("uprobe")
int BPF_KPROBE(calibrate_enter)
{
	struct walk span = { .start_ns = bpf_ktime_get_ns(), .window = window_token(ctx) };
	__u32 tid = current_tid();

	count_hit(ctx);
	bpf_map_update_elem(&calibration_spans, &tid, &span, BPF_ANY);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(calibrate_exit)
{
	__u32 tid = current_tid();
	struct walk *span;

	count_hit(ctx);
	span = bpf_map_lookup_elem(&calibration_spans, &tid);
	if (!span || !window_unbroken(span->window))
		return 0;
	hist_add(NR_HISTS, bpf_ktime_get_ns() - span->start_ns); /* no such histogram: lookup only */
	counter_add(CNT_VERSION_STEPS_OUTSIDE, 0);
	bpf_map_delete_elem(&calibration_spans, &tid);
	return 0;
}

/* The calibrating thread (the loader's), set before the tracepoint is attached. */
__u32 calibration_tid = 0;
bool calibration_sink = false;

SEC("tp_btf/sys_enter")
int BPF_PROG(calibrate_tracepoint, struct pt_regs *regs, long id)
{
	if (current_tid() != calibration_tid)
		return 0;
	count_in_slot(HITS_CALIBRATION);
	calibration_sink = purge_span_anywhere() && group_attached(MAX_GROUPS - 1); /* their tests */
	return 0;
}
