/* SPDX-License-Identifier: GPL-2.0 */
/* What our BPF programs spend running, as the kernel times them (BPF_ENABLE_STATS): the
 * part of a probe hit that depends on the program, which a calibration cannot know. */
#ifndef __INNOSTALL_RUN_TIME_H
#define __INNOSTALL_RUN_TIME_H

#include <stdbool.h>
#include <bpf/libbpf.h>

/* Ask the kernel to time every BPF program while the recording runs; false if it will
 * not (then a hit's cost is the calibrated one, program included). */
bool run_time_start(void);
bool run_time_on(void);
/* A program's run time and runs so far, cumulative; false if they cannot be read. */
bool run_time_of(struct bpf_program *prog, unsigned long long *ns, unsigned long long *runs);

#endif /* __INNOSTALL_RUN_TIME_H */
