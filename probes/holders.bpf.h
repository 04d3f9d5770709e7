/* SPDX-License-Identifier: GPL-2.0 */
/* Open latch waits, shared by the latch programs (latch.bpf.c), which open and close them,
 * and the wakeup tracepoint (wakeup.bpf.c), which notes who woke each waiter: the thread
 * whose release of the latch made the futex wake, its holder.
 *
 * A wait may be woken more than once: an srw lock's waiter that loses the race sleeps
 * again until the next release; a sync-array waiter woken by os_event_set must then take
 * the event's mutex, and may sleep on it until a fellow waiter lets it go. The first
 * waker released the latch the waiter found held; the last one let it through. So the
 * wait is cut at its first wake (struct wakes), and charged at its end: only waits that
 * were seen whole count. */
#ifndef __HOLDERS_BPF_H
#define __HOLDERS_BPF_H

#include "maps.bpf.h"
#include "unwind.bpf.h"

SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32); /* thread id */
	__type(value, struct wait_state);
} latch_waits SEC(".maps");

struct waker {
	struct stack_key stack; /* its user stack at the wake */
	char comm[COMM_LEN];
	__u32 tid; /* 0: none */
	__u32 pad;
};

/* The wakes of one wait: its first waker, charged the stretch up to its wake, and its
 * last, charged the rest (when there was only one, the first is charged it all). Wakes in
 * between are rare (an srw lock lost to a third thread twice); their stretches go to the
 * last. Kept apart from latch_waits, so a wait costs no more while nobody wakes it. */
struct wakes {
	__u64 wait_start; /* the start_ns of the wait they belong to */
	__u64 first_wake; /* when the first wake came */
	struct waker first;
	struct waker last;
};

SHARED struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH); /* a wait cut by a sampling window leaves its own */
	__uint(max_entries, 4096);
	__type(key, __u32); /* the waiter's thread id */
	__type(value, struct wakes);
} latch_wakes SEC(".maps");

SHARED struct {
	__uint(type, BPF_MAP_TYPE_ARRAY); /* never written: what a wait's wakes start from */
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wakes);
} no_wakes SEC(".maps");

SHARED struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct holder_key);
	__type(value, struct wait_sum);
} latch_holders SEC(".maps");

/* ns of a wait, and waits (1 for a stretch a wake ended, 0 for a first waker's tail), to
 * the holder that woke it: the latch and the waker's stack. */
static __always_inline void holder_charge(struct wait_state *w, struct waker *by, __u64 ns,
					  __u64 waits)
{
	struct big_keys *big = big_keys_here();
	struct holder_key *key;

	if (!big)
		return;
	counter_add(CNT_HOLDERS_FOUND, waits);
	key = &big->holder;
	key->latch = w->latch;
	key->stack = by->stack;
	key->stack.mode = w->mode;
	__builtin_memcpy(key->comm, by->comm, COMM_LEN);
	sum_add_n(&latch_holders, key, waits, ns, CNT_LATCH_MAP_FULL);
}

/* The wakes of the thread's wait, made ready for one more when create: NULL if none. */
static __always_inline struct wakes *wakes_of(__u32 tid, struct wait_state *w, bool create)
{
	struct wakes *k = bpf_map_lookup_elem(&latch_wakes, &tid);
	__u32 zero = 0;

	if (k && k->wait_start == w->start_ns)
		return k;
	if (!create)
		return NULL;
	k = bpf_map_lookup_elem(&no_wakes, &zero);
	if (!k || bpf_map_update_elem(&latch_wakes, &tid, k, BPF_ANY))
		return NULL;
	k = bpf_map_lookup_elem(&latch_wakes, &tid);
	if (k)
		k->wait_start = w->start_ns;
	return k;
}

/* At the wait's end, its time to its wakers. Waits nobody woke (the latch came free while
 * spinning, a timeout) have no holder. */
static __always_inline void holder_wait_done(__u32 tid, struct wait_state *w, __u64 end)
{
	struct wakes *k = wakes_of(tid, w, false);

	if (!k)
		return;
	if (k->first.tid) {
		holder_charge(w, &k->first, k->first_wake - w->start_ns, 1);
		if (k->last.tid)
			holder_charge(w, &k->last, end - k->first_wake, 1);
		else
			holder_charge(w, &k->first, end - k->first_wake, 0);
	}
	bpf_map_delete_elem(&latch_wakes, &tid);
}

#endif /* __HOLDERS_BPF_H */
