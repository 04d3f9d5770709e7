// SPDX-License-Identifier: GPL-2.0
/* Latch waits, slow paths only, with buffer-block latches told apart from all others.
 *
 * Two latch implementations, chosen by `latch_model`:
 *  - SUX (MariaDB 10.6+): ssux_lock_impl<true>::rd_wait (S), ::wr_wait (X) and
 *    srw_mutex_impl<true>::wait_and_lock (U, or X before readers drain) run only when the
 *    fast path failed. Other users of the same functions (lock_sys, purge, AHI, index
 *    latches) are told apart by checking the candidate block: its page id must match the
 *    header of its frame, or the block must be read-fixed (a wait for page I/O). The
 *    page's state at the wait's start tells a wait on a page being read in or written
 *    out: the flusher holds a page's latch until its write completes, so on a disk that
 *    cannot keep up writers wait here for the page cleaners' I/O.
 *  - RW_LOCK (MySQL, Percona, MariaDB 10.2-10.5): rw_lock_s_lock_spin is the S slow path;
 *    X and SX requests pass through one function whatever the contention, so their waits
 *    are taken where a thread sleeps: sync_array_wait_event, whose cell names the latch and
 *    the request type; rw_lock_t::is_block_lock marks block latches.
 *
 * Why return probes are safe: these functions spin and sleep on futexes or OS events and
 * report nothing by exception; an exception cannot be raised from inside a latch wait.
 * The user stack is taken at return, where the unwinder starts in the waiting caller. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "maps.bpf.h"
#include "unwind.bpf.h"
#include "holders.bpf.h"  /* struct wait_state, latch_waits */

/* sync_cell_t request types (MySQL 5.7/8.0, MariaDB 10.2) */
enum { SYNC_MUTEX = 1, RW_LOCK_SX = 2, RW_LOCK_X_WAIT = 3, RW_LOCK_S = 4, RW_LOCK_X = 5 };

/* The on-disk page header (fil0types.h), the same in every release: a frame holding the
 * page it claims to hold names it here, big-endian. */
#define FIL_PAGE_OFFSET 4
#define FIL_PAGE_SPACE_ID 34

/* Waits shorter than this many µs are counted and timed with their latch, without a user
 * stack: the stack is most of what a wait's return costs the waiter, and the short waits,
 * where the latch came free while the waiter spun or just after it slept, hold a small share
 * of the time waited. 0: a stack for every wait. */
const volatile __u64 latch_stack_threshold_us = 16;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct page_key);
	__type(value, struct wait_sum);
} block_pages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct stack_key);
	__type(value, struct wait_sum);
} wait_stacks SEC(".maps");

/* Every contended latch and mode (blocks by page, others by address), and where each was
 * waited for: the loader prints the first every interval, the second with the pages. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct latch_key);
	__type(value, struct latch_sum);
} latches SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct latch_stack_key);
	__type(value, struct wait_sum);
} latch_stacks SEC(".maps");

/* The latches that purge's work and the applier's waited on (enum work_owner): the report
 * names them beside the latch share of their time. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct work_latch_key);
	__type(value, struct wait_sum);
} work_latches SEC(".maps");

static __always_inline __u32 be32(__u32 v)
{
	return __builtin_bswap32(v);
}

/* SUX: the page a block latch guards, or false when the latch is not a block's. */
static __always_inline bool sux_block_page(__u64 latch, struct page_key *page, bool *io)
{
	__u64 block = latch - layout.block_lock, id, frame;
	__u32 header_page, header_space, state;

	if (bpf_probe_read_user(&id, sizeof(id), (void *)block) ||
	    bpf_probe_read_user(&frame, sizeof(frame), (void *)(block + layout.page_frame)))
		return false;
	page->space = id >> 32;
	page->page_no = (__u32)id;
	if (!frame || (frame & 4095))
		return false;
	if (!bpf_probe_read_user(&header_page, 4, (void *)(frame + FIL_PAGE_OFFSET)) &&
	    !bpf_probe_read_user(&header_space, 4, (void *)(frame + FIL_PAGE_SPACE_ID)) &&
	    be32(header_page) == page->page_no && be32(header_space) == page->space)
		return true;
	/* A page being read in has no header yet: waiting on its latch is waiting for I/O. */
	if (bpf_probe_read_user(&state, sizeof(state), (void *)(block + layout.page_state)))
		return false;
	*io = state >= layout.read_fix && state < layout.write_fix;
	return *io;
}

