/* SPDX-License-Identifier: GPL-2.0 */
/* Small helpers every part of the loader uses, as libbpf-tools keeps trace_helpers.h:
 * one-line messages on stderr, and the clocks. */
#ifndef __INNOSTALL_TRACE_HELPERS_H
#define __INNOSTALL_TRACE_HELPERS_H

#include <time.h>

/* One line on stderr, prefixed with the loader's name; die exits with status 1. */
__attribute__((format(printf, 1, 2))) void warn(const char *fmt, ...);
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);

/* A non-negative integer argument (decimal, 0x hex or 0 octal), or die naming what. */
long parse_long(const char *s, const char *what);

/* The calling thread at the lowest real-time priority, so that it runs when it wakes even
 * on a host whose CPUs a busy server saturates: the cost governor must close a sampling
 * window on time, or the probes overspend the budget while it waits for a CPU (it did: one
 * 167 ms window cost 172 ms of the server's CPU against a budget of 7 ms/s). It sleeps
 * between short checks, and the kernel's real-time throttling bounds it in any case. */
void run_promptly(void);

static inline unsigned long long now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#endif /* __INNOSTALL_TRACE_HELPERS_H */
