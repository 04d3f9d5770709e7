/* SPDX-License-Identifier: GPL-2.0 */
/* Constants shared by the BPF programs and the loader. Each list is an X-macro so
 * that the kernel side (ids) and the loader (names it prints) cannot drift apart. */
#ifndef __INNOSTALL_H
#define __INNOSTALL_H

#define MAX_ATTACHMENTS 64 /* slots of probe_hits: the probes one loader may attach, then: */
#define HITS_SCHED_SWITCH (MAX_ATTACHMENTS - 3) /* the scheduler tracepoints' runs in the */
#define HITS_SCHED_WAKING (MAX_ATTACHMENTS - 2) /* server's context (sched.bpf.c, wakeup.bpf.c) */
#define HITS_CALIBRATION (MAX_ATTACHMENTS - 1)  /* calibrate.c's probes */
#define MAX_PROBES HITS_SCHED_SWITCH
#define MAX_GROUPS 16 /* sampling groups of the cost governor; group 0 is never sampled */
#define MAX_SLOTS 32 /* log2 buckets; the last one also takes everything above 2^31 */

/* The measurement schema: every name, kind and unit the kernel side produces lives here
 * once. The loader prints it (`innostall-loader --schema`), each recording keeps it, and
 * the Python side reads it from there; nothing else spells these names.
 *
 * Units: us, ns (times), or what is counted (pages, versions, records, ...). */

/* Log2 histograms kept in the kernel: X(id, name, unit, section, title); section is the
 * part of the report that shows it (purge, version_walk, undo, block_latch, other_latch, dml,
 * flushing). */
#define INNOSTALL_HISTS(X)                                                                     \
	X(HIST_PURGE_BATCH_US, "purge_batch_latency", "us", "purge", "Purge batch latency")             \
	X(HIST_PURGE_BATCH_PAGES, "purge_batch_pages", "pages", "purge", "Undo pages per purge batch")  \
	X(HIST_VERSION_DEPTH, "version_walk_depth", "versions", "version_walk",                                \
	  "Version-walk depth (row versions built per read)")                                  \
	X(HIST_VERSION_WALK_US, "version_walk_latency", "us", "version_walk", "Version-walk latency")          \
	X(HIST_BLOCK_WAIT_S_US, "block_wait_s", "us", "block_latch", "Block-latch waits in S mode")           \
	X(HIST_BLOCK_WAIT_X_US, "block_wait_x", "us", "block_latch", "Block-latch waits in X mode")           \
	X(HIST_BLOCK_WAIT_SX_US, "block_wait_sx", "us", "block_latch", "Block-latch waits in SX/U mode")      \
	X(HIST_OTHER_LATCH_WAIT_US, "other_latch_wait", "us", "other_latch",                                  \
	  "Other latch waits (index, lock system, purge, dictionary ...)")                     \
	X(HIST_PAGE_READ_US, "page_read_latency", "us", "undo",                                        \
	  "Page reads from disk (undo and other pages)")                                       \
	X(HIST_PURGE_BATCH_RECORDS, "purge_batch_records", "records", "purge",                          \
	  "Undo records per purge batch")                                                      \
	X(HIST_DML_DELAY_US, "dml_delay", "us", "dml", "DML delay of innodb_max_purge_lag")          \
	X(HIST_LOG_ROOM_WAIT_US, "log_room_wait", "us", "flushing",                                \
	  "Writers' waits for the log to make room (checkpoint)")                              \
	X(HIST_FREE_PAGE_WAIT_US, "free_page_wait", "us", "flushing",                              \
	  "Waits for a free page in the buffer pool")                                          \
	X(HIST_FLUSH_BATCH_US, "flush_batch_latency", "us", "flushing",                          \
	  "Page-cleaner batch latency (batches that wrote pages)")                             \
	X(HIST_FLUSH_BATCH_PAGES, "flush_batch_pages", "pages", "flushing",                      \
	  "Pages written per page-cleaner batch")

