/* SPDX-License-Identifier: GPL-2.0 */
/* The loader's cumulative tables (table_output.c): latches, their waiters and holders, and
 * the threads that wrote, waited for flushing or applied a replica's events. */
#ifndef __INNOSTALL_TABLE_OUTPUT_H
#define __INNOSTALL_TABLE_OUTPUT_H

#include <linux/types.h>

struct innostall_bpf;

/* Every tenth interval and at the end: the changed rows of the tables of scope "recording"
 * (probes/innostall_tables.h): contended blocks, stacks, holders, writers and appliers. */
void print_latch_tables(struct innostall_bpf *obj);
/* Before each snapshot: the changed rows of the tables of scope "interval": the latches
 * waited for, then purge's and the applier's (work_latches). */
void print_latches(struct innostall_bpf *obj);
/* The return addresses of a user stack, innermost first, comma-separated. */
void print_frames(int traces_fd, __s32 stack_id);

#endif /* __INNOSTALL_TABLE_OUTPUT_H */
