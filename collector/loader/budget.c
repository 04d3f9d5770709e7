// SPDX-License-Identifier: GPL-2.0
/* What the probes may spend and have spent (budget.h). The budget is a share of the traced
 * server's own CPU time, earned as it runs; the probes' cost is known as they go (the
 * governor charges each group its hits and programs' runs).
 *
 * A window cannot be shorter than attaching and detaching take (a few ms), and a probe hit
 * hundreds of thousands of times a second can spend a small budget several times over in
 * that time. So the budget holds over the recording, not per interval: what the probes
 * cost beyond it so far is taken off the next interval's (overspent_ns).
 *
 * A stall is when a DBA needs the figures, and the group that explains it may cost several
 * times the whole budget while it lasts (a hot-row stall's latch waits, 3,300 a second on
 * 16 threads, about 52 ms/s of the server's CPU against an 11 ms/s budget here). So the
 * calm intervals leave a share of their budget unspent (SIGNAL_RESERVE, governor.c), which
 * goes into a bank, up to BANK_S seconds' worth; while a signal holds groups open they may
 * spend the interval's whole budget and the bank (stall_room_ns). The recording as a whole
 * stays within AIM of its budget whatever the bank says. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "governor.h"
#include "budget.h"
#include "trace_helpers.h"

#define BANK_S 4.0 /* the bank holds at most this many seconds' worth of the budget: a stall
		    * that begins after a long calm spends what the last few seconds saved, not
		    * what a quiet hour did, so the cost stays spread over the recording */
#define HEADROOM 1.5            /* a group that fits may cost this much more than last time
				 * before it is sampled: loads fluctuate */
#define CHEAP_SHARE 0.25       /* of an interval's budget, kept for the coolest groups
				 * whatever the debt (keep_cool_groups) */
#define EARNED_EVERY_NS 5000000ULL /* the server's CPU read at most this often while a stall
				    * spends (the governor checks every millisecond then) */

unsigned long long server_cpu_ns(pid_t pid)
{
	unsigned long long utime, stime;
	char path[64], buf[1024], *p;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL; /* the command name may hold spaces */
	for (i = 0; p && i < 12; i++) /* utime is the 12th field after it */
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, "%llu %llu", &utime, &stime) != 2)
		return 0;
	return (utime + stime) * (1000000000ULL / sysconf(_SC_CLK_TCK));
}

unsigned long long budget_base_ns(const struct governor *gov, unsigned long long now,
				  unsigned long long cpu_now)
{
	if (gov->cfg.pid <= 0)
		return now - gov->started_ns;
	return (cpu_now ? cpu_now : gov->cpu_last_ns) - gov->cpu_start_ns;
}

/* Its share of the CPU time the server used since the interval began (or one CPU's, with
 * no server), reckoned on at least MIN_BASE_CPU. */
double interval_budget_ns(const struct governor *gov, unsigned long long now,
			  unsigned long long *cpu_now)
{
	double base_ns = gov->cfg.pid > 0 ? 0 : now - gov->interval_start_ns;

	*cpu_now = gov->cfg.pid > 0 ? server_cpu_ns(gov->cfg.pid) : 0;
	if (*cpu_now)
		base_ns = *cpu_now - gov->cpu_last_ns;
	base_ns = fmax(base_ns, MIN_BASE_CPU * (now - gov->interval_start_ns));
	return base_ns * gov->cfg.budget_ppm / 1e6;
}

double recording_cost_ns(const struct governor *gov)
{
	double cost = 0;
	unsigned int group;

	for (group = 0; group < gov->nr_groups; group++)
		cost += gov->groups[group].cost_ns;
	return cost;
}

double interval_cost_ns(const struct governor *gov)
{
	double spent = 0;
	unsigned int group;

	for (group = 0; group < gov->nr_groups; group++)
		spent += gov->groups[group].spent_ns;
	return spent;
}

/* An interval's overspend is repaid in the next, but the last interval's cannot be, and an
 * interval could spend twice its allowance (program runs are settled only at its end): so
 * the recording as a whole aims at AIM of its budget too, which keeps a short one within it. */
double overspent_ns(const struct governor *gov)
{
	return fmax(0, recording_cost_ns(gov) - AIM * gov->budget_ns);
}