/* Monotonic counters kept in the kernel: X(id, name, kind, unit). Kinds:
 *   event  one per traced occurrence (the live line's events/s adds these up)
 *   count  occurrences of a subset or a condition of some event
 *   total  a quantity summed over events, in unit
 *   max    a running maximum: it never decreases, so per-interval deltas still sum to it,
 *          but a rate of it means nothing
 *   loss   records the kernel side could not keep (a full map or ring buffer)
 *   gauge  a level, not a count: the value at the snapshot, never a delta (the history
 *          list length as the server last computed it; a *_peak gauge is the highest
 *          value seen since the previous snapshot, which the loader zeroes once printed)
 * latch_extra_ns is what the latch programs spend beyond a probe hit, timed by themselves:
 * user stacks, libc unwinding and the wakeup tracepoint; the governor charges it to the
 * latch group. latch_waits_unstacked and latch_unstacked_ns are the latch waits shorter than
 * latch_stack_threshold_us, counted and timed with their latch but given no stack (a stack
 * is most of a wait's cost to the server, and these waits hold little of the time);
 * mutex_waits_unstacked, those of them in a pthread mutex. purge_sleep_extra_ns is the
 * same as latch_extra_ns for the scheduler tracepoint that times purge's sleeps, for the
 * switches that find a purge span open, charged to its group.
 * (With the kernel timing our programs, the governor takes their run times instead.)
 * purge_batch_split_ns and purge_worker_split_ns are the wall time of the spans that the
 * sleep tracepoint watched whole, which the three counters after each split (purge.bpf.c);
 * purge_*_io_asleep_ns, the same spans' sleeps waiting on I/O (sched.bpf.c): their I/O
 * over the same windows, where the page reads' counters have only the page-read probe's.
 * applier_* are a replica's applier threads applying events (applier.bpf.c): how many and
 * their wall time; applier_split_ns the time of those the sleep tracepoint watched whole,
 * split into time not asleep (cpu), page reads, latch waits, row-lock waits, waits for
 * the commit order and for the redo log to be written up to its commit (applier_redo_ns;
 * the rest asleep for other reasons: a binary-log sync, say); applier_redo_waits, how many
 * waits (calls of log_write_up_to that slept) applier_redo_ns took.
 * applier_open_* are the events being applied at the snapshot and their time so far, each
 * part as its counter above (set by the loader from applier_start): the report adds an
 * interval's growth of them to its counters, so a long event's time falls in the
 * intervals it took.
 * log_room_waits_open and log_room_wait_open_ns are the writers waiting for the log at the
 * snapshot and how long they have waited so far: set by the loader from flush.bpf.c's open
 * waits just before it prints (a stall in progress is seen before it ends, and one that
 * outlasts the recording is still told).
 * block_io_waits and block_read_wait_ns are block-latch waits on a page being read in,
 * block_write_waits and block_write_wait_ns on a page being written out (the flusher holds
 * its latch until the write completes): both told from the page's state at the wait's
 * start, on the futex latches (MariaDB 10.6+) only. block_write_waits_open and
 * block_write_wait_open_ns are those open at the snapshot, and how long so far (set by the
 * loader, as log_room_waits_open is).
 * free_page_waits and free_page_wait_ns are threads' waits for a free page in the buffer
 * pool (flush.bpf.c), one per wait the server counts (Innodb_buffer_pool_wait_free);
 * free_page_waits_open and free_page_wait_open_ns those open at the snapshot.
 * flush_list_* and flush_lru_* are the page cleaners' batches that wrote pages, per list:
 * how many, their pages and their time (flush_batch.bpf.c); flush_batches_empty the
 * calls that wrote nothing.
 * pages_dirtied counts clean pages put on the flush list (redo.bpf.c), the two after it
 * those put there inside purge's batches and tasks.
 * window_cuts counts spans a sampling window's edge cut in two (not measured; see
 * maps.bpf.h). redo_bytes is the redo the mini-transactions wrote, their own bytes
 * (redo.bpf.c); the two after it, the part written inside purge's batches and tasks. */
