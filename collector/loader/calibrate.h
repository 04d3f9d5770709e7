/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __INNOSTALL_CALIBRATE_H
#define __INNOSTALL_CALIBRATE_H

#include <stdbool.h>

struct innostall_bpf;

/* CPU time one probe hit adds to the probed thread, on this kernel: the trap and, unless
 * programs_apart, a representative program. */
struct hit_cost {
	double entry_ns;  /* an entry probe */
	double return_ns; /* a return probe, beyond the entry probe at the same function */
	double tracepoint_ns; /* a scheduler tracepoint's run in the server's context */
	double entry_low_ns, entry_high_ns; /* the spread of the middle five rounds' entry costs */
	bool floored; /* a median came out below what a trap can cost: raised to the floor */
	bool programs_apart; /* the costs are the trap alone: programs are timed by the kernel */
};

/* What a uprobe hit costs the server in all, for each ns it costs the probed thread as
 * calibrated (the trap) and timed (the program). A trap and a program also evict the
 * server's caches and branch predictor state, which its next microseconds of work pay for:
 * the indirect cost of entering the kernel, larger than the direct one for system calls
 * (Soares and Stumm, FlexSC, OSDI 2010). A loop of calls to a small function has no such
 * state to lose, so calibration cannot see it; make bench measures it, speed-adjusted,
 * with every default probe attached to MariaDB 11.4.5 under an 8-thread OLTP load:
 * +10.61% server CPU per transaction (90%: +9.79 ... +14.37%, 16 pairs) against +5.77%
 * estimated, 0.88 of which the scheduler tracepoint: the uprobes' share is 1.99 times what
 * was estimated for it (1.82 ... 2.76). The tracepoint runs inside the kernel already, with
 * no entry or exit, and is not scaled. */
#define HIT_INDIRECT_FACTOR 2.0

/* Probe a function of the loader itself and time calls to it; 0 on success. */
int calibrate(struct innostall_bpf *obj, struct hit_cost *cost);

#endif /* __INNOSTALL_CALIBRATE_H */
