/* SPDX-License-Identifier: GPL-2.0 */
/* What the loader's parts share: the probes it attaches and how long things take. */
#ifndef __INNOSTALL_LOADER_H
#define __INNOSTALL_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct innostall_bpf;

/* One program at one instruction. Its number in the loader's list is its BPF cookie's low
 * half (its slot in probe_hits); group is the high half: 0 = always attached, else the
 * sampling group the cost governor attaches and detaches as one. link is the fd of its
 * uprobe link while attached, else 0 (fd 0 is stdin, never ours). */
struct attachment {
	const char *prog;
	const char *path;
	size_t offset;
	unsigned int group;
	bool retprobe;
	int link;
};

/* One line on stderr, prefixed with the loader's name; die exits with status 1. */
__attribute__((format(printf, 1, 2))) void warn(const char *fmt, ...);
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);

static inline unsigned long long now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#endif /* __INNOSTALL_LOADER_H */