#define INNOSTALL_COUNTERS(X)                                                    \
	X(CNT_PURGE_BATCHES, "purge_batches", "event", "batches")                \
	X(CNT_PURGE_EMPTY_BATCHES, "purge_empty_batches", "count", "batches")    \
	X(CNT_PURGE_PAGES, "purge_pages", "total", "pages")                      \
	X(CNT_UNMATCHED_RETURNS, "unmatched_returns", "count", "returns")        \
	X(CNT_VERSION_WALKS, "version_walks", "event", "walks")                  \
	X(CNT_VERSION_WALKS_ZERO, "version_walks_zero", "count", "walks")        \
	X(CNT_VERSION_STEPS, "version_steps", "event", "versions")               \
	X(CNT_VERSION_STEPS_OUTSIDE, "version_steps_outside", "event", "versions") \
	X(CNT_VERSION_WALK_MAX_DEPTH, "version_walk_max_depth", "max", "versions") \
	X(CNT_DEEP_WALKS, "deep_walks", "count", "walks")                        \
	X(CNT_DROPS, "drops", "loss", "events")                                  \
	X(CNT_BLOCK_WAITS_S, "block_waits_s", "event", "waits")                  \
	X(CNT_BLOCK_WAITS_X, "block_waits_x", "event", "waits")                  \
	X(CNT_BLOCK_WAITS_SX, "block_waits_sx", "event", "waits")                \
	X(CNT_BLOCK_WAIT_NS, "block_wait_ns", "total", "ns")                     \
	X(CNT_BLOCK_IO_WAITS, "block_io_waits", "count", "waits")                \
	X(CNT_BLOCK_READ_WAIT_NS, "block_read_wait_ns", "total", "ns")           \
	X(CNT_BLOCK_WRITE_WAITS, "block_write_waits", "count", "waits")          \
	X(CNT_BLOCK_WRITE_WAIT_NS, "block_write_wait_ns", "total", "ns")         \
	X(CNT_OTHER_LATCH_WAITS, "other_latch_waits", "event", "waits")          \
	X(CNT_OTHER_LATCH_WAIT_NS, "other_latch_wait_ns", "total", "ns")         \
	X(CNT_LATCH_MAP_FULL, "latch_map_full", "loss", "waits")                 \
	X(CNT_UNDO_FETCHES_WALK, "undo_fetches_walk", "event", "pages")          \
	X(CNT_UNDO_FETCHES_PURGE, "undo_fetches_purge", "event", "pages")        \
	X(CNT_UNDO_FETCHES_OTHER, "undo_fetches_other", "event", "pages")        \
	X(CNT_PAGE_READS_WALK, "page_reads_walk", "event", "pages")              \
	X(CNT_PAGE_READS_PURGE, "page_reads_purge", "event", "pages")            \
	X(CNT_PAGE_READS_OTHER, "page_reads_other", "event", "pages")            \
	X(CNT_PURGE_RECORDS, "purge_records", "event", "records")                \
	X(CNT_DML_DELAYS, "dml_delays", "event", "delays")                       \
	X(CNT_DML_DELAY_US, "dml_delay_us", "total", "us")                       \
	X(CNT_WINDOW_CUTS, "window_cuts", "count", "spans")                      \
	X(CNT_VERSION_WALKS_UNSTEPPED, "version_walks_unstepped", "count", "walks")    \
	X(CNT_HISTORY_LENGTH, "history_length", "gauge", "transactions")         \
	X(CNT_HISTORY_PEAK, "history_length_peak", "gauge", "transactions")      \
	X(CNT_HISTORY_READS, "history_reads", "count", "reads")                  \
	X(CNT_READ_VIEWS_OPENED, "read_views_opened", "event", "views")          \
	X(CNT_READ_VIEWS_LOST, "read_views_lost", "loss", "views")               \
	X(CNT_PURGE_BATCH_NS, "purge_batch_ns", "total", "ns")                   \
	X(CNT_PURGE_BATCH_SPLIT_NS, "purge_batch_split_ns", "total", "ns")       \
	X(CNT_PURGE_BATCH_CPU_NS, "purge_batch_cpu_ns", "total", "ns")           \
	X(CNT_PURGE_BATCH_IO_NS, "purge_batch_io_ns", "total", "ns")             \
	X(CNT_PURGE_BATCH_LATCH_NS, "purge_batch_latch_ns", "total", "ns")       \
	X(CNT_PURGE_WORKER_TASKS, "purge_worker_tasks", "event", "tasks")        \
	X(CNT_PURGE_WORKER_NS, "purge_worker_ns", "total", "ns")                 \
	X(CNT_PURGE_WORKER_SPLIT_NS, "purge_worker_split_ns", "total", "ns")     \
	X(CNT_PURGE_WORKER_CPU_NS, "purge_worker_cpu_ns", "total", "ns")         \
	X(CNT_PURGE_WORKER_IO_NS, "purge_worker_io_ns", "total", "ns")           \
	X(CNT_PURGE_WORKER_LATCH_NS, "purge_worker_latch_ns", "total", "ns")    \
	X(CNT_MUTEX_WAITS, "mutex_waits", "count", "waits")                      \
	X(CNT_MUTEX_WAIT_NS, "mutex_wait_ns", "total", "ns")                     \
	X(CNT_WAKEUPS_SEEN, "wakeups_seen", "count", "wakeups")                  \
	X(CNT_HOLDER_WAKEUPS, "holder_wakeups", "count", "wakeups")              \
	X(CNT_HOLDERS_FOUND, "holders_found", "count", "waits")                  \
	X(CNT_UNWIND_STEPS, "unwind_steps", "count", "frames")                   \
	X(CNT_UNWIND_FAILS, "unwind_fails", "count", "stacks")                   \
	X(CNT_LATCH_EXTRA_NS, "latch_extra_ns", "total", "ns")                   \
	X(CNT_PURGE_SLEEP_EXTRA_NS, "purge_sleep_extra_ns", "total", "ns")      \
	X(CNT_REDO_WRITES, "redo_writes", "event", "mtrs")                       \
	X(CNT_REDO_BYTES, "redo_bytes", "total", "bytes")                        \
	X(CNT_REDO_BYTES_PURGE_COORDINATOR, "redo_bytes_purge_coordinator", "total", "bytes") \
	X(CNT_REDO_BYTES_PURGE_WORKERS, "redo_bytes_purge_workers", "total", "bytes") \
	X(CNT_REDO_WRITERS_FULL, "redo_writers_full", "loss", "mtrs")           \
	X(CNT_LOG_ROOM_WAITS, "log_room_waits", "event", "waits")                \
	X(CNT_LOG_ROOM_WAIT_NS, "log_room_wait_ns", "total", "ns")               \
	X(CNT_FLUSH_WAITS_FULL, "flush_waits_full", "loss", "waits")            \
	X(CNT_LOG_ROOM_WAITS_OPEN, "log_room_waits_open", "gauge", "waits")      \
	X(CNT_LOG_ROOM_OPEN_NS, "log_room_wait_open_ns", "gauge", "ns")          \
	X(CNT_FLUSH_LIST_BATCHES, "flush_list_batches", "event", "batches")      \
	X(CNT_FLUSH_LIST_PAGES, "flush_list_pages", "total", "pages")            \
	X(CNT_FLUSH_LIST_BATCH_NS, "flush_list_batch_ns", "total", "ns")         \
	X(CNT_FLUSH_LRU_BATCHES, "flush_lru_batches", "event", "batches")        \
	X(CNT_FLUSH_LRU_PAGES, "flush_lru_pages", "total", "pages")              \
	X(CNT_FLUSH_LRU_BATCH_NS, "flush_lru_batch_ns", "total", "ns")           \
	X(CNT_FLUSH_BATCHES_EMPTY, "flush_batches_empty", "count", "batches")    \
	X(CNT_FLUSH_BATCH_MAX_NS, "flush_batch_max_ns", "max", "ns")             \
	X(CNT_PAGES_DIRTIED, "pages_dirtied", "event", "pages")                  \
	X(CNT_PAGES_DIRTIED_PURGE_COORDINATOR, "pages_dirtied_purge_coordinator", "count", "pages") \
	X(CNT_PAGES_DIRTIED_PURGE_WORKERS, "pages_dirtied_purge_workers", "count", "pages") \
	X(CNT_BLOCK_WRITE_WAITS_OPEN, "block_write_waits_open", "gauge", "waits")  \
	X(CNT_BLOCK_WRITE_OPEN_NS, "block_write_wait_open_ns", "gauge", "ns")   \
	X(CNT_FREE_PAGE_WAITS, "free_page_waits", "event", "waits")              \
	X(CNT_FREE_PAGE_WAIT_NS, "free_page_wait_ns", "total", "ns")             \
	X(CNT_FREE_PAGE_WAITS_OPEN, "free_page_waits_open", "gauge", "waits")    \
	X(CNT_FREE_PAGE_OPEN_NS, "free_page_wait_open_ns", "gauge", "ns")       \
	X(CNT_LOG_ROOM_CLEANER_WAITS, "log_room_cleaner_waits", "event", "waits") \
	X(CNT_LOG_ROOM_CLEANER_WAIT_NS, "log_room_cleaner_wait_ns", "total", "ns") \
	X(CNT_APPLIER_EVENTS, "applier_events", "event", "events")                \
	X(CNT_APPLIER_NS, "applier_ns", "total", "ns")                            \
	X(CNT_APPLIER_SPLIT_NS, "applier_split_ns", "total", "ns")                \
	X(CNT_APPLIER_CPU_NS, "applier_cpu_ns", "total", "ns")                    \
	X(CNT_APPLIER_IO_NS, "applier_io_ns", "total", "ns")                      \
	X(CNT_APPLIER_LATCH_NS, "applier_latch_ns", "total", "ns")                \
	X(CNT_APPLIER_ROW_LOCK_NS, "applier_row_lock_ns", "total", "ns")          \
	X(CNT_APPLIER_COMMIT_WAIT_NS, "applier_commit_wait_ns", "total", "ns")    \
	X(CNT_APPLIER_REDO_NS, "applier_redo_ns", "total", "ns")                  \
	X(CNT_APPLIER_THREADS_FULL, "applier_threads_full", "loss", "events")     \
	X(CNT_APPLIER_OPEN_EVENTS, "applier_open_events", "gauge", "events")     \
	X(CNT_APPLIER_OPEN_NS, "applier_open_ns", "gauge", "ns")                  \
	X(CNT_APPLIER_OPEN_SPLIT_NS, "applier_open_split_ns", "gauge", "ns")      \
	X(CNT_APPLIER_OPEN_CPU_NS, "applier_open_cpu_ns", "gauge", "ns")          \
	X(CNT_APPLIER_OPEN_IO_NS, "applier_open_io_ns", "gauge", "ns")            \
	X(CNT_APPLIER_OPEN_LATCH_NS, "applier_open_latch_ns", "gauge", "ns")      \
	X(CNT_APPLIER_OPEN_ROW_LOCK_NS, "applier_open_row_lock_ns", "gauge", "ns") \
	X(CNT_APPLIER_OPEN_COMMIT_WAIT_NS, "applier_open_commit_wait_ns", "gauge", "ns") \
	X(CNT_APPLIER_OPEN_REDO_NS, "applier_open_redo_ns", "gauge", "ns")        \
	X(CNT_LATCH_WAITS_UNSTACKED, "latch_waits_unstacked", "count", "waits")    \
	X(CNT_LATCH_UNSTACKED_NS, "latch_unstacked_ns", "total", "ns")            \
	X(CNT_MUTEX_WAITS_UNSTACKED, "mutex_waits_unstacked", "count", "waits")    \
	X(CNT_APPLIER_REDO_WAITS, "applier_redo_waits", "count", "waits")          \
	X(CNT_PURGE_BATCH_IO_ASLEEP_NS, "purge_batch_io_asleep_ns", "total", "ns")  \
	X(CNT_PURGE_WORKER_IO_ASLEEP_NS, "purge_worker_io_asleep_ns", "total", "ns")

