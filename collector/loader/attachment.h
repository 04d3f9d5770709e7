/* SPDX-License-Identifier: GPL-2.0 */
/* One probe the loader attaches: what the governor, attacher and calibrator share. */
#ifndef __INNOSTALL_ATTACHMENT_H
#define __INNOSTALL_ATTACHMENT_H

#include <stdbool.h>
#include <stddef.h>

struct innostall_bpf;

/* One program at one instruction, or on a scheduler tracepoint. Its number in the loader's
 * list is its BPF cookie's low half (its slot in probe_hits); group is the high half: 0 =
 * always attached, else the sampling group the cost governor attaches and detaches as one.
 * A tracepoint has no cookie; it counts its runs in a slot of its own (innostall.h) and
 * goes in the group of the probes it serves. link is the fd of its link while attached,
 * else 0 (fd 0 is stdin, never ours). */
struct attachment {
	const char *prog;
	const char *path;
	size_t offset;
	unsigned int group;
	bool retprobe;
	bool after_call; /* a return program at the instruction after a call, as a plain uprobe */
	bool tracepoint;
	int link;
};

/* A program that ends what an entry program began: attached before the entries (attacher.c). */
static inline bool ends_span(const struct attachment *a)
{
	return a->retprobe || a->after_call;
}

#endif /* __INNOSTALL_ATTACHMENT_H */
