// SPDX-License-Identifier: GPL-2.0
/* The cost governor: keeps the probes' estimated cost (charges.c) within a budget, a share
 * of the traced server's own CPU time (budget.c), by attaching and detaching sampling
 * groups; this file schedules their windows.
 *
 * Probes that may be sampled come in groups (the catalog's `group`: a walk's entry and
 * return are one, its steps another); each group gets an allowance per interval and stays
 * attached until it has spent it.
 * A group whose demand fits stays attached across intervals and its results stay exact.
 * One that does not is detached for the rest of the interval: it is sampled, and the time
 * it was attached is its coverage. Sharing is max-min fair: groups that need less than an
 * equal share get what they need, the others split the rest equally.
 *
 * What the probes may spend, and what they have spent beyond it (the debt, repaid in the
 * next intervals), is budget.c's: a sampled group given nothing stays detached until the
 * debt is paid.
 *
 * The server's own state decides when a stall needs its groups (state_signals.c): while a
 * signal moves, the groups it names are held open on what the stall may spend (the
 * interval's whole budget and the stall bank that calm intervals filled, budget.c), closed
 * when that is spent and opened again as the budget accrues; the other sampled groups
 * yield until the stall ends. A share of each calm interval's budget (SIGNAL_RESERVE) is
 * kept back for the bank.
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
#include "budget.h"
#include "charges.h"

#define TICK_NS 20000000ULL     /* checks while something is sampled; a window due to close
				 * before the next one is checked at its predicted end */
#define MIN_CHECK_NS 500000ULL  /* no check closer than this */
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
#define SPAN_HOLD_NS 250000000ULL /* a long span holds a stall's group open past its room
				   * for at most this long at the group's rate */
#define SPAN_CHECK_NS 5000000ULL /* how often a span holding a stall's group is checked: a
				  * look through the span maps is a few system calls an entry */
#define SIGNAL_RESERVE 0.2      /* of a calm interval's budget, kept back for the stall bank
				 * where the server's state is read (state_signals.c) */
#define STALL_REOPEN_NS 50000000ULL /* a group a stall holds, closed when the stall's room was
				     * spent, opens again once the room would keep it this long
				     * at its rate: windows of tens of ms, not an attach and a
				     * detach (a few ms each) per millisecond of budget earned */

static bool sampling(const struct governor *gov)
{
	return gov->cfg.budget_ppm > 0 && gov->nr_groups > 1;
}