/* Latch wait modes, rows of the wait_stacks map and of the recording's tables: X(id, name) */
#define INNOSTALL_WAIT_MODES(X) \
	X(MODE_S, "S")          \
	X(MODE_X, "X")          \
	X(MODE_SX, "SX")        \
	X(MODE_OTHER, "other")

/* The latch implementations latch.bpf.c decodes: X(id, name), named so in the catalog */
#define INNOSTALL_LATCH_MODELS(X) \
	X(MODEL_NONE, "none")     \
	X(MODEL_SUX, "sux")       \
	X(MODEL_RW_LOCK, "rw_lock")

/* The server's struct layout the programs read: X(field, member, meaning). The
 * catalog (or the build's DWARF) gives each member by its C name; the loader sets it with
 * `--layout MEMBER=VALUE` into the `layout` record of the programs' read-only data.
 *   sux:     MariaDB 10.6+, futex-based latches; a block latch is buf_page_t::lock
 *   rw_lock: MySQL, Percona and MariaDB 10.2-10.5, rw_lock_t with sync arrays */
#define INNOSTALL_LAYOUT(X)                                                                 \
	X(latch_model, "latch_model", "enum latch_model, by name in the catalog")          \
	X(block_lock, "buf_block_t.lock", "offset of the block latch in its buf_block_t")   \
	X(page_frame, "buf_page_t.frame", "sux: offset of the frame pointer")               \
	X(page_state, "buf_page_t.zip.fix", "sux: offset of the fix count and state word")  \
	X(read_fix, "buf_page_t::READ_FIX", "sux: first state value of a page being read")  \
	X(write_fix, "buf_page_t::WRITE_FIX", "sux: first state value past the read-fixed") \
	X(is_block_lock_bit, "rw_lock_t.is_block_lock",                                     \
	  "rw_lock: bit offset of the flag marking a block latch (bool or bit-field)")      \
	X(cell_latch, "sync_cell_t.latch", "rw_lock: offset of the latch pointer in a cell") \
	X(cell_request_type, "sync_cell_t.request_type", "rw_lock: offset of the request type") \
	X(history_len, "trx_sys_t.rseg_history_len",                                        \
	  "offset of the history list length in trx_sys (0: not read)")                     \
	X(history_len_size, "sizeof(trx_sys_t.rseg_history_len)", "its width: 4 or 8 bytes")  \
	X(trx_sys_pointer, "trx_sys_t*", "1 when the global trx_sys is a pointer to the object") \
	X(free_cond, "buf_pool_t.done_free",                                                  \
	  "offset in buf_pool of the condition threads wait on for a free page (MariaDB 10.6+)") \
	X(view_open_flag, "ReadView.m_open",                                                \
	  "offset of the flag set while a read view is open (0: none; views are checked otherwise)")

