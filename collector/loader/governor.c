// SPDX-License-Identifier: GPL-2.0
/* The cost governor. A probe hit costs the probed thread a trap (calibrate.c measures it)
 * and its program's run (the kernel times it: run_time.c), and the probes count their hits
 * in the kernel (probe_hits), so the overhead we add to the server is known as we go: hits
 * x trap, plus run times, times what the server pays around them (calibrate.h). The
 * scheduler tracepoints count their runs in the server's context the same way, at the
 * calibrated cost of a tracepoint's dispatch. The budget is a share of the server's own
 * CPU time over the last interval.
 *
 * Probes that may be sampled come in groups (the catalog's `group`: a walk's entry and
 * return are one, its steps another); each group gets an allowance per interval and stays
 * attached until it has spent it.
 * A group whose demand fits stays attached across intervals and its results stay exact.
 * One that does not is detached for the rest of the interval: it is sampled, and the time
 * it was attached is its coverage. Sharing is max-min fair: groups that need less than an
 * equal share get what they need, the others split the rest equally.
 *
 * A window cannot be shorter than attaching and detaching take (a few ms), and a probe hit
 * hundreds of thousands of times a second can spend a small budget several times over in
 * that time. So the budget holds over the recording, not per interval: what the probes
 * cost beyond the budget so far is taken off the next interval's, and a sampled group
 * given nothing stays detached until the debt is paid.
 *
 * The server's own state decides when a stall needs its groups (state_signals.c): a group
 * a signal wants is opened at once and held past its allowance while the recording as a
 * whole is within its budget (signal_room); the other sampled groups yield to it while
 * the stall lasts, and a share of each calm interval's budget (SIGNAL_RESERVE) is kept
 * back for it. Past that, the debt is repaid as any other.
 *
 * The governor runs on a thread of its own: the main thread may block writing events to
 * a slow reader, and a check that waits for it lets a hot probe run on unchecked.
 *
 * Detaching is the only way to save the cost: the trap is paid before any program runs,
 * so filtering inside BPF would save nothing. Attaching and detaching happen on the
 * attacher's thread (attacher.c); hits counted after a group closed, until its
 * breakpoints are gone, are charged to it like any other. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "innostall.h"
#include "innostall.skel.h"
#include "trace_helpers.h"
#include "governor.h"
#include "run_time.h"

#define TICK_NS 20000000ULL     /* checks while something is sampled; a window due to close
				 * before the next one is checked at its predicted end */
#define MIN_CHECK_NS 500000ULL  /* no check closer than this */
#define AIM 0.85                /* share of the budget planned for: closing a group takes
				 * a while, and its hits until then count too. With uprobe
				 * hits counted twice over (HIT_INDIRECT_FACTOR), 0.9 left 20
				 * five-second recordings at 0.90-1.001 of their budget */
#define HEADROOM 1.5            /* a group that fits may cost this much more than last time
				 * before it is sampled: loads fluctuate */
#define OPENING_CHECK_NS 1000000ULL /* checks while a group is being attached: its window
				     * opens when the last probe is in (7-8 ms for the version
				     * steps), and in the worst case, seen only at the next tick,
				     * it ran 12 ms on a 5 ms allowance */
#define SAMPLED_CHECK_NS 1000000ULL /* the soonest check of a sampled group's open window */
#define CLOSE_LAG_NS 1000000ULL /* from the decision to close a group to its last breakpoint
				  * gone: the attacher's wakeup and the links' close */
#define MIN_WINDOW_NS MIN_CHECK_NS /* each group is attached at least this long per
				      * interval, so its demand is known again when the load
				      * changes; short, as it is spent whatever the budget */
#define STALL_NS 10000000ULL   /* a latch wait open this long in a group's window holds the
				 * window open past its allowance: cut, the stall in progress
				 * would be lost whole, where a DBA most wants it; a stalled
				 * load hits the probes little meanwhile */
#define CHEAP_SHARE 0.25       /* of an interval's budget, kept for the coolest groups
				 * whatever the debt (keep_cool_groups) */