/* Attached time, cumulative. */
static unsigned long long attached_ns(struct governor *gov, unsigned int group,
				      unsigned long long now)
{
	struct window w = attacher_window(&gov->attacher, group);

	return w.open_ns + (w.open ? now - w.opened_ns : 0);
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
 * past its allowance for the rest of the interval. A group of unknown demand (the first
 * interval's) has no average yet, so its runs were charged nothing until the interval
 * ended: the latch group's first window on a slow-disk purge ran 470 ms and cost 5.7 ms
 * on a 0.9 ms allowance, and repaying that closed every sampled group for 5 s
 * (docs/overhead.md, the first interval). */
static void settle_open_groups(struct governor *gov)
{
	bool settled[MAX_ATTACHMENTS] = {};
	unsigned int group;
	int i;

	if (!gov->cfg.cost.programs_apart)
		return;
	for (i = 0; i < gov->nr_att; i++)
		if ((group = gov->att[i].group) && !settled[gov->program_of[i]] &&
		    (sampled(gov, &gov->groups[group]) || gov->groups[group].demand < 0) &&
		    attacher_window(&gov->attacher, group).open) {
			settled[gov->program_of[i]] = true;
			settle_program(gov, gov->program_of[i]);
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

/* Whether a span that began in the group's current window, or whose sleeps it watches (a
 * purge batch or worker task, an applier's event: maps.bpf.h), has lasted STALL_NS. Cut at
 * the window's edge, such a span is lost whole, and the longer a span the likelier a cut:
 * a purge batch of 0.4 s on a slow disk was lost at most edges of the sleep tracepoint's
 * windows of about a second. Held to its end, every span that began in a window is
 * measured whole, the long as the short. */
static bool span_open(struct governor *gov, unsigned int group, unsigned long long now)
{
	struct bpf_map *maps[] = { gov->obj->maps.batch_start, gov->obj->maps.worker_start,
				   gov->obj->maps.applier_start };
	struct purge_span span;
	__u32 key, next, *prev;
	size_t i;

	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		int fd = bpf_map__fd(maps[i]);

		for (prev = NULL; !bpf_map_get_next_key(fd, prev, &next); prev = &key) {
			key = next;
			if (bpf_map_lookup_elem(fd, &key, &span) || span.start_ns + STALL_NS > now)
				continue;
			if ((span.window >> 48 == group && attacher_in_window(&gov->attacher, span.window)) ||
			    (span.sleeps >> 48 == group && attacher_in_window(&gov->attacher, span.sleeps)))
				return true;
		}
	}
	return false;
}

/* A group past its allowance closes, unless a stall or a long span is open in its window
 * and the group has not spent a second allowance: then it is checked again at the next
 * tick. */
static bool window_held(struct governor *gov, unsigned int group, unsigned long long now)
{
	const struct group_state *g = &gov->groups[group];

	return g->spent_ns < 2 * g->allowance_ns &&
	       (stall_open(gov, group, now) || span_open(gov, group, now));
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

/* Whether a group a signal wants has its window open: the signals' held time counts then. */
static bool stall_watched(struct governor *gov)
{
	unsigned int group;

	for (group = 1; group < gov->nr_groups; group++)
		if (gov->wanted >> group & 1 && attacher_window(&gov->attacher, group).open)
			return true;
	return false;
}

/* A group a signal wants while the stall lasts: open while the stall may spend (room,
 * stall_room_ns: the bank and the interval's budget), past its allowance; closed once that
 * is spent, and opened again when the room would keep it STALL_REOPEN_NS at its rate. Its
 * open window is checked in time as a sampled one is (check_within). */
static void hold_for_stall(struct governor *gov, unsigned int group, unsigned long long now,
			   double room, unsigned long long *next)
{
	struct group_state *g = &gov->groups[group];
	bool open = attacher_window(&gov->attacher, group).open;
	double rate, reserve;

	g->open_at_ns = 0;
	if (attacher_opening(&gov->attacher, group)) {
		*next = fmin(*next, now + OPENING_CHECK_NS);
		return;
	}
	if (!open) {
		note_check(g, now);
		rate = fmax(0, g->demand);
		if (room > rate * (CLOSE_LAG_NS + STALL_REOPEN_NS) / 1e9) {
			attacher_open(&gov->attacher, group);
			state_signals_opened(&gov->signals, group, now);
			*next = fmin(*next, now + OPENING_CHECK_NS);
		}
		return;
	}
	rate = demand_now(g, now);
	reserve = rate * CLOSE_LAG_NS / 1e9;
	if (room <= reserve) {
		/* a long span in progress is seen to its end, on at most SPAN_HOLD_NS of the
		 * group's spending beyond the room (a debt the next intervals repay, budget.c) */
		if (room > reserve - rate * SPAN_HOLD_NS / 1e9 && span_open(gov, group, now))
			*next = fmin(*next, now + SPAN_CHECK_NS);
		else
			attacher_close(&gov->attacher, group);
		return;
	}
	*next = fmin(*next, now + check_within(gov, room - reserve));
	if (rate > 0)
		*next = fmin(*next, now + fmax((room - reserve) / rate * 1e9, MIN_CHECK_NS));
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
	double room = 0;

	if (!sampling(gov))
		return 0;
	account_hits(gov);
	settle_open_groups(gov);
	gov->wanted = state_signals_poll(&gov->signals, now, stall_watched(gov));
	if (gov->wanted) {
		gov->bank.stalled = true;
		room = stall_room_ns(gov, now);
	}
	for (group = 1; group < gov->nr_groups; group++) {
		struct group_state *g = &gov->groups[group];
		double left = g->allowance_ns - g->spent_ns, rate, reserve;

		if (gov->wanted >> group & 1 && (sampled(gov, g) || left <= 0)) {
			/* a group that fits its allowance (the applier's) stays on it */
			hold_for_stall(gov, group, now, room, &next);
			continue;
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
			else if (!window_held(gov, group, now))
				attacher_close(&gov->attacher, group);
			continue; /* held open by a wait in progress: checked again at the next tick */
		}
		if (sampled(gov, g))
			next = fmin(next, now + check_within(gov, left - reserve));
		if (left > reserve && rate > 0) /* when it will have spent its allowance */
			next = fmin(next, now + fmax((left - reserve) / rate * 1e9, MIN_CHECK_NS));
	}
	return next;
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

/* Whether tick decides a group's window while a stall is on: one a signal wants that is
 * sampled or has spent its allowance (hold_for_stall), and the other sampled ones (they
 * yield). A wanted group that fits its allowance opens as in a calm interval: left to
 * tick, it stayed closed as long as the stall (the demo's latch group, 0% of 13 s of
 * row-lock waits begun, while the budget went 93% unspent). */
static bool held_by_tick(struct governor *gov, unsigned int group)
{
	const struct group_state *g = &gov->groups[group];

	if (!gov->wanted)
		return false;
	return sampled(gov, g) || (gov->wanted >> group & 1 && g->allowance_ns <= 0);
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
		if (held_by_tick(gov, coolest))
			continue;
		if (gov->groups[coolest].allowance_ns > 0 || gov->groups[coolest].demand <= 0) {
			unsigned long long delay = window_delay_ns(gov, coolest);

			if (delay)
				gov->groups[coolest].open_at_ns = now + delay;
			else
				attacher_open(&gov->attacher, coolest);
		}
	}
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
	bank_settle(gov, budget);
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
	for (i = 0; i < nr_att; i++)
		if (att[i].group >= gov->nr_groups)
			gov->nr_groups = att[i].group + 1;
	charges_start(gov);
	/* every CPU running the server's probed code, each hit counted twice over */
	gov->fastest_spend = fmax(1, sysconf(_SC_NPROCESSORS_ONLN)) * HIT_INDIRECT_FACTOR * 1e9;
	gov->started_ns = gov->interval_start_ns = now_ns(CLOCK_MONOTONIC);
	gov->seed = gov->started_ns ^ getpid();
	if (cfg->pid > 0)
		gov->cpu_start_ns = gov->cpu_last_ns = server_cpu_ns(cfg->pid);
	for (group = 1; group < gov->nr_groups; group++) {
		gov->groups[group].demand = -1; /* unknown until it has been attached a while */
		/* the first interval: an equal share of one CPU's budget, more than a quiet
		 * server earns; shares of what it is sure to earn (a quarter CPU) cut a deep
		 * read made at the attach (docs/overhead.md, the first interval) */
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
	if (gov->cost_scale != 1)
		fprintf(out, ",\"emulated_hit_cost_scale\":%g", gov->cost_scale);
	if (gov->signals.n) /* the stall bank: in it now, put in and spent over the recording */
		fprintf(out, ",\"bank_ns\":[%.0f,%.0f,%.0f]", gov->bank.banked_ns, gov->bank.deposited_ns,
			gov->bank.spent_ns);
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
