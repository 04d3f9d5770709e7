/* SPDX-License-Identifier: GPL-2.0 */
/* Attaching and detaching the probes, a sampling group at a time, off the governor's
 * thread: closing a uprobe link waits for an RCU grace period (100-300 ms here). */
#ifndef __INNOSTALL_ATTACHER_H
#define __INNOSTALL_ATTACHER_H

#include <pthread.h>
#include <sys/types.h>
#include "innostall.h"
#include "attachment.h"

/* A group's sampling window: open while all of its probes are attached and counted. */
struct window {
	bool open;
	unsigned long long opened_ns; /* CLOCK_MONOTONIC */
	unsigned long long open_ns;   /* total time open before the current opening */
	unsigned long long windows;   /* openings */
};

struct attacher {
	struct innostall_bpf *obj;
	struct attachment *att;
	int nr_att;
	unsigned int nr_groups;
	pid_t pid;
	const char *binary;

	pthread_t worker;
	pthread_mutex_t lock;
	pthread_cond_t work;
	bool stopping;
	bool want_open[MAX_GROUPS];
	bool attached[MAX_GROUPS]; /* some of its links are attached (all, if wanted) */
	unsigned long long asked[MAX_GROUPS], asks; /* order of attacher_open calls */
	unsigned long long gen[MAX_GROUPS]; /* the windows map's value: odd while open */
	struct window window[MAX_GROUPS];
};

/* Attach every group now (die on failure) and start the worker. */
void attacher_start(struct attacher *a, struct innostall_bpf *obj, struct attachment *att,
		    int nr_att, pid_t pid, const char *binary);
/* Ask for a group to be attached; its window opens once all of it is. Groups asked for
 * together are attached in the order asked. */
void attacher_open(struct attacher *a, unsigned int group);
/* Close a group's window now; its probes are detached in the background. */
void attacher_close(struct attacher *a, unsigned int group);
struct window attacher_window(struct attacher *a, unsigned int group);
/* Whether a group was asked open and its window has not opened yet (it is being attached). */
bool attacher_opening(struct attacher *a, unsigned int group);
/* Close everything, wait until every probe is detached, stop the worker. */
void attacher_stop(struct attacher *a);
/* A uprobe link closed on a thread of its own (its close waits for a grace period). */
void detach_link(int fd);

/* Whether state a program saved under window token (maps.bpf.h's window_token: its group
 * in the top 16 bits, the window's generation below) is of its group's current window, as
 * the programs' window_unbroken tells it; group 0 is never sampled. */
static inline bool attacher_in_window(const struct attacher *a, __u64 token)
{
	unsigned int group = token >> 48;

	return !group || (group < MAX_GROUPS && (token & 0xffffffffffffULL) == a->gen[group]);
}

#endif /* __INNOSTALL_ATTACHER_H */