#define INNOSTALL_FIELD(field, ...) __u32 field;
struct innodb_layout {
	INNOSTALL_LAYOUT(INNOSTALL_FIELD)
};

#define INNOSTALL_ID(id, ...) id,
enum hist_id { INNOSTALL_HISTS(INNOSTALL_ID) NR_HISTS };
enum counter_id { INNOSTALL_COUNTERS(INNOSTALL_ID) NR_COUNTERS };
enum wait_mode { INNOSTALL_WAIT_MODES(INNOSTALL_ID) NR_WAIT_MODES };
enum latch_model { INNOSTALL_LATCH_MODELS(INNOSTALL_ID) NR_LATCH_MODELS };

struct hist {
	__u64 slots[MAX_SLOTS];
};

/* Records sent through the `events` ring buffer; each starts with its type. */
enum event_type { EVENT_DEEP_WALK = 1 };

#define MAX_STACK_DEPTH 64 /* user frames kept per event */

/* One consistent read that built at least deep_walk_threshold row versions. */
struct deep_walk_event {
	__u32 type; /* EVENT_DEEP_WALK */
	__u32 pid; /* the server process (tgid) */
	__u32 tid;
	__u32 nr_frames;
	__u64 end_ns; /* CLOCK_MONOTONIC at return, as the loader's mono_ns */
	__u64 depth;
	__u64 latency_ns;
	__u64 index; /* the dict_index_t* whose record's versions were built (user space names it) */
	__u64 scan_index; /* the secondary index whose entry led to the record; 0: none seen */
	__u64 stack[MAX_STACK_DEPTH]; /* return addresses, innermost first */
};


