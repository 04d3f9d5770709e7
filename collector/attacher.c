// SPDX-License-Identifier: GPL-2.0
/* The attacher: a worker thread that attaches and detaches sampling groups as the cost
 * governor asks, so that the main loop never waits for the kernel.
 *
 * Why a thread: destroying a uprobe link removes its breakpoint at once, then waits for an
 * RCU grace period while holding the kernel's event_mutex, which every uprobe attach takes
 * as well. A group of three links takes 250 ms or more to detach, and an attach queued
 * behind it as long.
 *
 * Windows (see maps.bpf.h): a group's slot in the `windows` map turns odd once all of its
 * probes are attached, and even the moment it is asked to close, before anything is
 * detached. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "innostall.skel.h"
#include "attacher.h"

static bool attach_one(struct attacher *a, int i)
{
	struct attachment *at = &a->att[i];
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = at->retprobe,
		    .bpf_cookie = (__u64)at->group << 32 | i);
	struct bpf_program *prog = bpf_object__find_program_by_name(a->obj->obj, at->prog);

	at->link = bpf_program__attach_uprobe_opts(prog, a->pid > 0 ? a->pid : -1,
						   at->path ?: a->binary, at->offset, &opts);
	if (!at->link)
		warn("cannot attach %s at %s+0x%zx: %s", at->prog, at->path ?: a->binary,
		     at->offset, strerror(errno));
	return at->link;
}

static void detach_group(struct attacher *a, unsigned int group)
{
	int i;

	for (i = a->nr_att - 1; i >= 0; i--)
		if (a->att[i].group == group && a->att[i].link) {
			bpf_link__destroy(a->att[i].link);
			a->att[i].link = NULL;
		}
}

/* Returns first: every entry seen after that has its return seen too. All or nothing. */
static bool attach_group(struct attacher *a, unsigned int group)
{
	int pass, i;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < a->nr_att; i++)
			if (a->att[i].group == group && a->att[i].retprobe == !pass &&
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

/* The hottest link of a group that is to be detached, or -1. Called with the lock held. */
static int next_detach(struct attacher *a)
{
	int i, hottest = -1;

	for (i = 0; i < a->nr_att; i++)
		if (a->att[i].link && a->att[i].group && !a->want_open[a->att[i].group] &&
		    (hottest < 0 || a->hits[i] > a->hits[hottest]))
			hottest = i;
	return hottest;
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

/* Detaching first, the hottest link first, one link at a time: each takes a grace period
 * during which nothing else can be attached or detached, so what costs most goes first.
 * Then attaching, in the order asked: the governor asks for the hottest group last, so
 * its short window is not held up behind the others. */
static void *work(void *arg)
{
	struct attacher *a = arg;
	int link, group;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		open_attached(a);
		link = next_detach(a);
		group = link < 0 ? next_attach(a) : -1;
		if (link < 0 && group < 0) {
			if (a->stopping)
				break;
			pthread_cond_wait(&a->work, &a->lock);
			continue;
		}
		pthread_mutex_unlock(&a->lock);
		if (link >= 0) {
			bpf_link__destroy(a->att[link].link);
			pthread_mutex_lock(&a->lock);
			a->att[link].link = NULL;
			group = a->att[link].group;
			a->attached[group] = false;
			for (link = 0; link < a->nr_att; link++)
				if (a->att[link].group == group && a->att[link].link)
					a->attached[group] = true; /* not all of it yet */
			continue;
		}
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
		    int nr_att, pid_t pid, const char *binary, const unsigned long long *hits)
{
	unsigned int group;
	int i;

	memset(a, 0, sizeof(*a));
	*a = (struct attacher){ .obj = obj, .att = att, .nr_att = nr_att, .nr_groups = 1,
				.pid = pid, .binary = binary, .hits = hits };
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
}
