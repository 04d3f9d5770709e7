// SPDX-License-Identifier: GPL-2.0
/* The one definition of the maps and settings every measurement shares. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#define INNOSTALL_DEFINE_SHARED
#include "maps.bpf.h"
#include "unwind.bpf.h"
#include "holders.bpf.h"

const volatile pid_t targ_tgid = 0;
const volatile struct innodb_layout layout = {};
const volatile __u32 sleep_group = 0;

char LICENSE[] SEC("license") = "GPL";
