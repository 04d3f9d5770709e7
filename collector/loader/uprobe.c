// SPDX-License-Identifier: GPL-2.0
/* Uprobes as uprobe_multi links (Linux 6.6+), one offset each, made with the bpf syscall.
 *
 * Why not libbpf's perf-event uprobes: destroying one of those waits for an RCU grace
 * period (100-300 ms here) while holding the kernel's event_mutex, so detaches queue up
 * one behind the other, every attach waits behind them, and a hot probe asked to go keeps
 * trapping meanwhile. A uprobe_multi link waits for its grace period holding no lock, so
 * links can go in parallel and attaches never wait. The libbpf we build with (Debian 12's
 * 1.1) predates uprobe_multi, so the attribute is laid out here, as in the kernel's uapi. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include "uprobe.h"

#define ATTACH_UPROBE_MULTI 48  /* enum bpf_attach_type: BPF_TRACE_UPROBE_MULTI */
#define UPROBE_MULTI_RETURN 1   /* BPF_F_UPROBE_MULTI_RETURN */

/* union bpf_attr for BPF_LINK_CREATE of a uprobe_multi link */
struct uprobe_multi_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__aligned_u64 path;
	__aligned_u64 offsets;
	__aligned_u64 ref_ctr_offsets;
	__aligned_u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
};

void uprobe_programs_prepare(struct bpf_object *obj)
{
	struct bpf_program *prog;

	/* The program type stays BPF_PROG_TYPE_KPROBE; the attach type says how it links.
	 * Programs of other types (the scheduler tracepoint) keep theirs. */
	bpf_object__for_each_program(prog, obj)
		if (bpf_program__type(prog) == BPF_PROG_TYPE_KPROBE)
			bpf_program__set_expected_attach_type(prog, ATTACH_UPROBE_MULTI);
}

int uprobe_link(int prog_fd, const char *path, size_t offset, bool retprobe, pid_t pid,
		__u64 cookie)
{
	__u64 offsets[1] = { offset }, cookies[1] = { cookie };
	struct uprobe_multi_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = prog_fd;
	attr.attach_type = ATTACH_UPROBE_MULTI;
	attr.path = (__u64)(unsigned long)path;
	attr.offsets = (__u64)(unsigned long)offsets;
	attr.cookies = (__u64)(unsigned long)cookies;
	attr.cnt = 1;
	attr.multi_flags = retprobe ? UPROBE_MULTI_RETURN : 0;
	attr.pid = pid > 0 ? pid : 0;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}
