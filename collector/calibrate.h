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

/* Probe a function of the loader itself and time calls to it; 0 on success. */
int calibrate(struct innostall_bpf *obj, struct hit_cost *cost);

#endif /* __INNOSTALL_CALIBRATE_H */
