// SPDX-License-Identifier: GPL-2.0
/* Signals from the server's own state (state_signals.h). A stall is when a DBA needs the
 * figures, and the server says when one begins: a row-lock wait in progress, a free-page
 * or log-room wait counted, the history climbing. Reading those words costs the server
 * nothing (read_server, as read_views.c reads; never a write), where keeping the
 * groups that explain them attached all the time would cost more than the budget. So the
 * governor reads them every SIGNAL_EVERY_NS and opens the groups a signal names at once,
 * holding them while it keeps moving and SIGNAL_HOLD_NS after. What the server says only
 * over SQL (a replica's lag) the recorder decides and feeds on standard input (read_fed). */
#define _GNU_SOURCE
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "state_signals.h"
#include "read_views.h"

#define SIGNAL_EVERY_NS 100000000ULL /* ten reads a second: a stall is seen within 0.1 s */
#define SIGNAL_HOLD_NS 1000000000ULL /* a stall's waits come and go: held a second past the
				      * last read that moved, its groups do not flap */
#define CLIMB_LAG 10 /* reads: the history compared with its level a second before, as purge
		      * runs its batches about once a second (a saw-tooth within the second) */
#define CLIMB_READS 30 /* ... and above it at each read for three seconds: purge is not
			* keeping up, not a burst of commits between two batches */
#define RISE 3.0 /* a count's growth in a read, or a level, moves past this many times its
		   * calm baseline: under a steady oltp_read_write load of 4 threads the server
		   * began about 300 row-lock waits a second and had one in progress at most reads,
		   * and "grew" or "above 0" held the groups 17.5 s of a 20-s recording, where 16
		   * threads on hot rows began 1,360 a second */
#define BASELINE_READS 50 /* the calm baseline: a mean of the reads that did not move, over
			   * about this many (5 s) once as many were read */
#define LEARN_READS 10 /* reads that set the baseline first, moving nothing (1 s) */
#define LEVEL_READS 5 /* a level is taken as its mean over about this many reads (0.5 s), and
		       * moves only at 1 or more, a wait in progress at every read: one wait at
		       * one read is the calm load's (the steady load had one at a third of its
		       * reads, and bursts of them held the groups 13-16 s of 20 against 3 times
		       * the calm level alone), a replica's applier stuck on a row is at all */
#define MAX_SIGNAL_BYTES 65536 /* a rollback-segment array is 128 small structs */

static bool parse_u64(const char *s, char **end, __u64 *out)
{
	*out = strtoull(s, end, 0);
	return *end != s;
}

bool state_signals_add(struct state_signals *signals, const char *spec)
{
	static const char *kinds[] = { "level", "count", "climb", "on" };
	struct state_signal *s;
	const char *eq = strchr(spec, '='), *colon;
	__u64 size, count, stride, group;
	char *end;
	unsigned int k;

	if (signals->n >= MAX_SIGNALS || !eq || eq == spec || (size_t)(eq - spec) >= sizeof(s->name))
		return false;
	s = &signals->signal[signals->n];
	memset(s, 0, sizeof(*s));
	memcpy(s->name, spec, eq - spec);
	colon = strchr(eq + 1, ':');
	for (k = 0; k < 4 && colon; k++)
		if ((size_t)(colon - eq - 1) == strlen(kinds[k]) && !strncmp(eq + 1, kinds[k], colon - eq - 1))
			break;
	if (!colon || k == 4)
		return false;
	s->kind = k;
	s->fed = !strncmp(colon + 1, "stdin:", 6);
	if (s->fed)
		end = (char *)colon + 6; /* at the colon after it */
	if ((!s->fed && (!parse_u64(colon + 1, &end, &s->address) || *end != ':')) ||
	    !parse_u64(end + 1, &end, &size) || *end != ':' || (size != 4 && size != 8) ||
	    !parse_u64(end + 1, &end, &count) || *end != ':' || !count ||
	    !parse_u64(end + 1, &end, &stride) || *end != ':' || (count > 1 && stride < size) ||
	    (count - 1) * stride + size > MAX_SIGNAL_BYTES ||
	    !parse_u64(end + 1, &end, &s->modulo) || *end != ':' ||
	    !parse_u64(end + 1, &end, &s->divisor) || *end != ':' ||
	    !parse_u64(end + 1, &end, &s->floor) || *end != ':')
		return false;
	s->size = size;
	s->count = count;
	s->stride = stride;
	do {
		if (!parse_u64(end + 1, &end, &group) || !group || group >= 32)
			return false;
		s->groups |= 1U << group;
	} while (*end == ',');
	if (*end)
		return false;
	signals->fed_open |= s->fed;
	signals->n++;
	return true;
}

/* A fed line, NAME=VALUE: the value of the fed signal so named; others are left alone (a
 * feeder newer than this loader may feed more). */
static void take_fed_line(struct state_signals *signals, const char *line)
{
	const char *eq = strchr(line, '=');
	char *end;
	__u64 value;
	int i;

	if (!eq || !parse_u64(eq + 1, &end, &value) || *end)
		return;
	for (i = 0; i < signals->n; i++)
		if (signals->signal[i].fed && strlen(signals->signal[i].name) == (size_t)(eq - line) &&
		    !strncmp(signals->signal[i].name, line, eq - line))
			signals->signal[i].fed_value = value;
}

/* What the feeder wrote on standard input since the last read, never waiting for it: poll
 * first, as standard input may be a terminal another program shares (O_NONBLOCK would be
 * its too). When the input ends (the feeder gone), each fed signal falls back to 0: nothing
 * says any more that its groups are needed. */
