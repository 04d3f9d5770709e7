// SPDX-License-Identifier: GPL-2.0
/* The sleeps of threads doing purge work (maps.bpf.h, struct purge_span): at each context
 * switch of the traced process, a thread inside a purge batch or a worker's task that goes
 * to sleep starts an off-CPU stretch, and ends it when it runs again. A thread switched out
 * while still runnable (preempted) is not asleep: that time counts as CPU, used or waited
 * for, which is what "CPU-bound" means. The loader attaches this program whenever the
 * purge batch probe is attached; it costs up to four hash lookups per switch of the server's
 * threads (purge_span_of for the thread leaving and the one coming), and the governor does
 * not count it: it is not a uprobe. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"

#define TASK_RUNNING 0

SEC("tp_btf/sched_switch")
int BPF_PROG(purge_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct purge_span *span;
	__u64 now;

	if (targ_tgid && prev->tgid != targ_tgid && next->tgid != targ_tgid)
		return 0;
	now = bpf_ktime_get_ns();
	if (prev_state != TASK_RUNNING && (!targ_tgid || prev->tgid == targ_tgid)) {
		span = purge_span_of(prev->pid);
		if (span)
			span->asleep_since = now;
	}
	if (!targ_tgid || next->tgid == targ_tgid) {
		span = purge_span_of(next->pid);
		if (span && span->asleep_since) {
			span->asleep_ns += now - span->asleep_since;
			span->asleep_since = 0;
		}
	}
	return 0;
}
