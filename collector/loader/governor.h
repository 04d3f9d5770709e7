/* SPDX-License-Identifier: GPL-2.0 */
/* The cost governor: attaches the probes and keeps their estimated cost within a budget,
 * a share of the traced server's own CPU time, by sampling the hot ones. */
#ifndef __INNOSTALL_GOVERNOR_H
#define __INNOSTALL_GOVERNOR_H

#include <stdio.h>
#include <sys/types.h>
#include <time.h>
#include "innostall.h"
#include "attacher.h"
#include "calibrate.h"
#include "attachment.h"
#include "state_signals.h"
#include "budget.h"

struct governor_config {
	long budget_ppm; /* of the server's CPU time; 0: no budget, nothing is sampled */
	struct hit_cost cost;
	pid_t pid;       /* the traced process: uprobe filter and CPU time; <= 0: any, one CPU */
	const char *binary; /* where attachments without a path are */
	long interval_ms;
	const struct state_signals *signals; /* the server's state that opens groups at once; NULL: none */
};

struct group_state {
	double cost_ns;      /* estimated overhead, whole recording */
	double allowance_ns; /* overhead it may cost in this interval */
	double spent_ns;     /* ... and has cost so far */
	double demand;       /* its overhead per second attached (ns/s); < 0: unknown */
	unsigned long long attached_before_ns; /* attached time before this interval */
	unsigned long long open_at_ns; /* when its window is to open in this interval; 0: asked */
	unsigned long long checked_ns; /* the last check (tick), and spent_ns then */
	double spent_at_check;
};

struct governor {
	struct governor_config cfg;
	struct innostall_bpf *obj;
	struct attachment *att;
	int nr_att;
	unsigned int nr_groups; /* highest group + 1 */
	struct group_state groups[MAX_GROUPS];
	struct attacher attacher;
	unsigned long long hits[MAX_ATTACHMENTS]; /* cumulative, as last read */
	unsigned long long slot_hits[MAX_ATTACHMENTS]; /* probe_hits summed, as last read */
	const volatile __u64 *hit_counts; /* probe_hits, mapped: a row per CPU */
	int hit_rows; /* its CPUs, mapped until the loader exits */
	double hit_cost_ns[MAX_ATTACHMENTS]; /* of one hit, per attachment */
	/* Programs timed by the kernel (cost.programs_apart): each attachment's hits are also
	 * charged its program's average run, and each interval the charge is set right by the
	 * run time the kernel measured (governor.c, settle_run_times). */
	struct program_run {
		struct bpf_program *prog;
		unsigned long long ns, runs; /* cumulative, as last settled */
		double average_ns; /* a run, over the last settled stretch */
		int server_slot; /* a tracepoint's: where it counts its runs in the server's
				  * context (innostall.h); -1 for a uprobe's program */
		unsigned long long server_runs; /* in that slot, as last settled */
	} programs[MAX_ATTACHMENTS];
	int nr_programs;
	int program_of[MAX_ATTACHMENTS]; /* index into programs */
	unsigned long long hits_settled[MAX_ATTACHMENTS]; /* hits when last settled */
	double run_charged_ns[MAX_ATTACHMENTS]; /* average runs charged since then */
	unsigned long long latch_extra_ns, purge_sleep_extra_ns; /* counters, as last read */
	unsigned long long switch_runs, waking_runs; /* the scheduler tracepoints' runs, as last read */
	unsigned long long interval_start_ns, started_ns;
	unsigned int seed; /* where sampled windows open in their interval (rand_r) */
	unsigned long long cpu_start_ns, cpu_last_ns; /* the server's CPU time */
	double budget_ns; /* the whole recording's budget so far */
	double fastest_spend; /* the most the probes could cost a second (ns/s): tick() */
	struct state_signals signals; /* read at the checks (state_signals.c) */
	__u32 wanted; /* the groups the signals want open now */
	struct stall_bank bank; /* what calm intervals saved for stalls (budget.c) */
	double cost_scale; /* the bench's emulated trap cost (emulate_hit_cost); 1: none */
	pthread_t thread; /* checks and plans on its own (governor.c) */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;
	/* when governor_stop began detaching: the final snapshot is taken as of then, so a
	 * group attached to the end reads as attached the whole time */
	unsigned long long stopped_ns[2]; /* CLOCK_MONOTONIC, CLOCK_REALTIME; 0 while running */
};

/* Attach everything (sampled groups open) and start governing on a thread of its own:
 * every interval it shares the budget out and reopens the sampled groups, and between
 * them it closes the groups that have spent their share. Dies with a message on failure. */
void governor_start(struct governor *gov, struct innostall_bpf *obj, struct attachment *att,
		    int nr_att, const struct governor_config *cfg);
/* The "hits" and "governor" members of a snapshot line (leading comma included). */
void governor_print(struct governor *gov, FILE *out);
/* Stop governing and detach everything. */
void governor_stop(struct governor *gov);
/* now on clock (CLOCK_MONOTONIC or CLOCK_REALTIME), or when the governor stopped */
unsigned long long governor_now(const struct governor *gov, clockid_t clock);

#endif /* __INNOSTALL_GOVERNOR_H */
