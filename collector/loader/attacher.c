// SPDX-License-Identifier: GPL-2.0
/* The attacher: a worker thread that attaches and detaches sampling groups as the cost
 * governor asks, so that the governor never waits for the kernel.
 *
 * Closing a uprobe link removes its breakpoint at once, then waits for an RCU grace period
 * (100-300 ms here) before close() returns. Each link is closed on a thread of its own,
 * so all the breakpoints of a closing group go at once, and attaching goes on meanwhile.
 *
 * Windows (see maps.bpf.h): a group's slot in the `windows` map turns odd once all of its
 * probes are attached, and even the moment it is asked to close, before anything is
 * detached. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "innostall.h"
#include "innostall.skel.h"
#include "trace_helpers.h"
#include "attacher.h"
#include "uprobe.h"

/* A BTF tracepoint program's link (the tracepoint is the one it was loaded for). */
static int tracepoint_link(int prog_fd)
{
	int fd = bpf_raw_tracepoint_open(NULL, prog_fd);

	return fd < 0 ? -errno : fd;
}

static bool attach_one(struct attacher *a, int i)
{
	struct attachment *at = &a->att[i];
	struct bpf_program *prog = bpf_object__find_program_by_name(a->obj->obj, at->prog);
	int fd = at->tracepoint ? tracepoint_link(bpf_program__fd(prog)) :
		 uprobe_link(bpf_program__fd(prog), at->path ?: a->binary, at->offset,
			     at->retprobe, a->pid, (__u64)at->group << 32 | i);

	if (fd < 0) {
		warn("cannot attach %s at %s+0x%zx: %s", at->prog, at->path ?: a->binary,
		     at->offset, strerror(-fd));
		return false;
	}
	at->link = fd;
	return true;
}

static pthread_mutex_t closing_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_closed = PTHREAD_COND_INITIALIZER;
static int closing; /* links being closed on their own threads */

static void *close_link(void *fd)
{
	close((int)(long)fd);
	pthread_mutex_lock(&closing_lock);
	if (--closing == 0)
		pthread_cond_broadcast(&all_closed);
	pthread_mutex_unlock(&closing_lock);
	return NULL;
}

/* Close in the background; where no thread can be had, here. attacher_stop waits for
 * every link so closed (calibrate.c's too). */
void detach_link(int fd)
{
	pthread_attr_t attr;
	pthread_t thread;
	int err;

	pthread_mutex_lock(&closing_lock);
	closing++;
	pthread_mutex_unlock(&closing_lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&thread, &attr, close_link, (void *)(long)fd);
	pthread_attr_destroy(&attr);
	if (err)
		close_link((void *)(long)fd);
}

static void wait_all_closed(void)
{
	pthread_mutex_lock(&closing_lock);
	while (closing)
		pthread_cond_wait(&all_closed, &closing_lock);
	pthread_mutex_unlock(&closing_lock);
}

static void detach_group(struct attacher *a, unsigned int group)
{
	int i;

	for (i = a->nr_att - 1; i >= 0; i--)
		if (a->att[i].group == group && a->att[i].link) {
			detach_link(a->att[i].link);
			a->att[i].link = 0;
		}
}

/* Returns first (return probes, and return programs after a call): every entry seen after
 * that has its end seen too. All or nothing. */
static bool attach_group(struct attacher *a, unsigned int group)
{
	int pass, i;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < a->nr_att; i++)
			if (a->att[i].group == group && ends_span(&a->att[i]) == !pass &&
			    !attach_one(a, i)) {
				detach_group(a, group);
				return false;
			}
	return true;
}

/* Called with the lock held. */
static void set_window(struct attacher *a, unsigned int group, bool open)
{
	struct window *w = &a->window[group];
	unsigned long long now = now_ns(CLOCK_MONOTONIC);

	a->gen[group]++;
	bpf_map_update_elem(bpf_map__fd(a->obj->maps.windows), &group, &a->gen[group], BPF_ANY);
	if (open) {
		w->opened_ns = now;
		w->windows++;
	} else {
		w->open_ns += now - w->opened_ns;
	}
	w->open = open;
}

