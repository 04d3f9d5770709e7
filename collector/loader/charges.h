/* SPDX-License-Identifier: GPL-2.0 */
/* What each group's probes have cost the server, charged as the governor reads their hits
 * and the kernel's timing of their programs (charges.c). */
#ifndef __INNOSTALL_CHARGES_H
#define __INNOSTALL_CHARGES_H

struct governor;

/* At start: each attachment's cost a hit (the bench's emulated scale applied), the
 * programs' run times so far, the hit counts mapped. */
void charges_start(struct governor *gov);
/* Add the hits since the last read to the groups' costs (groups[].cost_ns, spent_ns). */
void account_hits(struct governor *gov);
/* Set one program's charges right by the run time the kernel measured since last settled;
 * every program's (after account_hits). */
void settle_program(struct governor *gov, int p);
void settle_run_times(struct governor *gov);

#endif /* __INNOSTALL_CHARGES_H */
