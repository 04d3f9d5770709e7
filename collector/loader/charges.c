// SPDX-License-Identifier: GPL-2.0
/* What each group's probes have cost the server (charges.h): a probe hit costs the probed
 * thread a trap (calibrate.c measures it) and its program's run (the kernel times it:
 * run_time.c), and the probes count their hits in the kernel (probe_hits), so the overhead
 * added to the server is known as it goes: hits x trap, plus run times, times what the
 * server pays around them (calibrate.h). The scheduler tracepoints count their runs in the
 * server's context the same way, at the calibrated cost of a tracepoint's dispatch. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "innostall.h"
#include "innostall.skel.h"
#include "trace_helpers.h"
#include "governor.h"
#include "charges.h"
#include "run_time.h"

/* Set once at start: what a hit of attachment i costs. */
static double hit_cost_ns(const struct governor *gov, int i)
{
	const struct attachment *a = &gov->att[i];
	int j;

	if (a->tracepoint) /* its runs are counted apart (account_tracepoints) */
		return 0;
	if (!a->retprobe)
		return gov->cfg.cost.entry_ns;
	/* A return probe traps at the entry too, shared with an entry probe if there is one. */
	for (j = 0; j < gov->nr_att; j++)
		if (!gov->att[j].retprobe && !gov->att[j].tracepoint && gov->att[j].offset == a->offset &&
		    gov->att[j].path == a->path)
			return gov->cfg.cost.return_ns;
	return gov->cfg.cost.entry_ns + gov->cfg.cost.return_ns;
}

static void charge(struct governor *gov, unsigned int group, double cost_ns)
{
	gov->groups[group].cost_ns += cost_ns;
	gov->groups[group].spent_ns += cost_ns;
}

/* The group of a program's attachments (0 when it is not attached). */
static unsigned int group_of(const struct governor *gov, const char *prog)
{
	int i;

	for (i = 0; i < gov->nr_att; i++)
		if (!strcmp(gov->att[i].prog, prog))
			return gov->att[i].group;
	return 0;
}

/* What a counter slot grew by since it was last read into *last. */
static double counter_growth(struct governor *gov, __u32 id, unsigned long long *last)
{
	__u64 total;

	if (bpf_map_lookup_elem(bpf_map__fd(gov->obj->maps.counters), &id, &total))
		return 0;
	total -= *last;
	*last += total;
	return total;
}

/* Every probe_hits slot, summed over the CPUs' rows, into slot_hits: read from the map's
 * memory, mapped into ours (map_hits), as the governor checks every millisecond or so
 * while it samples. An aligned 64-bit load sees a count whole. */
static void read_hits(struct governor *gov)
{
	int slot, cpu;

	for (slot = 0; slot < MAX_ATTACHMENTS; slot++)
		for (gov->slot_hits[slot] = 0, cpu = 0; cpu < gov->hit_rows; cpu++)
			gov->slot_hits[slot] += gov->hit_counts[cpu * MAX_ATTACHMENTS + slot];
}

static void map_hits(struct governor *gov)
{
	struct bpf_map *map = gov->obj->maps.probe_hits;
	size_t size = (size_t)bpf_map__max_entries(map) * sizeof(__u64);
	void *mem = mmap(NULL, size, PROT_READ, MAP_SHARED, bpf_map__fd(map), 0);

	if (mem == MAP_FAILED)
		die("cannot map the hit counts: %s", strerror(errno));
	gov->hit_counts = mem;
	gov->hit_rows = bpf_map__max_entries(map) / MAX_ATTACHMENTS;
}

/* The scheduler tracepoints, whose runs no cookie numbers: each run in the server's
 * context at the calibrated cost of a tracepoint run, plus what their longer runs timed
 * themselves (purge_sleep_extra_ns, latch_extra_ns) unless the kernel times programs.
 * Each is charged to its own group; the latch programs' stacks to the latch group. */
static void charge_runs(struct governor *gov, __u32 slot, unsigned long long *last,
			unsigned int group)
{
	charge(gov, group, (gov->slot_hits[slot] - *last) * gov->cfg.cost.tracepoint_ns);
	*last = gov->slot_hits[slot];
}

static void account_tracepoints(struct governor *gov)
{
	unsigned int latch = group_of(gov, "latch_wait_exit");
	unsigned int sleeps = group_of(gov, "purge_sched_switch");

	charge_runs(gov, HITS_SCHED_SWITCH, &gov->switch_runs, sleeps);
	charge_runs(gov, HITS_SCHED_WAKING, &gov->waking_runs, latch);
	if (gov->cfg.cost.programs_apart) /* in the programs' run times (settle_run_times) */
		return;
	charge(gov, sleeps, counter_growth(gov, CNT_PURGE_SLEEP_EXTRA_NS, &gov->purge_sleep_extra_ns));
	charge(gov, latch, counter_growth(gov, CNT_LATCH_EXTRA_NS, &gov->latch_extra_ns));
}

/* Charge attachment i's group for ns its hits cost the probed thread: a uprobe's trap and
 * program also cost the server's work around them (HIT_INDIRECT_FACTOR, calibrate.h); a
 * tracepoint runs inside the kernel already. */
static void charge_hits(struct governor *gov, int i, double ns)
{
	charge(gov, gov->att[i].group, ns * (gov->att[i].tracepoint ? 1 : HIT_INDIRECT_FACTOR));
}

/* Add the hits since the last read to the groups' costs: each at the calibrated cost of
 * its trap and, when programs are timed apart, its program's average run of late. */