/* SUX: the I/O on the block whose latch this is, when it is a block's (its frame holds its
 * page, or it is being read in): READ_FIX and the values past WRITE_FIX are the states of
 * a page being read and written. Checked at the wait's start, so that the loader can tell
 * the waits still open on pages being written. */
static __always_inline __u32 sux_latch_io(__u64 latch)
{
	struct page_key page;
	bool reading = false;
	__u32 state;

	if (!sux_block_page(latch, &page, &reading))
		return PAGE_IO_NONE;
	if (reading)
		return PAGE_IO_READ;
	if (bpf_probe_read_user(&state, sizeof(state), (void *)(latch - layout.block_lock + layout.page_state)))
		return PAGE_IO_NONE;
	if (state >= layout.write_fix)
		return PAGE_IO_WRITE;
	return state >= layout.read_fix ? PAGE_IO_READ : PAGE_IO_NONE;
}

static __always_inline int wait_begin(void *ctx, __u64 latch, __u32 mode, __u32 kind)
{
	__u32 tid = current_tid();
	struct wait_state *open, state = {};

	if (!traced_process())
		return 0;
	open = bpf_map_lookup_elem(&latch_waits, &tid);
	if (open && window_unbroken(open->window)) {
		open->nested++;
		return 0;
	}
	state.start_ns = bpf_ktime_get_ns();
	state.latch = latch;
	state.window = window_token(ctx);
	state.mode = mode;
	state.kind = kind;
	if (layout.latch_model == MODEL_SUX && mode != MODE_OTHER)
		state.page_io = sux_latch_io(latch);
	bpf_map_update_elem(&latch_waits, &tid, &state, BPF_ANY);
	return 0;
}

/* RW_LOCK: rw_lock_t::is_block_lock, then the page id at the start of the block (buf_page_t
 * begins with it). */
static __always_inline bool rw_lock_block_page(__u64 latch, struct page_key *page)
{
	__u32 bit = layout.is_block_lock_bit;
	__u8 flags;

	if (bpf_probe_read_user(&flags, 1, (void *)(latch + bit / 8)) ||
	    !(flags & (1 << (bit % 8))))
		return false;
	return !bpf_probe_read_user(page, sizeof(*page), (void *)(latch - layout.block_lock));
}

/* The wait again under the work it interrupted, if purge's or the applier's. */
static __always_inline void work_latch_add(struct latch_key *key, __u64 ns, enum work_owner owner)
{
	struct work_latch_key owned = { .latch = *key, .owner = owner };

	if (owner != WORK_NONE)
		sum_add(&work_latches, &owned, ns, CNT_LATCH_MAP_FULL);
}

/* The waiter's user stack, in the per-CPU key, for a wait of latch_stack_threshold_us or
 * more; NULL for a shorter one, counted apart. */
static __always_inline struct stack_key *waiter_stack(void *ctx, struct big_keys *big, __u64 ns,
						      __u32 mode, bool pthread_mutex)
{
	struct stack_key *stack = &big->stack;

	if (ns < latch_stack_threshold_us * 1000) {
		counter_add(CNT_LATCH_WAITS_UNSTACKED, 1);
		counter_add(CNT_LATCH_UNSTACKED_NS, ns);
		if (pthread_mutex)
			counter_add(CNT_MUTEX_WAITS_UNSTACKED, 1);
		return NULL;
	}
	__builtin_memset(stack, 0, sizeof(*stack));
	stack->mode = mode;
	user_stack_at(ctx, stack); /* a pthread mutex's wait ends in libc: unwound through it */
	return stack;
}

/* One wait on one latch: its sums and log2 histogram, and its waiter's stack unless it has
 * none (NULL). A map full of other latches costs the wait's attribution, counted in
 * latch_map_full. */
static __always_inline void latch_add(struct latch_key *key, __u64 latch, __u64 ns,
				      struct stack_key *stack, enum work_owner owner)
{
	struct big_keys *big = big_keys_here();
	struct latch_sum *sum = bpf_map_lookup_elem(&latches, key), fresh = {};
	__u32 slot = log2_u64(ns / 1000);

	work_latch_add(key, ns, owner);

