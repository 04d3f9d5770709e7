// SPDX-License-Identifier: GPL-2.0
/* The sleeps of threads doing purge work or applying a replica's events (maps.bpf.h,
 * struct purge_span; the applier's spans count in purge_spans_open too): at each context
 * switch of the traced process, a thread inside a purge batch or a worker's task that goes
 * to sleep starts an off-CPU stretch, and ends it when it runs again. A thread switched out
 * while still runnable (preempted) is not asleep: that time counts as CPU, used or waited
 * for, which is what "CPU-bound" means. The recorder attaches it whenever purge batches
 * are traced, as a sampling group of its own (purge_sleeps): a span's split counts only
 * when this program watched all of it (purge.bpf.c, span_split).
 *
 * It runs at every switch on the machine, tens of thousands a second under an OLTP load,
 * so it stops as early as it can: at another process's switch, and while no thread is
 * inside a purge span, which is most of the time; only then does it look the two threads
 * up (up to four hash lookups). Its runs in the server's context are counted for the
 * governor, which charges each what calibrate.c measured a tracepoint's dispatch to cost,
 * plus the program's run time (the kernel's, or purge_sleep_extra_ns where the kernel
 * does not time programs). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"

#define TASK_RUNNING 0

SEC("tp_btf/sched_switch")
int BPF_PROG(purge_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	bool server_runs = !targ_tgid || prev->tgid == targ_tgid; /* the switch runs in prev */
	struct purge_span *span;
	__u64 now;

	if (!server_runs && next->tgid != targ_tgid)
		return 0;
	if (server_runs)
		count_in_slot(HITS_SCHED_SWITCH);
	if (!purge_span_anywhere())
		return 0;
	now = bpf_ktime_get_ns();
	if (prev_state != TASK_RUNNING && server_runs) {
		span = work_span_of(prev->pid);
		if (span)
			span->asleep_since = now;
	}
	if (!targ_tgid || next->tgid == targ_tgid) {
		span = work_span_of(next->pid);
		if (span && span->asleep_since) {
			span->asleep_ns += now - span->asleep_since;
			span->asleep_since = 0;
		}
	}
	if (server_runs)
		counter_add(CNT_PURGE_SLEEP_EXTRA_NS, bpf_ktime_get_ns() - now);
	return 0;
}
