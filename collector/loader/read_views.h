/* SPDX-License-Identifier: GPL-2.0 */
/* The read views open in the server (views.bpf.c), oldest first: the ones that hold purge. */
#ifndef __INNOSTALL_READ_VIEWS_H
#define __INNOSTALL_READ_VIEWS_H

#include <stdbool.h>
#include <stddef.h>
#include "innostall.h"

struct innostall_bpf;

struct open_view {
	__u64 key; /* &trx->read_view */
	struct read_view rv;
};

/* Read len bytes of the server's memory at address, never writing it (process_vm_readv):
 * false if they cannot be read (the process or that memory is gone). */
bool read_server(__u32 tgid, __u64 address, void *buf, size_t len);

/* Fill views with the oldest open views (at most max), oldest first, and return how many
 * are open in all. Views the server has closed are dropped from the map first: whether a
 * view is open is read from the server's memory (never written), as its check says;
 * flag_offset is ReadView.m_open where views are checked by that flag (it may be 0). */
int oldest_read_views(struct innostall_bpf *obj, __u32 flag_offset, struct open_view *views,
		      int max, int *nr_views);

#endif /* __INNOSTALL_READ_VIEWS_H */