	if (slot >= LATCH_SLOTS)
		slot = LATCH_SLOTS - 1;
	if (!sum) {
		bpf_map_update_elem(&latches, key, &fresh, BPF_NOEXIST);
		sum = bpf_map_lookup_elem(&latches, key);
		if (!sum) {
			counter_add(CNT_LATCH_MAP_FULL, 1);
			return;
		}
	}
	__sync_fetch_and_add(&sum->count, 1);
	__sync_fetch_and_add(&sum->total_ns, ns);
	__sync_fetch_and_add(&sum->slots[slot], 1);
	if (ns > sum->max_ns) /* a race may keep the lower of two maxima: rare, and harmless */
		sum->max_ns = ns;
	sum->latch = latch;
	if (!big || !stack)
		return;
	big->by_stack.id = key->id;
	big->by_stack.stack_id = stack->stack_id;
	big->by_stack.mode = key->mode;
	big->by_stack.kind = key->kind;
	big->by_stack.libc = stack->libc;
	sum_add(&latch_stacks, &big->by_stack, ns, CNT_LATCH_MAP_FULL);
}

static __always_inline void block_wait_done(void *ctx, struct wait_state *w, __u64 ns,
					    struct page_key *page, bool io, enum work_owner owner)
{
	static const __u32 hist_of[] = { HIST_BLOCK_WAIT_S_US, HIST_BLOCK_WAIT_X_US,
					 HIST_BLOCK_WAIT_SX_US };
	static const __u32 count_of[] = { CNT_BLOCK_WAITS_S, CNT_BLOCK_WAITS_X, CNT_BLOCK_WAITS_SX };
	struct latch_key latch = { .mode = w->mode, .kind = LATCH_BLOCK };
	struct big_keys *big = big_keys_here();
	__u32 mode = w->mode;
	struct stack_key *key;

	if (mode > MODE_SX || !big)
		return;
	hist_add(hist_of[mode], ns / 1000);
	counter_add(count_of[mode], 1);
	counter_add(CNT_BLOCK_WAIT_NS, ns);
	if (w->page_io == PAGE_IO_WRITE) {
		counter_add(CNT_BLOCK_WRITE_WAITS, 1);
		counter_add(CNT_BLOCK_WRITE_WAIT_NS, ns);
	} else if (io || w->page_io == PAGE_IO_READ) {
		counter_add(CNT_BLOCK_IO_WAITS, 1);
		counter_add(CNT_BLOCK_READ_WAIT_NS, ns);
	}
	sum_add(&block_pages, page, ns, CNT_LATCH_MAP_FULL);
	latch.id = (__u64)page->space << 32 | page->page_no;
	key = waiter_stack(ctx, big, ns, mode, false);
	if (key)
		sum_add(&wait_stacks, key, ns, CNT_LATCH_MAP_FULL);
	latch_add(&latch, w->latch, ns, key, owner);
}

static __always_inline void other_wait_done(void *ctx, struct wait_state *w, __u64 ns,
					    enum work_owner owner)
{
	struct latch_key latch = { .id = w->latch, .mode = w->mode, .kind = w->kind };
	struct big_keys *big = big_keys_here();
	struct stack_key *stack;

	if (layout.latch_model == MODEL_RW_LOCK && w->kind == LATCH_SRW)
		latch.kind = LATCH_RW_LOCK; /* rw_lock_s_lock_spin: an rw_lock_t, not a block's */

	hist_add(HIST_OTHER_LATCH_WAIT_US, ns / 1000);
	counter_add(CNT_OTHER_LATCH_WAITS, 1);
	counter_add(CNT_OTHER_LATCH_WAIT_NS, ns);
	if (w->pthread_mutex) {
		counter_add(CNT_MUTEX_WAITS, 1);
		counter_add(CNT_MUTEX_WAIT_NS, ns);
	}
	if (!big)
		return;
	stack = waiter_stack(ctx, big, ns, MODE_OTHER, w->pthread_mutex);
	latch_add(&latch, w->latch, ns, stack, owner);
	if (stack && w->pthread_mutex)
		sum_add(&wait_stacks, stack, ns, CNT_LATCH_MAP_FULL);
}