/* A read view open in the server (views.bpf.c), keyed by the address of the transaction's
 * view (&trx->read_view): a thread can hold two at once (its user transaction's, and an
 * internal one such as the statistics update's). The oldest views keep purge from
 * removing history. Whether a view is still open, the loader reads from the server's
 * memory (never writes): `check` says how. */
enum view_check {
	VIEW_FLAG = 1, /* MariaDB 10.3.4+: key is the ReadView, open while its m_open byte (or the
			* low byte of m_state) is not 0 */
	VIEW_SLOT = 2, /* MVCC (MySQL, MariaDB 10.2): key is trx->read_view, a ReadView* that
			* view_close() sets to NULL or tags with bit 0 */
};

struct read_view {
	__u64 opened_ns; /* CLOCK_MONOTONIC: when it opened, or when first seen open */
	__s64 history; /* the history length then; -1: none seen yet */
	__s32 stack_id; /* in stack_traces; negative when the stack could not be taken */
	__u32 tid; /* the thread that opened it (or used it, when first seen open) */
	__u32 tgid; /* the process it lives in, whose memory the loader reads */
	__u8 check; /* enum view_check */
	__u8 seen_open; /* opened before it was seen: opened_ns is when it was first seen */
	__u16 pad;
};

#define MAX_READ_VIEWS 16384 /* views open at once */
#define REPORTED_VIEWS 8 /* the oldest views printed each interval */

struct page_key {
	__u32 space;
	__u32 page_no;
};

/* Return addresses a frame-pointer walk cannot see: frames of a library built without
 * frame pointers (glibc on Debian) between the probed instruction and the first frame of
 * the server, recovered from the library's .eh_frame (unwind.bpf.h), innermost first. The
 * kernel's walk starts at the instruction and goes on from the frame pointer, which such
 * frames leave untouched: the server function that called into the library is the frame
 * it misses. The loader prints stack[0], then these, then stack[1...]. When the library
 * code had moved the frame pointer (fp_lost: pthread_cond_wait uses rbp as a register),
 * the kernel's walk went astray: the frame-pointer walk goes on here instead, from the
 * rbp the library had saved, up to UNWOUND_FRAMES in all, and stack[0] and these are
 * printed. */
#define UNWOUND_FRAMES 32
#define LIBC_DEPTH 4 /* libc frames unwound at most before the server's */

struct unwound {
	__u64 pc[UNWOUND_FRAMES];
	__u32 nr;
	__u32 fp_lost;
};