static void read_fed(struct state_signals *signals)
{
	struct pollfd in = { .fd = STDIN_FILENO, .events = POLLIN };
	char buf[512];
	ssize_t got, i;
	int k;

	while (signals->fed_open && poll(&in, 1, 0) > 0) {
		got = in.revents & (POLLIN | POLLHUP) ? read(STDIN_FILENO, buf, sizeof(buf)) : -1;
		if (got <= 0) {
			signals->fed_open = false;
			for (k = 0; k < signals->n; k++)
				signals->signal[k].fed_value = 0;
			return;
		}
		for (i = 0; i < got; i++) {
			if (buf[i] != '\n') {
				/* a longer line is no line of ours: counted past the end, taken as none */
				if (signals->pending_len < sizeof(signals->pending))
					signals->pending[signals->pending_len] = buf[i];
				signals->pending_len += signals->pending_len < sizeof(signals->pending);
				continue;
			}
			if (signals->pending_len < sizeof(signals->pending)) {
				signals->pending[signals->pending_len] = 0;
				take_fed_line(signals, signals->pending);
			}
			signals->pending_len = 0;
		}
	}
}

/* The signal's value now, false if its memory cannot be read. */
static bool read_signal(pid_t pid, const struct state_signal *s, __u64 *value)
{
	static unsigned char buf[MAX_SIGNAL_BYTES];
	size_t len = (s->count - 1) * (size_t)s->stride + s->size;
	__u64 sum = 0;
	__u32 i, word32;
	__u64 word64;

	if (!read_server(pid, s->address, buf, len))
		return false;
	for (i = 0; i < s->count; i++) {
		if (s->size == 4) {
			memcpy(&word32, buf + (size_t)i * s->stride, 4);
			sum += word32;
		} else {
			memcpy(&word64, buf + (size_t)i * s->stride, 8);
			sum += word64;
		}
	}
	if (s->modulo)
		sum %= s->modulo;
	*value = s->divisor ? sum / s->divisor : sum;
	return true;
}

/* Whether x (a count's growth in a read, or a level) is past RISE times the calm baseline,
 * and at least floor (the signal's own); a read that is not goes into the baseline. A wait
 * counter that is seldom above 0 (free pages, log room) moves at its first wait; a count of
 * events a calm load makes a few of a second needs its floor, or every one moves it (one in
 * a read is past three times a baseline learnt from reads of none: the demo's 14 row-lock
 * waits a second held the latch and applier groups 95% of its recording, and the others
 * yielding to them). */
static bool above_baseline(struct state_signal *s, double x, double floor)
{
	bool past = s->reads > LEARN_READS && x > 0 && x >= floor && x > RISE * s->baseline;

	if (!past) {
		s->calm_reads++;
		s->baseline += (x - s->baseline) / (s->calm_reads < BASELINE_READS ? s->calm_reads : BASELINE_READS);
	}
	return past;
}

static bool moved(struct state_signal *s, __u64 value)
{
	s->reads++;
	switch (s->kind) {
	case SIGNAL_LEVEL:
		s->level += ((double)value - s->level) / (s->reads < LEVEL_READS ? s->reads : LEVEL_READS);
		return above_baseline(s, s->level, s->floor > 1 ? s->floor : 1); /* a wait in progress at every read */
	case SIGNAL_COUNT:
		return s->read && above_baseline(s, value > s->value ? value - s->value : 0, s->floor);
	case SIGNAL_CLIMB:
		s->past[(s->reads - 1) % CLIMB_LAG] = value; /* the slot of the read CLIMB_LAG before */
		s->rises = s->reads > CLIMB_LAG && value > s->past[s->reads % CLIMB_LAG] ? s->rises + 1 : 0;
		return s->rises >= CLIMB_READS;
	case SIGNAL_ON:
		return value > s->floor;
	}
	return false;
}

static bool wanting(const struct state_signal *s, unsigned long long now)
{
	return s->moved_ns && now < s->moved_ns + SIGNAL_HOLD_NS;
}

__u32 state_signals_poll(struct state_signals *signals, unsigned long long now, bool holding)
{
	__u32 wanted = 0;
	__u64 value;
	int i;

	for (i = 0; i < signals->n; i++) {
		struct state_signal *s = &signals->signal[i];

		if (holding && wanting(s, signals->last_poll_ns) && now > signals->last_poll_ns)
			s->held_ns += now - signals->last_poll_ns;
	}
	signals->last_poll_ns = now;
	if (now >= signals->next_read_ns && signals->pid > 0) {
		signals->next_read_ns = now + SIGNAL_EVERY_NS;
		read_fed(signals);
		for (i = 0; i < signals->n; i++) {
			struct state_signal *s = &signals->signal[i];

			if (s->fed)
				value = s->fed_value;
			else if (!read_signal(signals->pid, s, &value)) {
				signals->failed_reads++;
				continue;
			}
			if (moved(s, value))
				s->moved_ns = now;
			s->value = value;
			s->read = true;
		}
	}
	for (i = 0; i < signals->n; i++)
		if (wanting(&signals->signal[i], now))
			wanted |= signals->signal[i].groups;
	return wanted;
}

void state_signals_opened(struct state_signals *signals, unsigned int group, unsigned long long now)
{
	int i;

	for (i = 0; i < signals->n; i++)
		if (signals->signal[i].groups >> group & 1 && wanting(&signals->signal[i], now))
			signals->signal[i].opened++;
}

void state_signals_print(const struct state_signals *signals, FILE *out, unsigned long long now)
{
	int i;

	if (!signals->n)
		return;
	fprintf(out, ",\"signals\":[");
	for (i = 0; i < signals->n; i++) {
		const struct state_signal *s = &signals->signal[i];

		fprintf(out, "%s[%llu,%llu,%llu,%d]", i ? "," : "", (unsigned long long)s->value, s->held_ns,
			s->opened, wanting(s, now));
	}
	fprintf(out, "]");
}
