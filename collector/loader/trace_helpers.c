// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "trace_helpers.h"

static void vwarn(const char *fmt, va_list ap)
{
	fputs("innostall-loader: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	exit(1);
}

long parse_long(const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < 0)
		die("invalid %s: '%s'", what, s);
	return v;
}

void run_promptly(void)
{
	struct sched_param param = { .sched_priority = 1 };

	pthread_setschedparam(pthread_self(), SCHED_FIFO, &param); /* best effort */
}