struct stack_key {
	__s32 stack_id; /* in stack_traces; negative when the stack could not be taken */
	__u32 mode;
	struct unwound libc;
};

#define COMM_LEN 16

/* One thread's redo (redo.bpf.c's redo_writers map, keyed by thread id): all its bytes, the
 * part written inside purge's spans, and where it first wrote outside them, from which user
 * space tells its role (a connection's stack passes through do_command ...). */
struct redo_writer {
	__u64 bytes;
	__u64 purge_bytes;
	__u64 writes;
	struct stack_key stack; /* stack_id 0 and no libc frames until taken */
	__u16 stack_taken;
	__u16 stack_tries; /* a stack the map could not take (its bucket held another) is retried */
	char comm[COMM_LEN];
};

/* A thread inside purge work: the coordinator's batch (trx_purge) or a worker's task; or
 * inside a replica's applier applying one event (applier.bpf.c), whose time is split the
 * same way. sched.bpf.c adds up the time it sleeps meanwhile; the rest of the span it was
 * on a CPU or waiting for one. (The task's sum_exec_runtime would not do: the scheduler
 * brings it up to date only at ticks and switches, so a task of a few microseconds between
 * a wake and a sleep reads 0.) Kept in maps.bpf.h's batch_start, worker_start and
 * applier_start; the loader reads the applier's (json_output.c). */
struct purge_span {
	__u64 start_ns;
	__u64 asleep_ns; /* slept so far */
	__u64 asleep_since; /* when it last went to sleep; 0 while it runs */
	__u64 window; /* window_token() at entry: a worker's task may be sampled */
	__u64 sleeps; /* the sleep tracepoint's group_token() at entry: its split into CPU, I/O
		       * and latch time counts only if the tracepoint watched it whole */
	__u64 io_ns, latch_ns; /* page reads and latch waits inside it */
	__u64 row_lock_ns, commit_ns; /* an applier's waits for row locks and the commit order */
	__u64 redo_ns; /* and asleep waiting for the redo log to be written up to its commit */
	__u64 wait_since; /* when such a wait began; 0 outside one */
	__u64 wait_asleep; /* asleep_ns when it began: the redo wait counts its sleep only */
	__u32 wait_kind; /* which: enum applier_wait (below), while wait_since is set */
	__u32 redo_waits; /* an applier's waits for the redo log inside it that slept, ended */
	__u64 io_asleep_ns; /* asleep waiting on I/O (sched.bpf.c, io_sleep) */
	__u32 sleep_io; /* the sleep in progress is such a one */
	__u32 pad_io;
	__u64 taken_ns, taken_asleep; /* an applier's row-lock and commit-order waits inside it, and
				       * their sleep: counted by role at their end (struct role_wait),
				       * so left out of the span's own time */
};

/* What an applier's event waits for inside it (applier.bpf.c; struct purge_span's wait_kind). */
enum applier_wait { WAIT_ROW_LOCK, WAIT_COMMIT_ORDER, WAIT_REDO };

/* A row-lock or commit-order wait in progress by a thread known to apply events (applier.bpf.c's
 * role_waits, by thread id). It is charged to the applier's split at its end whether or not
 * an event of it was watched: the wait is measured whole by its own probe, and a stall is
 * one long wait inside an event whose span the governor may have cut or never seen begin. */
struct role_wait {
	__u64 since;
	__u64 window; /* window_token() of the wait's probe at its entry */
	__u64 span_asleep; /* the thread's span's asleep_ns at the entry, if it had a span */
	__u32 kind; /* enum applier_wait */
	__u32 pad;
};

/* One applier thread's events (applier.bpf.c's applier_threads map, keyed by thread id). */
struct applier_thread {
	__u64 events;
	__u64 apply_ns;
	char comm[COMM_LEN];
};

/* The thread that woke a latch waiter, and so released the latch it waited on (its
 * release path made the futex wake). latch_holders sums the waits each one caused. */
struct holder_key {
	__u64 latch; /* the latch's address, as the wait's probe read it */
	struct stack_key stack; /* the waker's user stack at the wake; mode: the waiter's */
	char comm[COMM_LEN]; /* the waker's thread name */
};

/* A writer's wait for flushing (flush.bpf.c's flush_waits map): what it waited for, where
 * (its user stack at the return, in the caller that waited) and the waiting thread's name. */
enum flush_wait_kind { FLUSH_WAIT_LOG_ROOM = 0, FLUSH_WAIT_FREE_PAGE = 1 };