/* A group that is to be detached, or -1. Called with the lock held. */
static int next_detach(struct attacher *a)
{
	unsigned int group;

	for (group = 1; group < a->nr_groups; group++)
		if (a->attached[group] && !a->want_open[group])
			return group;
	return -1;
}

/* The group asked open first that is not attached, or -1. Called with the lock held. */
static int next_attach(struct attacher *a)
{
	unsigned int group;
	int first = -1;

	for (group = 1; group < a->nr_groups; group++)
		if (a->want_open[group] && !a->attached[group] &&
		    (first < 0 || a->asked[group] < a->asked[first]))
			first = group;
	return first;
}

/* Open the windows of groups attached and wanted (closed, then asked open again before
 * they were detached). Called with the lock held. */
static void open_attached(struct attacher *a)
{
	unsigned int group;

	for (group = 1; group < a->nr_groups; group++)
		if (a->want_open[group] && a->attached[group] && !a->window[group].open)
			set_window(a, group, true);
}

/* Detaching first, then attaching in the order asked: the governor asks for the hottest
 * group last, so its short window starts last. */
static void *work(void *arg)
{
	struct attacher *a = arg;
	int group;

	run_promptly(); /* a detach that waits for a CPU is paid in probe hits */
	pthread_mutex_lock(&a->lock);
	for (;;) {
		open_attached(a);
		group = next_detach(a);
		if (group >= 0) {
			detach_group(a, group);
			a->attached[group] = false;
			continue;
		}
		group = next_attach(a);
		if (group < 0) {
			if (a->stopping)
				break;
			pthread_cond_wait(&a->work, &a->lock);
			continue;
		}
		pthread_mutex_unlock(&a->lock);
		/* a group that cannot be attached again (the server is exiting) stays closed */
		if (!attach_group(a, group)) {
			pthread_mutex_lock(&a->lock);
			a->want_open[group] = false;
			continue;
		}
		pthread_mutex_lock(&a->lock);
		a->attached[group] = true; /* its window opens at the top of the loop if still wanted */
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

void attacher_start(struct attacher *a, struct innostall_bpf *obj, struct attachment *att,
		    int nr_att, pid_t pid, const char *binary)
{
	unsigned int group;
	int i;

	memset(a, 0, sizeof(*a));
	*a = (struct attacher){ .obj = obj, .att = att, .nr_att = nr_att, .nr_groups = 1,
				.pid = pid, .binary = binary };
	for (i = 0; i < nr_att; i++)
		if (att[i].group >= a->nr_groups)
			a->nr_groups = att[i].group + 1;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->work, NULL);
	for (group = 0; group < a->nr_groups; group++) {
		if (!attach_group(a, group))
			die("cannot attach the probes (see above)");
		a->attached[group] = a->want_open[group] = true;
		if (group)
			set_window(a, group, true);
	}
	if (pthread_create(&a->worker, NULL, work, a))
		die("cannot start the attacher thread");
}

void attacher_open(struct attacher *a, unsigned int group)
{
	pthread_mutex_lock(&a->lock);
	if (!a->want_open[group])
		a->asked[group] = ++a->asks;
	a->want_open[group] = true;
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->lock);
}

void attacher_close(struct attacher *a, unsigned int group)
{
	pthread_mutex_lock(&a->lock);
	if (a->window[group].open)
		set_window(a, group, false);
	a->want_open[group] = false;
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->lock);
}

bool attacher_opening(struct attacher *a, unsigned int group)
{
	bool opening;

	pthread_mutex_lock(&a->lock);
	opening = a->want_open[group] && !a->window[group].open;
	pthread_mutex_unlock(&a->lock);
	return opening;
}

struct window attacher_window(struct attacher *a, unsigned int group)
{
	struct window w;

	pthread_mutex_lock(&a->lock);
	w = a->window[group];
	pthread_mutex_unlock(&a->lock);
	return w;
}

void attacher_stop(struct attacher *a)
{
	unsigned int group;

	for (group = 1; group < a->nr_groups; group++)
		attacher_close(a, group);
	pthread_mutex_lock(&a->lock);
	a->stopping = true;
	pthread_cond_signal(&a->work);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->worker, NULL);
	detach_group(a, 0);
	wait_all_closed(); /* the loader ends with no probe left behind */
}