SEC("uretprobe")
int BPF_KRETPROBE(latch_wait_exit)
{
	__u32 tid = current_tid();
	struct wait_state *w;
	struct page_key page = {};
	bool io = false, block = false;
	enum work_owner owner;
	__u64 ns;

	count_hit(ctx);
	w = bpf_map_lookup_elem(&latch_waits, &tid);
	if (!w)
		return 0;
	if (span_cut(&latch_waits, &tid, w->window))
		return 0;
	if (w->nested) { /* the inner wait returns first; the outer one owns the time */
		w->nested--;
		return 0;
	}
	ns = bpf_ktime_get_ns() - w->start_ns;
	span_charge(work_of(tid, &owner), false, ns);
	if (w->mode != MODE_OTHER) {
		if (layout.latch_model == MODEL_SUX)
			block = sux_block_page(w->latch, &page, &io);
		else if (layout.latch_model == MODEL_RW_LOCK)
			block = rw_lock_block_page(w->latch, &page);
	}
	if (block) {
		block_wait_done(ctx, w, ns, &page, io, owner);
	} else {
		other_wait_done(ctx, w, ns, owner);
	}
	holder_wait_done(tid, w, w->start_ns + ns);
	bpf_map_delete_elem(&latch_waits, &tid);
	return 0;
}

/* Slow paths entered with the latch in the first argument (this, or rw_lock_t*). */
SEC("uprobe")
int BPF_KPROBE(latch_s_enter, void *latch)
{
	count_hit(ctx);
	return wait_begin(ctx, (__u64)latch, MODE_S, LATCH_SRW);
}

SEC("uprobe")
int BPF_KPROBE(latch_x_enter, void *latch)
{
	count_hit(ctx);
	return wait_begin(ctx, (__u64)latch, MODE_X, LATCH_SRW);
}

SEC("uprobe")
int BPF_KPROBE(latch_sx_enter, void *latch)
{
	count_hit(ctx);
	return wait_begin(ctx, (__u64)latch, MODE_SX, LATCH_SRW);
}

/* MariaDB 10.6+: the non-spinning srw_lock functions serve no buffer block at all. */
SEC("uprobe")
int BPF_KPROBE(latch_sleep_enter, void *latch)
{
	count_hit(ctx);
	return wait_begin(ctx, (__u64)latch, MODE_OTHER, LATCH_SRW);
}

/* glibc's __lll_lock_wait(futex, private): the sleep of a contended pthread mutex
 * (MariaDB 10.6+'s mysql_mutex_t: buf_pool.mutex, flush_list_mutex, lock_sys's wait
 * mutex ...). The futex word is the mutex's first member, so it is the mutex's address. */
SEC("uprobe")
int BPF_KPROBE(mutex_wait_enter, void *futex)
{
	__u32 tid = current_tid();
	struct wait_state *w;

	count_hit(ctx);
	wait_begin(ctx, (__u64)futex, MODE_OTHER, LATCH_MUTEX);
	w = bpf_map_lookup_elem(&latch_waits, &tid);
	if (w && w->latch == (__u64)futex && !w->nested)
		w->pthread_mutex = 1;
	return 0;
}

/* sync_array_wait_event(sync_array_t*, sync_cell_t*& cell): the OS sleep of every latch;
 * the cell names the latch and the request. One program classifies all of them, so one
 * return probe ends each sleep (block_lock_x, block_lock_sx and latch_sleep all resolve
 * to this function on these servers; the recorder attaches it once). */
SEC("uprobe")
int BPF_KPROBE(sync_wait_enter, void *array, void *cell_ref)
{
	struct page_key page;
	__u64 cell, latch = 0;
	__u32 type = 0;

	count_hit(ctx);
	if (bpf_probe_read_user(&cell, sizeof(cell), cell_ref) ||
	    bpf_probe_read_user(&latch, sizeof(latch), (void *)(cell + layout.cell_latch)) ||
	    bpf_probe_read_user(&type, sizeof(type), (void *)(cell + layout.cell_request_type)))
		return 0;
	if (type == SYNC_MUTEX)
		return wait_begin(ctx, latch, MODE_OTHER, LATCH_MUTEX);
	if (!rw_lock_block_page(latch, &page))
		return wait_begin(ctx, latch, MODE_OTHER, LATCH_RW_LOCK);
	if (type == RW_LOCK_X || type == RW_LOCK_X_WAIT)
		return wait_begin(ctx, latch, MODE_X, LATCH_RW_LOCK);
	if (type == RW_LOCK_SX)
		return wait_begin(ctx, latch, MODE_SX, LATCH_RW_LOCK);
	return 0; /* an S sleep: inside rw_lock_s_lock_spin, which is timed whole */
}
