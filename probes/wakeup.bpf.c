// SPDX-License-Identifier: GPL-2.0
/* Latch holders: who woke each latch waiter. A thread that releases a contended latch
 * wakes its waiters with a futex wake (srw/sux locks, pthread mutexes, the sync array's
 * os_event): sched_waking fires in the waker's context, so its user stack there is the
 * release site, and its thread name says what kind of thread held the latch. This is the
 * wakeup relation of bcc's wakeuptime/offwaketime, taken only for the waiters of
 * latch_waits; holders.bpf.h says how a wait's time is shared among its wakers.
 *
 * The tracepoint fires for every wakeup on the machine, so it stops as early as it can:
 * at another process's wakeup (which costs the server nothing), and while the latch probes
 * are detached by the governor, when there is no wait to find a waker for. Only then does
 * it look the wakee up (one hash lookup), and take the stack only for latch waiters. The
 * recorder attaches it in the latch probes' group, so it is detached with them. Its runs
 * for the server's wakeups are counted for the governor, which charges each what
 * calibrate.c measured a tracepoint's dispatch to cost, plus the program's run time (the
 * kernel's, or latch_extra_ns where the kernel does not time programs). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"
#include "unwind.bpf.h"
#include "holders.bpf.h"

/* The latch probes' sampling group (0: never sampled), set by the recorder. */
const volatile __u32 latch_group = 0;

SEC("tp_btf/sched_waking")
int BPF_PROG(latch_waker, struct task_struct *p)
{
	struct task_struct *waker = bpf_get_current_task_btf();
	struct wait_state *w;
	struct wakes *k;
	struct waker *slot;
	struct pt_regs *regs;
	__u32 wakee = p->pid;
	__u64 start;

	if (!traced_process())
		return 0;
	count_in_slot(HITS_SCHED_WAKING); /* a run in the server's context */
	if (p->tgid != waker->tgid || !group_attached(latch_group))
		return 0;
	start = bpf_ktime_get_ns(); /* the server's wakeups cost it this program's run */
	counter_add(CNT_WAKEUPS_SEEN, 1);
	w = bpf_map_lookup_elem(&latch_waits, &wakee);
	/* a wait whose return probe was detached since it began may never end: not a waiter */
	if (!w || !window_unbroken(w->window) || !(k = wakes_of(wakee, w, true))) {
		counter_add(CNT_LATCH_EXTRA_NS, bpf_ktime_get_ns() - start);
		return 0;
	}
	counter_add(CNT_HOLDER_WAKEUPS, 1);
	if (k->first.tid) {
		slot = &k->last;
	} else {
		slot = &k->first;
		k->first_wake = start;
	}
	/* the user registers the waker entered the kernel with: its futex wake */
	regs = (struct pt_regs *)bpf_task_pt_regs(waker);
	__builtin_memset(&slot->stack.libc, 0, sizeof(slot->stack.libc));
	slot->stack.stack_id = bpf_get_stackid(ctx, &stack_traces, BPF_F_USER_STACK);
	unwind_libc(BPF_CORE_READ(regs, ip), BPF_CORE_READ(regs, sp), BPF_CORE_READ(regs, bp),
		    &slot->stack.libc);
	bpf_get_current_comm(slot->comm, sizeof(slot->comm));
	slot->tid = waker->pid;
	counter_add(CNT_LATCH_EXTRA_NS, bpf_ktime_get_ns() - start);
	return 0;
}