/* A wait in progress, by thread (flush.bpf.c's open_flush_waits; the loader reads them to
 * tell the waits still open at each snapshot). */
struct flush_wait {
	__u64 start_ns; /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u64 window;
	__u32 kind;
	__u32 nested;
	/* a log-room wait's part spent waiting for the page cleaners (probe log_room_cleaner) */
	__u64 cleaner_start_ns; /* 0 when not in that part */
	__u64 cleaner_ns;
	__u32 cleaner_waits;
	__u32 pad;
};

/* The I/O on a block when a wait on its latch began (SUX: read from the page's state). */
enum page_io { PAGE_IO_NONE, PAGE_IO_READ, PAGE_IO_WRITE };

/* An open latch wait, keyed by its thread in latch_waits (holders.bpf.h). The loader reads
 * them too: a sampled group's window is not closed on a wait that has lasted a while (a
 * stall in progress, which the cut would lose; governor.c). */
struct wait_state {
	__u64 start_ns; /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u64 latch;
	__u64 window;
	__u32 mode;
	__u32 nested; /* waits entered inside this one (10.6-10.11: rd_wait -> wait_and_lock) */
	__u32 kind; /* enum latch_kind, for a latch that is not a block's */
	__u32 pthread_mutex; /* a pthread mutex's wait, in libc (mutex_wait_enter) */
	__u32 page_io; /* enum page_io: the block's I/O when the wait began (SUX) */
	__u32 pad;
};

struct flush_wait_key {
	struct stack_key stack; /* mode: enum flush_wait_kind */
	char comm[COMM_LEN];
};

/* The libc text the unwinder knows, from .eh_frame: one row per change of the canonical
 * frame address rule, sorted by pc; a row holds until the next one. */
enum cfa_base { CFA_UNKNOWN = 0, CFA_RSP = 1, CFA_RBP = 2 };

struct cfi_row {
	__u32 pc; /* link-time address in the library */
	__s32 cfa_offset; /* CFA = base register + cfa_offset */
	__u8 cfa_base; /* enum cfa_base */
	__s8 rbp_offset; /* rbp was saved at CFA + rbp_offset; 0: rbp unchanged */
	__u16 pad;
};

#define MAX_CFI_ROWS 65536
#define CFI_PAGE_SHIFT 12
#define MAX_CFI_PAGES 8192 /* libc's first 32 MB: its code lies well within */

struct wait_sum {
	__u64 count;
	__u64 total_ns;
};

/* Every contended latch, by identity (latch.bpf.c): a buffer block's latch by its page
 * (space << 32 | page_no), any other latch by its address, which user space names
 * (collector/server/latch_names.py). One entry per latch and mode. */
#define LATCH_SLOTS 24 /* log2 us buckets of a latch's waits; the last takes all above 2^23 us */

/* What a latch is, as far as the probes tell: a buffer block's, or by the sync array cell
 * that slept on it (rw_lock servers), or a futex-based srw lock (MariaDB 10.6+). */
enum latch_kind { LATCH_SRW = 0, LATCH_BLOCK = 1, LATCH_MUTEX = 2, LATCH_RW_LOCK = 3 };

struct latch_key {
	__u64 id; /* block: space << 32 | page_no; other: the latch's address */
	__u32 mode; /* enum wait_mode */
	__u32 kind; /* enum latch_kind */
};

/* Whose work a thread is doing when it waits (maps.bpf.h, work_owner_of): a latch wait
 * inside purge's batch or task, or inside a replica applier's event, is summed again by
 * latch under its owner (latch.bpf.c's work_latches), so that the report names the
 * latches that purge and the applier waited on, not only how long. */
enum work_owner { WORK_NONE = 0, WORK_PURGE = 1, WORK_APPLIER = 2 };

struct work_latch_key {
	struct latch_key latch;
	__u32 owner; /* enum work_owner */
	__u32 pad;
};

struct latch_sum {
	__u64 count;
	__u64 total_ns;
	__u64 max_ns;
	__u64 latch; /* the latch's address last seen (a block's latch moves with its page) */
	__u64 slots[LATCH_SLOTS];
};

/* Waiter stacks per latch: where each latch was waited for, weighted by wait time. */
struct latch_stack_key {
	__u64 id; /* as latch_key */
	__s32 stack_id;
	__u16 mode;
	__u16 kind;
	struct unwound libc; /* the frames the kernel's walk skips in libc (struct stack_key) */
};

/* The recording's tables, their rows read from the structs above. */
#include "innostall_tables.h"

#endif /* __INNOSTALL_H */
