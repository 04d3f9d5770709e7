// SPDX-License-Identifier: GPL-2.0
/* The sleeps of threads doing purge work or applying a replica's events (maps.bpf.h,
 * struct purge_span; the applier's spans count in purge_spans_open too): at each context
 * switch of the traced process, a thread inside a purge batch or a worker's task that goes
 * to sleep starts an off-CPU stretch, and ends it when it runs again. A thread switched out
 * while still runnable (preempted) is not asleep: that time counts as CPU, used or waited
 * for, which is what "CPU-bound" means. A sleep waiting on I/O (io_sleep) is kept apart
 * too (io_asleep_ns): purge's I/O measured over this program's windows, where the
 * page-read probe may be sampled more thinly. The recorder attaches it whenever purge
 * batches are traced, as a sampling group of its own (purge_sleeps): a span's split counts
 * only when this program watched all of it (purge.bpf.c, span_split).
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
#include <bpf/bpf_core_read.h>
#include "maps.bpf.h"

#define TASK_RUNNING 0
#define TASK_UNINTERRUPTIBLE 0x2 /* also set in TASK_KILLABLE */

/* Whether a thread going to sleep waits on I/O: uninterruptibly (D: a read from a disk, a
 * sync, a page fault), or inside a system call that reads, writes or syncs a file or waits
 * for asynchronous I/O, whose waits may be interruptible (a FUSE or NFS file's, io_uring's).
 * A latch or condition wait sleeps interruptibly in futex(), a timed sleep in
 * clock_nanosleep(): neither is I/O. x86-64's system call numbers (the BPF objects are
 * built for x86 only). */
static __always_inline bool io_sleep(struct task_struct *prev, unsigned int prev_state)
{
	struct pt_regs *regs;
	long nr;

	if (prev_state & TASK_UNINTERRUPTIBLE)
		return true;
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	nr = BPF_CORE_READ(regs, orig_ax); /* -1 outside a system call */
	switch (nr) {
	case 0: case 17: case 19: case 295: case 327: /* read, pread64, readv, preadv, preadv2 */
	case 1: case 18: case 20: case 296: case 328: /* write, pwrite64, writev, pwritev, pwritev2 */
	case 74: case 75: case 277: /* fsync, fdatasync, sync_file_range */
	case 208: case 333: case 426: /* io_getevents, io_pgetevents, io_uring_enter */
		return true;
	}
	return false;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(purge_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	bool server_runs = !targ_tgid || prev->tgid == targ_tgid; /* the switch runs in prev */
	struct purge_span *span;
	__u64 began, now = 0;

	if (!server_runs && next->tgid != targ_tgid)
		return 0;
	if (server_runs)
		count_in_slot(HITS_SCHED_SWITCH);
	if (!purge_span_anywhere())
		return 0;
	began = server_runs && !kernel_times_programs ? bpf_ktime_get_ns() : 0;
	/* the clock is read only for a thread in a span: most switches are other threads' */
	if (prev_state != TASK_RUNNING && server_runs) {
		span = work_span_of(prev->pid);
		if (span) {
			now = bpf_ktime_get_ns();
			span->asleep_since = now;
			span->sleep_io = io_sleep(prev, prev_state);
		}
	}
	if (!targ_tgid || next->tgid == targ_tgid) {
		span = work_span_of(next->pid);
		if (span && span->asleep_since) {
			if (!now)
				now = bpf_ktime_get_ns();
			span->asleep_ns += now - span->asleep_since;
			if (span->sleep_io)
				span->io_asleep_ns += now - span->asleep_since;
			span->asleep_since = 0;
		}
	}
	if (began)
		counter_add(CNT_PURGE_SLEEP_EXTRA_NS, bpf_ktime_get_ns() - began);
	return 0;
}
