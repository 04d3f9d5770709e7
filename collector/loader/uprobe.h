/* SPDX-License-Identifier: GPL-2.0 */
#ifndef __INNOSTALL_UPROBE_H
#define __INNOSTALL_UPROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>

struct bpf_object;

/* Ready the object's uprobe programs for uprobe_link(); call between open and load. */
void uprobe_programs_prepare(struct bpf_object *obj);

/* Attach prog_fd at a file offset of path (a return probe if retprobe), for pid only if
 * pid > 0, with a BPF cookie. Returns the link's fd, or -errno; closing it detaches. */
int uprobe_link(int prog_fd, const char *path, size_t offset, bool retprobe, pid_t pid,
		__u64 cookie);

#endif /* __INNOSTALL_UPROBE_H */
