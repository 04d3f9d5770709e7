/* SPDX-License-Identifier: GPL-2.0 */
/* Signals from the server's own state, read from its memory several times a second (never
 * written), that tell the governor a stall has begun and which sampled groups explain it
 * (state_signals.c). The recorder finds each signal's place in the build's DWARF
 * (collector/server/signals.py) and passes it with --signal. A signal may instead be fed
 * on the loader's standard input (lines NAME=VALUE), for what the server says only over SQL:
 * a replica falling behind (collector/server/replica_lag.py). */
#ifndef __INNOSTALL_STATE_SIGNALS_H
#define __INNOSTALL_STATE_SIGNALS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>

#define MAX_SIGNALS 8

enum signal_kind {
	SIGNAL_LEVEL, /* moves while well above its calm level: waits in progress */
	SIGNAL_COUNT, /* moves when it grows well faster than when calm: a counter of waits */
	SIGNAL_CLIMB, /* moves when it has been above its level a second before for several
		       * seconds: the history climbing */
	SIGNAL_ON, /* moves while above its floor: a decision made by whoever feeds it */
};

struct state_signal {
	char name[32];
	enum signal_kind kind;
	bool fed; /* its value is the last one fed on standard input, not read from memory */
	__u64 fed_value; /* ... that one */
	__u64 address; /* count words of size bytes, stride apart, added up */
	__u32 size, count, stride;
	__u64 modulo; /* the value is the sum modulo this (0: none): a count packed below a step */
	__u64 divisor; /* ... or divided by this (0: none): the count packed above it */
	__u64 floor; /* the least growth in a read (SIGNAL_COUNT), or level, that moves it */
	__u32 groups; /* the sampled groups it opens, a bit per group number */
	__u64 value; /* as last read */
	bool read; /* read at least once */
	unsigned int rises; /* reads in a row above the read CLIMB_LAG before (SIGNAL_CLIMB) */
	__u64 past[16]; /* the last reads, a ring (SIGNAL_CLIMB) */
	unsigned int reads;
	double baseline; /* a read's growth (SIGNAL_COUNT) or level (SIGNAL_LEVEL) when calm */
	double level; /* SIGNAL_LEVEL: its mean over the last LEVEL_READS reads or so */
	unsigned int calm_reads; /* reads that went into it */
	unsigned long long moved_ns; /* when it last moved; 0: never */
	unsigned long long held_ns; /* time its groups were held for it, cumulative */
	unsigned long long opened; /* windows it opened */
};

struct state_signals {
	pid_t pid;
	int n;
	struct state_signal signal[MAX_SIGNALS];
	unsigned long long next_read_ns, last_poll_ns;
	unsigned long long failed_reads;
	bool fed_open; /* a signal is fed and its input has not ended */
	char pending[128]; /* a fed line not yet ended */
	size_t pending_len;
};

/* Parse NAME=KIND:ADDRESS:SIZE:COUNT:STRIDE:MODULO:DIVISOR:FLOOR:GROUP[,GROUP...] (KIND level, count,
 * climb or on; numbers in decimal or 0x hex; ADDRESS stdin: fed as NAME=VALUE lines there, SIZE
 * to DIVISOR then unused); false if it does not parse. */
bool state_signals_add(struct state_signals *signals, const char *spec);
/* The groups the signals want open at now (a bit per group number), reading the server's
 * memory when a read is due; held time is counted for those the caller holds (holding). */
__u32 state_signals_poll(struct state_signals *signals, unsigned long long now, bool holding);
/* A window of group opened at once for the signals that want it. */
void state_signals_opened(struct state_signals *signals, unsigned int group, unsigned long long now);
/* ,"signals":[[value, held ns, windows opened, moved], ...] in --signal order */
void state_signals_print(const struct state_signals *signals, FILE *out, unsigned long long now);

#endif /* __INNOSTALL_STATE_SIGNALS_H */