#define SIGNAL_RESERVE 0.2      /* of an interval's budget, kept back for stalls where the
				 * server's state is read (state_signals.c) */
#define MIN_BASE_CPU 0.25       /* the budget is reckoned on at least this share of one CPU:
				 * 1% of a nearly idle server is less than one long version
				 * walk costs (about 1 ms), and sampling would hide the very
				 * read a DBA came to see, where the cost harms no one */

static bool sampling(const struct governor *gov)
{
	return gov->cfg.budget_ppm > 0 && gov->nr_groups > 1;
}

/* utime + stime of the traced process, in ns; 0 when it cannot be read. */
static unsigned long long server_cpu_ns(pid_t pid)
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

/* CPU time the budget is a share of since the start: the server's up to cpu_now (its
 * last reading if 0), or one CPU's. */
static unsigned long long budget_base_ns(const struct governor *gov, unsigned long long now,
					 unsigned long long cpu_now)
{
	if (gov->cfg.pid <= 0)
		return now - gov->started_ns;
	return (cpu_now ? cpu_now : gov->cpu_last_ns) - gov->cpu_start_ns;
}

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

/* Attached time, cumulative. */
static unsigned long long attached_ns(struct governor *gov, unsigned int group,
				      unsigned long long now)
{
	struct window w = attacher_window(&gov->attacher, group);

	return w.open_ns + (w.open ? now - w.opened_ns : 0);
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
static void account_hits(struct governor *gov)
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

/* One program's run time since it was last settled, shared among its attachments by their
 * hits since then (a tracepoint, which counts no hits of its own, has one attachment), less
 * the average runs already charged for those hits. */
static void settle_program(struct governor *gov, int p)
{
	struct program_run *prog = &gov->programs[p];
	unsigned long long ns, runs, hits = 0;
	int i, sharing = 0;
	double in_server;

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
static void settle_run_times(struct governor *gov)
{
	int p;

	if (gov->cfg.cost.programs_apart)
		for (p = 0; p < gov->nr_programs; p++)
			settle_program(gov, p);
}

/* Whether a group's window is shorter than the interval: its demand, known, is more than
 * its allowance. */
static bool sampled(const struct governor *gov, const struct group_state *g)
{
	return g->demand >= 0 && g->demand * gov->cfg.interval_ms / 1e3 > g->allowance_ns;
}

/* Settle the programs of the sampled groups whose windows are open, at each check (those
 * of the groups that fit, at the interval's end: they are open all the time): a
 * program's runs are charged at its average of the last interval until settled, and a
 * burst of longer runs (the deep walks of a scan, each taking its stack) ran a window on
 * past its allowance for the rest of the interval. */
static void settle_open_groups(struct governor *gov)
{
	bool settled[MAX_ATTACHMENTS] = {};
	unsigned int group;
	int i;

	if (!gov->cfg.cost.programs_apart)
		return;
	for (i = 0; i < gov->nr_att; i++)
		if ((group = gov->att[i].group) && !settled[gov->program_of[i]] &&
		    sampled(gov, &gov->groups[group]) && attacher_window(&gov->attacher, group).open) {
			settled[gov->program_of[i]] = true;
			settle_program(gov, gov->program_of[i]);
		}
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

/* Whether a latch wait that began in the group's current window has lasted STALL_NS. */
static bool stall_open(struct governor *gov, unsigned int group, unsigned long long now)
{
	int fd = bpf_map__fd(gov->obj->maps.latch_waits);
	__u32 key, next, *prev = NULL;
	struct wait_state w;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (!bpf_map_lookup_elem(fd, &key, &w) && w.window >> 48 == group &&
		    attacher_in_window(&gov->attacher, w.window) && w.start_ns + STALL_NS <= now)
			return true;
	}
	return false;
}

/* A group past its allowance closes, unless a stall is open in its window and the group
 * has not spent a second allowance: then it is checked again at the next tick. */
static bool window_held(struct governor *gov, unsigned int group, unsigned long long now)
{
	const struct group_state *g = &gov->groups[group];

	return g->spent_ns < 2 * g->allowance_ns && stall_open(gov, group, now);
}

static void note_check(struct group_state *g, unsigned long long now)
{
	g->checked_ns = now;
	g->spent_at_check = g->spent_ns;
}

/* What an open group costs a second now: its demand of the last interval, or what it spent
 * a second since the last check when that is more. In the seed's worst case a scan's steps
 * began inside a window opened while the server was idle, and at the last interval's
 * demand the governor foresaw no end to its allowance: it went on until the next tick. */
static double demand_now(struct group_state *g, unsigned long long now)
{
	double rate = 0;

	if (g->checked_ns && now > g->checked_ns)
		rate = (g->spent_ns - g->spent_at_check) * 1e9 / (now - g->checked_ns);
	note_check(g, now);
	return fmax(rate, g->demand);
}

/* How soon a sampled group's window is checked again, with left to spend: before it could
 * have spent it at the fastest a group can spend, no sooner than SAMPLED_CHECK_NS. A group
 * that fits its interval is open all the time and checked at the ticks: checking those
 * every 5 ms as well took the loader from 0.75% to 3.3-6.5% of a core under the steady
 * load (make bench, 2026-11-27). */
static double check_within(const struct governor *gov, double left)
{
	return fmax(left / gov->fastest_spend * 1e9, SAMPLED_CHECK_NS);
}

/* Whether the signals may hold groups open: the recording's cost so far within what it was
 * planned to spend (AIM of its budget), the interval's budget earned so far counted. */
static bool signal_room(const struct governor *gov)
{
	double cost = 0;
	unsigned int group;

	if (!gov->signals.n)
		return false;
	for (group = 0; group < gov->nr_groups; group++)
		cost += gov->groups[group].cost_ns;
	return cost < AIM * gov->budget_ns;
}

/* Returns when it wants to be called next, 0 for never. A group closes once what it has
 * left is what it would spend while closing (CLOSE_LAG_NS at its present rate). A sampled
 * group's open window is checked again before it could have spent what it has left at the
 * fastest a group can spend (fastest_spend, check_within): its rate of the last interval
 * is no bound, as a scan that began since spends a hundred times as fast. In the seed's
 * worst case a version-step window ran 11 ms between two checks and spent 14 ms on a 4 ms
 * allowance. */
static unsigned long long tick(struct governor *gov)
{
	unsigned long long now = now_ns(CLOCK_MONOTONIC), next = now + TICK_NS;
	unsigned int group;

	if (!sampling(gov))
		return 0;
	account_hits(gov);
	settle_open_groups(gov);
	gov->wanted = state_signals_poll(&gov->signals, now, gov->wanted != 0);
	if (!signal_room(gov))
		gov->wanted = 0; /* past what was planned: the budget holds, stall or not */
	for (group = 1; group < gov->nr_groups; group++) {
		struct group_state *g = &gov->groups[group];
		double left = g->allowance_ns - g->spent_ns, rate, reserve;

		if (gov->wanted >> group & 1 && !attacher_window(&gov->attacher, group).open &&
		    !attacher_opening(&gov->attacher, group)) { /* a stall: its window opens now */
			g->open_at_ns = 0;
			attacher_open(&gov->attacher, group);
			state_signals_opened(&gov->signals, group, now);
		}

		if (gov->wanted && !(gov->wanted >> group & 1) && sampled(gov, g)) {
			/* a stall elsewhere: a sampled group yields until it ends */
			if (attacher_window(&gov->attacher, group).open)
				attacher_close(&gov->attacher, group);
			note_check(g, now);
			continue;
		}
		if (g->open_at_ns && now >= g->open_at_ns) { /* its window's time has come */
			g->open_at_ns = 0;
			attacher_open(&gov->attacher, group);
		} else if (g->open_at_ns && g->open_at_ns < next) {
			next = g->open_at_ns;
		}
		if (!attacher_window(&gov->attacher, group).open) {
			note_check(g, now);
			if (attacher_opening(&gov->attacher, group) && now + OPENING_CHECK_NS < next)
				next = now + OPENING_CHECK_NS;
			continue;
		}
		rate = demand_now(g, now);
		reserve = rate * CLOSE_LAG_NS / 1e9;
		if (left < reserve) {
			unsigned long long attached = attached_ns(gov, group, now) - g->attached_before_ns;

			if (attached < MIN_WINDOW_NS)
				next = fmin(next, now + MIN_WINDOW_NS - attached);
			else if (!window_held(gov, group, now) && !(gov->wanted >> group & 1))
				attacher_close(&gov->attacher, group);
			continue; /* held open by a stall: checked again at the next tick */
		}
		if (sampled(gov, g))
			next = fmin(next, now + check_within(gov, left - reserve));
		if (left > reserve && rate > 0) /* when it will have spent its allowance */
			next = fmin(next, now + fmax((left - reserve) / rate * 1e9, MIN_CHECK_NS));
	}
	return next;
}

static double demand_of(struct governor *gov, unsigned int group)
{
	return gov->groups[group].demand < 0 ? INFINITY : gov->groups[group].demand;
}

/* The group of least demand not yet taken (the first of equals), marked taken now. */
static unsigned int take_coolest(struct governor *gov, bool *taken)
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
static void share_out(struct governor *gov, double budget, double debt, double interval_s)
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

/* Demand of the closing interval: cost per second attached (kept when not attached). */
static void update_demands(struct governor *gov, unsigned long long now)
{
	unsigned int group;

	for (group = 1; group < gov->nr_groups; group++) {
		struct group_state *g = &gov->groups[group];
		unsigned long long attached = attached_ns(gov, group, now);

		if (attached > g->attached_before_ns)
			g->demand = g->spent_ns * 1e9 / (attached - g->attached_before_ns);
		g->attached_before_ns = attached;
		g->spent_ns = 0;
		note_check(g, now);
	}
}

/* How long after the interval's start a group's window opens: at once for a group whose
 * allowance covers the interval, else at a random point of the time its allowance will
 * not cover. Opening every window at the interval's start would sample the same phase of
 * each second: the MariaDB purge coordinator runs its batches in bursts about once a
 * second, and a window that always closed before the burst never saw one. */
static unsigned long long window_delay_ns(struct governor *gov, unsigned int group)
{
	const struct group_state *g = &gov->groups[group];
	double interval_ns = gov->cfg.interval_ms * 1e6, open_ns;

	if (g->demand <= 0 || g->allowance_ns <= 0)
		return 0;
	open_ns = g->allowance_ns / g->demand * 1e9;
	if (open_ns >= interval_ns)
		return 0;
	return (interval_ns - open_ns) * rand_r(&gov->seed) / ((double)RAND_MAX + 1);
}

/* Reopen every group, each for at least MIN_WINDOW_NS, the hottest last (attacher.h), a
 * sampled one where window_delay_ns says; but not one that costs something and is given
 * nothing: the budget is in debt. */
static void open_coolest_first(struct governor *gov, unsigned long long now)
{
	bool asked[MAX_GROUPS] = {};
	unsigned int n, coolest;

	for (n = 1; n < gov->nr_groups; n++) {
		coolest = take_coolest(gov, asked);
		gov->groups[coolest].open_at_ns = 0;
		if (gov->groups[coolest].allowance_ns > 0 || gov->groups[coolest].demand <= 0) {
			unsigned long long delay = window_delay_ns(gov, coolest);

			if (delay)
				gov->groups[coolest].open_at_ns = now + delay;
			else
				attacher_open(&gov->attacher, coolest);
		}
	}
}

/* What the probes have cost beyond the share of the budget planned for so far (0 when
 * within it). An interval's overspend is repaid in the next, but the last interval's cannot
 * be, and an interval could spend twice its allowance (program runs are settled only at its
 * end): so the recording as a whole aims at AIM of its budget too, which keeps a short one
 * within it. */
static double overspent_ns(const struct governor *gov)
{
	double cost = 0;
	unsigned int group;

	for (group = 0; group < gov->nr_groups; group++)
		cost += gov->groups[group].cost_ns;
	return fmax(0, cost - AIM * gov->budget_ns);
}

/* The budget earned since the interval began: its share of the CPU time the server used
 * (or one CPU's, with no server), reckoned on at least MIN_BASE_CPU. *cpu_now: the
 * server's CPU time now, 0 when unread. */
static double interval_budget_ns(const struct governor *gov, unsigned long long now,
				 unsigned long long *cpu_now)
{
	double base_ns = gov->cfg.pid > 0 ? 0 : now - gov->interval_start_ns;

	*cpu_now = gov->cfg.pid > 0 ? server_cpu_ns(gov->cfg.pid) : 0;
	if (*cpu_now)
		base_ns = *cpu_now - gov->cpu_last_ns;
	base_ns = fmax(base_ns, MIN_BASE_CPU * (now - gov->interval_start_ns));
	return base_ns * gov->cfg.budget_ppm / 1e6;
}

static void plan_interval(struct governor *gov)
{
	unsigned long long now = now_ns(CLOCK_MONOTONIC), cpu;
	double budget, always, debt;

	account_hits(gov);
	settle_run_times(gov);
	budget = interval_budget_ns(gov, now, &cpu);
	if (cpu)
		gov->cpu_last_ns = cpu;
	gov->budget_ns += budget;
	debt = overspent_ns(gov);
	budget *= AIM; /* for the hits of groups still being detached */
	if (gov->signals.n && !gov->wanted)
		budget *= 1 - SIGNAL_RESERVE; /* calm: saved for the stalls the signals will see */
	always = gov->groups[0].spent_ns;
	gov->groups[0].spent_ns = 0;
	gov->interval_start_ns = now;
	if (!sampling(gov))
		return;
	update_demands(gov, now);
	/* the next interval is budgeted like the last one: the best guess of the load */
	share_out(gov, budget - always, debt, gov->cfg.interval_ms / 1e3);
	open_coolest_first(gov, now);
}

static void *govern(void *arg)
{
	struct governor *gov = arg;
	unsigned long long interval = gov->cfg.interval_ms * 1000000ULL;
	unsigned long long next_interval = gov->started_ns + interval, check, wake;
	struct timespec until;

	run_promptly();
	pthread_mutex_lock(&gov->lock);
	while (!gov->stopping) {
		if (now_ns(CLOCK_MONOTONIC) >= next_interval) {
			plan_interval(gov);
			next_interval += interval;
		}
		check = tick(gov);
		wake = check && check < next_interval ? check : next_interval;
		until.tv_sec = wake / 1000000000ULL;
		until.tv_nsec = wake % 1000000000ULL;
		pthread_cond_timedwait(&gov->wake, &gov->lock, &until);
	}
	pthread_mutex_unlock(&gov->lock);
	return NULL;
}

void governor_start(struct governor *gov, struct innostall_bpf *obj, struct attachment *att,
		    int nr_att, const struct governor_config *cfg)
{
	pthread_condattr_t clock;
	unsigned int group;
	int i;

	memset(gov, 0, sizeof(*gov));
	gov->cfg = *cfg;
	if (cfg->signals) {
		gov->signals = *cfg->signals;
		gov->signals.pid = cfg->pid;
	}
	gov->obj = obj;
	gov->att = att;
	gov->nr_att = nr_att;
	gov->nr_groups = 1;
	for (i = 0; i < nr_att; i++) {
		if (att[i].group >= gov->nr_groups)
			gov->nr_groups = att[i].group + 1;
		gov->hit_cost_ns[i] = hit_cost_ns(gov, i);
	}
	find_programs(gov);
	map_hits(gov);
	/* every CPU running the server's probed code, each hit counted twice over */
	gov->fastest_spend = fmax(1, sysconf(_SC_NPROCESSORS_ONLN)) * HIT_INDIRECT_FACTOR * 1e9;
	gov->started_ns = gov->interval_start_ns = now_ns(CLOCK_MONOTONIC);
	gov->seed = gov->started_ns ^ getpid();
	if (cfg->pid > 0)
		gov->cpu_start_ns = gov->cpu_last_ns = server_cpu_ns(cfg->pid);
	for (group = 1; group < gov->nr_groups; group++) {
		gov->groups[group].demand = -1; /* unknown until it has been attached a while */
		/* the first interval: an equal share of one CPU's budget */
		gov->groups[group].allowance_ns = sampling(gov) ?
			cfg->budget_ppm / 1e6 * cfg->interval_ms * 1e6 / (gov->nr_groups - 1) : INFINITY;
	}
	attacher_start(&gov->attacher, obj, att, nr_att, cfg->pid, cfg->binary);
	pthread_mutex_init(&gov->lock, NULL);
	pthread_condattr_init(&clock);
	pthread_condattr_setclock(&clock, CLOCK_MONOTONIC);
	pthread_cond_init(&gov->wake, &clock);
	pthread_condattr_destroy(&clock);
	if (pthread_create(&gov->thread, NULL, govern, gov))
		die("cannot start the governor thread");
}

unsigned long long governor_now(const struct governor *gov, clockid_t clock)
{
	unsigned long long stopped = gov->stopped_ns[clock == CLOCK_REALTIME];

	return stopped ? stopped : now_ns(clock);
}

void governor_print(struct governor *gov, FILE *out)
{
	unsigned long long now = governor_now(gov, CLOCK_MONOTONIC), cpu;
	double overhead = 0, budget;
	unsigned int group;
	int i;

	pthread_mutex_lock(&gov->lock);
	account_hits(gov);
	settle_run_times(gov);
	fprintf(out, ",\"hits\":[");
	for (i = 0; i < gov->nr_att; i++)
		fprintf(out, "%s%llu", i ? "," : "", gov->hits[i]);
	for (group = 0; group < gov->nr_groups; group++)
		overhead += gov->groups[group].cost_ns;
	/* The groups spend an interval's allowance from its start on, the budget accrues with
	 * the server's CPU: a snapshot taken mid-interval (the final one, at a signal) counts
	 * both up to now, or it would charge the interval's spending against none of its budget. */
	budget = gov->budget_ns + interval_budget_ns(gov, now, &cpu);
	fprintf(out, "],\"tracepoint_runs\":[%llu,%llu]", gov->switch_runs, gov->waking_runs);
	fprintf(out, ",\"governor\":{\"budget_ppm\":%ld,\"entry_ns\":%.0f,\"return_ns\":%.0f,"
		"\"tracepoint_ns\":%.0f,\"server_cpu_ns\":%llu,\"budget_ns\":%.0f,"
		"\"overhead_ns\":%.0f,\"groups\":[",
		gov->cfg.budget_ppm, gov->cfg.cost.entry_ns, gov->cfg.cost.return_ns,
		gov->cfg.cost.tracepoint_ns, budget_base_ns(gov, now, cpu), budget, overhead);
	for (group = 1; group < gov->nr_groups; group++) {
		/* [group, attached ns, windows, overhead ns], cumulative */
		fprintf(out, "%s[%u,%llu,%llu,%.0f]", group > 1 ? "," : "", group,
			attached_ns(gov, group, now), attacher_window(&gov->attacher, group).windows,
			gov->groups[group].cost_ns);
	}
	fprintf(out, "]");
	state_signals_print(&gov->signals, out, now);
	fprintf(out, "}");
	pthread_mutex_unlock(&gov->lock);
}

void governor_stop(struct governor *gov)
{
	pthread_mutex_lock(&gov->lock);
	gov->stopped_ns[0] = now_ns(CLOCK_MONOTONIC);
	gov->stopped_ns[1] = now_ns(CLOCK_REALTIME);
	gov->stopping = true;
	pthread_cond_signal(&gov->wake);
	pthread_mutex_unlock(&gov->lock);
	pthread_join(gov->thread, NULL);
	attacher_stop(&gov->attacher);
}