void account_hits(struct governor *gov)
{
	unsigned long long sum, hits;
	double run_ns;
	int i;

	read_hits(gov);
	for (i = 0; i < gov->nr_att; i++) {
		sum = gov->slot_hits[i];
		hits = sum - gov->hits[i];
		run_ns = gov->cfg.cost.programs_apart ?
			 hits * gov->programs[gov->program_of[i]].average_ns : 0;
		charge_hits(gov, i, hits * gov->hit_cost_ns[i] + run_ns);
		gov->run_charged_ns[i] += run_ns;
		gov->hits[i] = sum;
	}
	account_tracepoints(gov);
}

/* The share of a tracepoint program's runs since it was last settled that ran in the
 * server's context: it runs at every switch or wakeup on the machine, and a run in another
 * process's context costs that process, not the server the budget is a share of. Those runs
 * return at their first test, so the server's runs, which go on, cost a little more than
 * their share of the run time says. 1 for a uprobe's program: it runs in the server only. */
static double server_share(struct governor *gov, struct program_run *prog,
			   unsigned long long runs)
{
	unsigned long long in_server;

	if (prog->server_slot < 0)
		return 1;
	in_server = gov->slot_hits[prog->server_slot] - prog->server_runs;
	prog->server_runs = gov->slot_hits[prog->server_slot];
	return runs > prog->runs ? fmin(1, (double)in_server / (runs - prog->runs)) : 1;
}

/* Whether a program may have run since it was last settled: a uprobe's program runs only
 * on its attachments' hits, so with none since, the kernel's run time has not moved and
 * reading it (a system call) is skipped. The governor checks every millisecond or so while
 * it samples; reading every open program's time at each check made 3,900 system calls a
 * second under the steady bench load. A tracepoint's program runs at every switch. */
static bool ran_since_settled(const struct governor *gov, int p)
{
	int i;

	for (i = 0; i < gov->nr_att; i++)
		if (gov->program_of[i] == p &&
		    (gov->att[i].tracepoint || gov->hits[i] != gov->hits_settled[i]))
			return true;
	return false;
}

/* One program's run time since it was last settled, shared among its attachments by their
 * hits since then (a tracepoint, which counts no hits of its own, has one attachment), less
 * the average runs already charged for those hits. */
void settle_program(struct governor *gov, int p)
{
	struct program_run *prog = &gov->programs[p];
	unsigned long long ns, runs, hits = 0;
	int i, sharing = 0;
	double in_server;

	if (!ran_since_settled(gov, p))
		return;
	if (!run_time_of(prog->prog, &ns, &runs))
		return;
	in_server = server_share(gov, prog, runs);
	for (i = 0; i < gov->nr_att; i++)
		if (gov->program_of[i] == p) {
			hits += gov->hits[i] - gov->hits_settled[i];
			sharing++;
		}
	for (i = 0; i < gov->nr_att; i++) {
		double share;

		if (gov->program_of[i] != p)
			continue;
		share = hits ? (double)(gov->hits[i] - gov->hits_settled[i]) / hits : 1.0 / sharing;
		charge_hits(gov, i, share * in_server * (ns - prog->ns) - gov->run_charged_ns[i]);
		gov->run_charged_ns[i] = 0;
		gov->hits_settled[i] = gov->hits[i];
	}
	if (runs > prog->runs)
		prog->average_ns = (double)(ns - prog->ns) / (runs - prog->runs);
	prog->ns = ns;
	prog->runs = runs;
}

/* Set the programs' charges right by the run time the kernel measured (after account_hits). */
void settle_run_times(struct governor *gov)
{
	int p;

	if (gov->cfg.cost.programs_apart)
		for (p = 0; p < gov->nr_programs; p++)
			settle_program(gov, p);
}

/* The programs of the attachments, each once, with their run time so far. */
static void find_programs(struct governor *gov)
{
	int i, p;

	for (i = 0; i < gov->nr_att; i++) {
		struct bpf_program *prog = bpf_object__find_program_by_name(gov->obj->obj,
									     gov->att[i].prog);

		for (p = 0; p < gov->nr_programs && gov->programs[p].prog != prog; p++)
			;
		if (p == gov->nr_programs) {
			gov->programs[p].prog = prog;
			run_time_of(prog, &gov->programs[p].ns, &gov->programs[p].runs);
			gov->programs[p].server_slot = !gov->att[i].tracepoint ? -1 :
				strcmp(gov->att[i].prog, "purge_sched_switch") ? HITS_SCHED_WAKING :
										 HITS_SCHED_SWITCH;
			gov->nr_programs++;
		}
		gov->program_of[i] = p;
	}
}

/* For the bench only, and said so in every snapshot: the governor charges each trap this
 * many times what calibration measured (INNOSTALL_EMULATED_HIT_COST_SCALE), as on a
 * machine whose traps cost more (issue 44's Intel VM: 2,897 ns an entry, about three times
 * this AMD one's), so that the bench can show the budget holds where the per-hit cost is
 * higher. An emulation of the governor's side only: the server here pays its own traps. */
static void emulate_hit_cost(struct governor *gov)
{
	const char *given = getenv("INNOSTALL_EMULATED_HIT_COST_SCALE");
	double scale = given ? strtod(given, NULL) : 1;

	if (!(scale >= 1 && scale <= 10)) /* unset, unparsed or absurd: none */
		scale = 1;
	gov->cost_scale = scale;
	gov->cfg.cost.entry_ns *= scale;
	gov->cfg.cost.return_ns *= scale;
	gov->cfg.cost.tracepoint_ns *= scale;
}


void charges_start(struct governor *gov)
{
	int i;

	emulate_hit_cost(gov);
	for (i = 0; i < gov->nr_att; i++)
		gov->hit_cost_ns[i] = hit_cost_ns(gov, i);
	find_programs(gov);
	map_hits(gov);
}