double stall_room_ns(struct governor *gov, unsigned long long now)
{
	struct stall_bank *bank = &gov->bank;
	unsigned long long cpu;
	double room, whole;

	if (!gov->signals.n)
		return 0;
	if (!bank->earned_at_ns || now >= bank->earned_at_ns + EARNED_EVERY_NS) {
		bank->earned_ns = interval_budget_ns(gov, now, &cpu);
		bank->earned_at_ns = now;
	}
	room = bank->banked_ns + AIM * bank->earned_ns - interval_cost_ns(gov);
	whole = AIM * (gov->budget_ns + bank->earned_ns) - recording_cost_ns(gov);
	return fmax(0, fmin(room, whole));
}

void bank_settle(struct governor *gov, double earned_ns)
{
	struct stall_bank *bank = &gov->bank;
	double left = AIM * earned_ns - interval_cost_ns(gov);
	double cap = BANK_S * AIM * earned_ns * 1e3 / gov->cfg.interval_ms;

	if (!gov->signals.n)
		return;
	if (!bank->stalled && left > 0) {
		left = fmin(left, fmax(0, cap - bank->banked_ns));
		bank->banked_ns += left;
		bank->deposited_ns += left;
	} else if (bank->stalled && left < 0) {
		left = fmin(-left, bank->banked_ns);
		bank->banked_ns -= left;
		bank->spent_ns += left;
	}
	bank->stalled = false;
	bank->earned_at_ns = 0;
}

double demand_of(struct governor *gov, unsigned int group)
{
	return gov->groups[group].demand < 0 ? INFINITY : gov->groups[group].demand;
}

/* The group of least demand not yet taken (the first of equals), marked taken now. */
unsigned int take_coolest(struct governor *gov, bool *taken)
{
	unsigned int group, coolest = 0;

	for (group = 1; group < gov->nr_groups; group++)
		if (!taken[group] && (!coolest || demand_of(gov, group) < demand_of(gov, coolest)))
			coolest = group;
	taken[coolest] = true;
	return coolest;
}

/* The coolest groups whose needs together come to at most CHEAP_SHARE of the interval's
 * budget get them first, debt or not (share_out): their probes (the history's, purge
 * workers', the applier's) fire a few times a second and cost a hundredth of the budget
 * each, yet a debt the hot groups ran up left them detached a quarter of the time. The
 * debt is repaid by the others. */
static double keep_cool_groups(struct governor *gov, const double *need, double budget)
{
	bool kept[MAX_GROUPS] = {};
	double total = 0;
	unsigned int n, coolest;

	for (n = 1; n < gov->nr_groups; n++) {
		coolest = take_coolest(gov, kept);
		if (!isfinite(need[coolest]) || total + need[coolest] > CHEAP_SHARE * budget)
			break;
		gov->groups[coolest].allowance_ns = need[coolest];
		total += need[coolest];
	}
	return total;
}

/* Max-min fair shares of `budget` less `debt` for demands (ns each; < 0 unknown, i.e.
 * unbounded), after the cool groups' needs (keep_cool_groups); groups that fit may also use
 * what the others leave. */
void share_out(struct governor *gov, double budget, double debt, double interval_s)
{
	double need[MAX_GROUPS], left;
	unsigned int group, unfit, round;

	for (group = 1; group < gov->nr_groups; group++) {
		struct group_state *g = &gov->groups[group];

		need[group] = demand_of(gov, group) * interval_s * HEADROOM;
		g->allowance_ns = -1; /* not yet given */
	}
	left = budget - debt - keep_cool_groups(gov, need, budget);
	for (round = 1; round < gov->nr_groups; round++) {
		double share;

		unfit = 0;
		for (group = 1; group < gov->nr_groups; group++)
			unfit += gov->groups[group].allowance_ns < 0;
		if (!unfit)
			break;
		share = left > 0 ? left / unfit : 0;
		for (group = 1; group < gov->nr_groups; group++)
			if (gov->groups[group].allowance_ns < 0 && need[group] <= share) {
				gov->groups[group].allowance_ns = need[group];
				left -= need[group];
				break; /* one per round: the share grows as fitting groups leave */
			}
		if (group == gov->nr_groups) { /* none fits: equal shares for the rest */
			for (group = 1; group < gov->nr_groups; group++)
				if (gov->groups[group].allowance_ns < 0)
					gov->groups[group].allowance_ns = share;
			left = 0;
			break;
		}
	}
	for (group = 1; group < gov->nr_groups; group++) {
		struct group_state *g = &gov->groups[group];

		if (g->allowance_ns < 0)
			g->allowance_ns = 0;
		if (left > 0 && g->allowance_ns == need[group]) /* fits: room for a surge */
			g->allowance_ns += left;
	}
}
