// SPDX-License-Identifier: GPL-2.0
/* Which read views are still open, and the oldest of them. See read_views.h. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "innostall.h"
#include "innostall.skel.h"
#include "read_views.h"

bool read_server(__u32 tgid, __u64 address, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(unsigned long)address, len };

	return process_vm_readv(tgid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* Whether the server still has the view open (enum view_check). */
static bool view_is_open(__u64 key, const struct read_view *rv, __u32 flag_offset)
{
	unsigned char flag;
	__u64 view;

	switch (rv->check) {
	case VIEW_FLAG:
		/* the flag may be the view's first byte (10.4's m_state): offset 0 is one */
		return read_server(rv->tgid, key + flag_offset, &flag, 1) && flag;
	case VIEW_SLOT:
		return read_server(rv->tgid, key, &view, sizeof(view)) && view && !(view & 1);
	default:
		return false;
	}
}

/* Drop a view the server closed, unless it was opened again meanwhile. */
static void forget_view(int fd, const struct open_view *seen)
{
	struct read_view now;

	if (!bpf_map_lookup_elem(fd, &seen->key, &now) && now.opened_ns == seen->rv.opened_ns)
		bpf_map_delete_elem(fd, &seen->key);
}

static bool still_open(int fd, const struct open_view *v, __u32 flag_offset)
{
	if (view_is_open(v->key, &v->rv, flag_offset))
		return true;
	forget_view(fd, v);
	return false;
}

static int by_age(const void *a, const void *b)
{
	const struct open_view *x = a, *y = b;

	return x->rv.opened_ns < y->rv.opened_ns ? -1 : x->rv.opened_ns > y->rv.opened_ns;
}

int oldest_read_views(struct innostall_bpf *obj, __u32 flag_offset, struct open_view *views,
		      int max, int *nr_views)
{
	static struct open_view all[MAX_READ_VIEWS];
	int fd = bpf_map__fd(obj->maps.read_views);
	__u64 key, prev;
	int n = 0, open = 0, i;
	bool more;

	for (more = !bpf_map_get_next_key(fd, NULL, &key); more && n < MAX_READ_VIEWS;
	     more = !bpf_map_get_next_key(fd, &prev, &key)) {
		prev = key;
		all[n].key = key;
		if (!bpf_map_lookup_elem(fd, &key, &all[n].rv))
			n++;
	}
	qsort(all, n, sizeof(all[0]), by_age);
	*nr_views = 0;
	for (i = 0; i < n; i++) {
		if (!still_open(fd, &all[i], flag_offset))
			continue;
		open++;
		if (*nr_views < max)
			views[(*nr_views)++] = all[i];
	}
	return open;
}
