/* SPDX-License-Identifier: GPL-2.0 */
/* What the probes may spend and have spent (budget.c): the budget earned from the traced
 * server's CPU time, what they have cost beyond it (the debt), and the stall bank, what the
 * calm intervals left unspent, spent while the server's state says a stall is on. The
 * governor (governor.c) schedules the windows within these accounts. */
#ifndef __INNOSTALL_BUDGET_H
#define __INNOSTALL_BUDGET_H

#include <stdbool.h>
#include <sys/types.h>

struct governor;

#define AIM 0.85                /* share of the budget planned for: closing a group takes
				 * a while, and its hits until then count too. With uprobe
				 * hits counted twice over (HIT_INDIRECT_FACTOR), 0.9 left 20
				 * five-second recordings at 0.90-1.001 of their budget */
#define MIN_BASE_CPU 0.25       /* the budget is reckoned on at least this share of one CPU:
				 * 1% of a nearly idle server is less than one long version
				 * walk costs (about 1 ms), and sampling would hide the very
				 * read a DBA came to see, where the cost harms no one */

/* The stall bank: what calm intervals left of what was planned for them (AIM of the
 * budget they earned), up to a few seconds' worth, and what of it a stall has spent. */
struct stall_bank {
	double banked_ns;    /* in the bank now */
	double deposited_ns; /* put in, over the recording */
	double spent_ns;     /* taken out by stalls, over the recording */
	bool stalled;        /* a signal held groups open in the present interval */
	double earned_ns;    /* the present interval's budget earned so far, as last read ... */
	unsigned long long earned_at_ns; /* ... at this moment (read at most every EARNED_EVERY_NS) */
};

/* utime + stime of the traced process, in ns; 0 when it cannot be read. */
unsigned long long server_cpu_ns(pid_t pid);
/* CPU time the budget is a share of since the start: the server's up to cpu_now (its last
 * reading if 0), or one CPU's. */
unsigned long long budget_base_ns(const struct governor *gov, unsigned long long now,
				  unsigned long long cpu_now);
/* The budget earned since the interval began; *cpu_now: the server's CPU time now, 0 when
 * unread. */
double interval_budget_ns(const struct governor *gov, unsigned long long now,
			  unsigned long long *cpu_now);
/* What the probes have cost over the recording, and in the present interval. */
double recording_cost_ns(const struct governor *gov);
double interval_cost_ns(const struct governor *gov);
/* What the probes have cost beyond AIM of the budget so far (0 when within it). */
double overspent_ns(const struct governor *gov);
/* What a stall may still spend in the present interval: the bank, and AIM of what the
 * interval has earned so far less what it has spent; never more than keeps the recording
 * within AIM of its budget. 0 without signals. */
double stall_room_ns(struct governor *gov, unsigned long long now);
/* At an interval's end, with the budget it earned: a calm interval puts what it left of
 * what was planned into the bank (capped), a stalled one takes out what it spent beyond. */
void bank_settle(struct governor *gov, double earned_ns);

/* A group's demand, its cost per second attached (INFINITY while unknown). */
double demand_of(struct governor *gov, unsigned int group);
/* The group of least demand not yet taken (the first of equals), marked taken now. */
unsigned int take_coolest(struct governor *gov, bool *taken);
/* Each group's allowance for the next interval (groups[].allowance_ns): max-min fair shares
 * of budget less debt, after the coolest groups' needs. */
void share_out(struct governor *gov, double budget, double debt, double interval_s);

#endif /* __INNOSTALL_BUDGET_H */
