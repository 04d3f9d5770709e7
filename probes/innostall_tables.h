/* SPDX-License-Identifier: GPL-2.0 */
/* The recording's tables, defined once (as innostall.h defines the counters and histograms).
 * The loader prints its tables' rows from these lists (collector/loader/table_output.c) and
 * their description (`innostall-loader --schema`); each recording keeps that description in
 * meta.json; innostall/format/tables.py reads it and derives from it the journal lines'
 * shapes, the rows' keys, which columns the recorder folds, the Parquet files and their
 * types, the empty tables, the query views and the frames. A table added here reaches the
 * report without a list elsewhere to extend (docs/recording-format.md, "Adding a table").
 *
 * Included by innostall.h after the structs the rows are read from. Only macros: the BPF
 * programs include it too and expand none of them. */
#ifndef __INNOSTALL_TABLES_H
#define __INNOSTALL_TABLES_H

/* The loader's tables: X(name, line, field, scope, map, key type, value type, ROW). Each is
 * a BPF map whose entries are rows; a line of type `line` holds the changed rows of its
 * tables, each under `field` (changed_rows.c). scope:
 *   "interval"   printed just before each snapshot, which owns it (cumulative rows)
 *   "recording"  printed every tenth interval and at the end: the reader keeps the last
 *                row of each key, which is the table as of that line
 * ROW(C) lists its columns in print order: C(name, kind, role, value) with value an
 * expression of the map entry's `key` and `value`. Kinds:
 *   count     an unsigned 64-bit count, sum or time
 *   identity  an unsigned 64-bit name kept whole (a latch's id, an address): never clamped
 *   tid       a thread id
 *   code      a small number from a list (a latch kind, a wait's kind, an owner): 0-255
 *   mode      a wait mode, INNOSTALL_WAIT_MODES's number
 *   text      a thread name (printable ASCII)
 *   stack     a user stack's return addresses, innermost first; the recorder folds it to
 *             one string (a key stack's rows that fold alike are summed)
 *   row_id    the kernel row's key as one number (changed_rows.h): it tells apart stacks
 *             that print alike, and the recorder drops it; always last
 *   slots     log2 microsecond buckets, up to the last used
 *   named     a text the recorder appends to the row (the loader prints none)
 * role: KEY (names the row among its table's), VALUE, or ADDED (a named column). */
#define INNOSTALL_TABLES(X)                                                                       \
	X(pages, "latch_tables", "pages", "recording", block_pages, struct page_key,                 \
	  struct wait_sum, PAGES_ROW)                                                                \
	X(stacks, "latch_tables", "stacks", "recording", wait_stacks, struct stack_key,              \
	  struct wait_sum, WAIT_STACKS_ROW)                                                          \
	X(latch_stacks, "latch_tables", "latch_stacks", "recording", latch_stacks,                   \
	  struct latch_stack_key, struct wait_sum, LATCH_STACKS_ROW)                                 \
	X(holders, "latch_tables", "holders", "recording", latch_holders, struct holder_key,         \
	  struct wait_sum, HOLDERS_ROW)                                                              \
	X(redo_writers, "latch_tables", "redo_writers", "recording", redo_writers, __u32,            \
	  struct redo_writer, REDO_WRITERS_ROW)                                                      \
	X(flush_waits, "latch_tables", "flush_waits", "recording", flush_waits,                      \
	  struct flush_wait_key, struct wait_sum, FLUSH_WAITS_ROW)                                   \
	X(appliers, "latch_tables", "appliers", "recording", applier_threads, __u32,                 \
	  struct applier_thread, APPLIERS_ROW)                                                       \
	X(latches, "latches", "latches", "interval", latches, struct latch_key, struct latch_sum,    \
	  LATCHES_ROW)                                                                               \
	X(work_latches, "work_latches", "latches", "interval", work_latches,                         \
	  struct work_latch_key, struct wait_sum, WORK_LATCHES_ROW)

/* a contended buffer block (latch.bpf.c) */
#define PAGES_ROW(C)                                   \
	C(space, count, KEY, key.space)                \
	C(page_no, count, KEY, key.page_no)            \
	C(waits, count, VALUE, value.count)            \
	C(ns, count, VALUE, value.total_ns)

/* a latch wait's stack, by mode (any latch but a block's: "other") */
#define WAIT_STACKS_ROW(C)                                               \
	C(mode, mode, KEY, key.mode)                                     \
	C(waits, count, VALUE, value.count)                              \
	C(ns, count, VALUE, value.total_ns)                              \
	C(stack, stack, KEY, STACK_AT(key.stack_id, &key.libc, 1))       \
	C(row, row_id, KEY, 0)

/* a latch's waiter stacks (latch.bpf.c's latch_stacks) */
#define LATCH_STACKS_ROW(C)                                              \
	C(kind, code, KEY, key.kind)                                     \
	C(latch, identity, KEY, key.id)                                  \
	C(mode, mode, KEY, key.mode)                                     \
	C(waits, count, VALUE, value.count)                              \
	C(ns, count, VALUE, value.total_ns)                              \
	C(stack, stack, KEY, STACK_AT(key.stack_id, &key.libc, 1))       \
	C(row, row_id, KEY, 0)

/* the thread whose release woke a latch's waiters, by its stack (holders.bpf.h); the
 * recorder adds the latch's name */
#define HOLDERS_ROW(C)                                                               \
	C(latch, identity, KEY, key.latch)                                           \
	C(mode, mode, KEY, key.stack.mode)                                           \
	C(thread, text, KEY, key.comm)                                               \
	C(waits, count, VALUE, value.count)                                          \
	C(ns, count, VALUE, value.total_ns)                                          \
	C(stack, stack, KEY, STACK_AT(key.stack.stack_id, &key.stack.libc, 1))       \
	C(row, row_id, KEY, 0)                                                       \
	C(name, named, ADDED, 0)

/* a thread that wrote redo (redo.bpf.c): the stack of its first write outside purge */
#define REDO_WRITERS_ROW(C)                                                                        \
	C(tid, tid, KEY, key)                                                                      \
	C(thread, text, VALUE, value.comm)                                                         \
	C(bytes, count, VALUE, value.bytes)                                                        \
	C(purge_bytes, count, VALUE, value.purge_bytes)                                            \
	C(writes, count, VALUE, value.writes)                                                      \
	C(stack, stack, VALUE, STACK_AT(value.stack.stack_id, &value.stack.libc, value.stack_taken))

/* a wait for flushing by kind (enum flush_wait_kind), waiter and stack (flush.bpf.c) */
#define FLUSH_WAITS_ROW(C)                                                           \
	C(kind, code, KEY, key.stack.mode)                                           \
	C(thread, text, KEY, key.comm)                                               \
	C(waits, count, VALUE, value.count)                                          \
	C(ns, count, VALUE, value.total_ns)                                          \
	C(stack, stack, KEY, STACK_AT(key.stack.stack_id, &key.stack.libc, 1))       \
	C(row, row_id, KEY, 0)

/* a replica's applier thread (applier.bpf.c) */
#define APPLIERS_ROW(C)                             \
	C(tid, tid, KEY, key)                       \
	C(thread, text, VALUE, value.comm)          \
	C(events, count, VALUE, value.events)       \
	C(ns, count, VALUE, value.apply_ns)

/* every contended latch by identity and mode (latch.bpf.c); the recorder names it */
#define LATCHES_ROW(C)                                 \
	C(kind, code, KEY, key.kind)                   \
	C(latch, identity, KEY, key.id)                \
	C(mode, mode, KEY, key.mode)                   \
	C(waits, count, VALUE, value.count)            \
	C(ns, count, VALUE, value.total_ns)            \
	C(max_ns, count, VALUE, value.max_ns)          \
	C(address, identity, VALUE, value.latch)       \
	C(slots, slots, VALUE, value.slots)            \
	C(name, named, ADDED, 0)                       \
	C(label, named, ADDED, 0)

/* the latches purge's work (owner 1) and an applier's events (2) waited on (enum work_owner) */
#define WORK_LATCHES_ROW(C)                            \
	C(owner, code, KEY, key.owner)                 \
	C(kind, code, KEY, key.latch.kind)             \
	C(latch, identity, KEY, key.latch.id)          \
	C(mode, mode, KEY, key.latch.mode)             \
	C(waits, count, VALUE, value.count)            \
	C(ns, count, VALUE, value.total_ns)

/* The recording's tables, each a Parquet file NAME.parquet, with the loader's table or
 * journal line each is built from: X(name, from, scope, COLUMNS). Those built from a line
 * the recorder writes itself (snapshots, deep_walk, read_views) are the recorder's own.
 * scope: "interval" (rows per interval: interval and t_s name it), "event" (rows timed by
 * t_s), "recording" (the whole recording's). COLUMNS(C): C(name, type, role), types those
 * of pandas (string, int8, int32, int64, Int64 nullable, float64, bool, category), and
 * time: float64 seconds from the attach (a window moves it). role: KEY or VALUE. A table
 * whose columns are its loader table's (by name, with interval and t_s for a per-interval
 * one) needs no code of its own: innostall/format/tables.py builds it. */
#define INNOSTALL_RECORDING_TABLES(X)                                                       \
	X(counters, "snapshot", "interval", COUNTERS_COLUMNS)                               \
	X(hists, "snapshot", "interval", HISTS_COLUMNS)                                     \
	X(walks, "deep_walk", "event", WALKS_COLUMNS)                                       \
	X(block_pages, "pages", "recording", BLOCK_PAGES_COLUMNS)                           \
	X(wait_stacks, "stacks", "recording", WAIT_STACKS_COLUMNS)                          \
	X(read_views, "read_views", "interval", READ_VIEWS_COLUMNS)                         \
	X(latches, "latches", "recording", LATCHES_COLUMNS)                                 \
	X(latch_timeline, "latches", "interval", LATCH_TIMELINE_COLUMNS)                    \
	X(latch_stacks, "latch_stacks", "recording", LATCH_STACKS_COLUMNS)                  \
	X(latch_holders, "holders", "recording", LATCH_HOLDERS_COLUMNS)                     \
	X(redo_writers, "redo_writers", "recording", REDO_WRITERS_COLUMNS)                  \
	X(flush_waits, "flush_waits", "recording", FLUSH_WAITS_COLUMNS)                     \
	X(appliers, "appliers", "recording", APPLIERS_COLUMNS)                              \
	X(work_latches, "work_latches", "interval", WORK_LATCHES_COLUMNS)

#define INTERVAL_COLUMNS(C) C(interval, int32, KEY) C(t_s, time, KEY)
#define COUNTERS_COLUMNS(C) INTERVAL_COLUMNS(C) C(name, category, KEY) C(value, int64, VALUE)
#define HISTS_COLUMNS(C) \
	INTERVAL_COLUMNS(C) C(name, category, KEY) C(slot, int8, KEY) C(count, int64, VALUE)
#define WALKS_COLUMNS(C)                                                                       \
	C(t_s, time, KEY) C(tid, int32, KEY) C(depth, int64, VALUE) C(latency_us, float64, VALUE) \
	C(stack, string, VALUE) C(table, string, VALUE) C(index, string, VALUE)                  \
	C(scan_index, string, VALUE)
#define BLOCK_PAGES_COLUMNS(C) \
	C(space, int64, KEY) C(page_no, int64, KEY) C(waits, int64, VALUE) C(wait_us, float64, VALUE)
#define WAIT_STACKS_COLUMNS(C) \
	C(mode, category, KEY) C(stack, string, KEY) C(waits, int64, VALUE) C(wait_us, float64, VALUE)
#define READ_VIEWS_COLUMNS(C)                                                                  \
	INTERVAL_COLUMNS(C) C(tid, Int64, KEY) C(opened_s, time, KEY) C(age_s, float64, VALUE)   \
	C(history_at_open, Int64, VALUE) C(stack, string, VALUE) C(connection_id, Int64, VALUE)  \
	C(user, string, VALUE) C(statement, string, VALUE) C(source, string, VALUE)             \
	C(seen_open, bool, VALUE) C(open, int64, VALUE)
#define LATCH_NAME_COLUMNS(C) C(name, string, KEY) C(kind, string, KEY)
#define WAIT_COLUMNS(C) C(waits, int64, VALUE) C(wait_us, float64, VALUE)
#define LATCHES_COLUMNS(C) \
	LATCH_NAME_COLUMNS(C) WAIT_COLUMNS(C) C(max_us, float64, VALUE) C(p99_us, float64, VALUE)
#define LATCH_TIMELINE_COLUMNS(C) INTERVAL_COLUMNS(C) LATCH_NAME_COLUMNS(C) WAIT_COLUMNS(C)
#define LATCH_STACKS_COLUMNS(C) \
	LATCH_NAME_COLUMNS(C) C(mode, string, KEY) C(stack, string, KEY) WAIT_COLUMNS(C)
#define LATCH_HOLDERS_COLUMNS(C)                                                               \
	C(latch, int64, KEY) C(name, string, VALUE) C(mode, string, KEY) C(thread, string, KEY) \
	C(role, string, VALUE) C(stack, string, KEY) WAIT_COLUMNS(C)
#define REDO_WRITERS_COLUMNS(C)                                                                \
	C(tid, int32, KEY) C(thread, string, VALUE) C(role, string, VALUE) C(stack, string, VALUE) \
	C(bytes, int64, VALUE) C(purge_bytes, int64, VALUE) C(writes, int64, VALUE)
#define FLUSH_WAITS_COLUMNS(C)                                                                 \
	C(kind, string, KEY) C(thread, string, KEY) C(role, string, VALUE) C(stack, string, KEY) \
	WAIT_COLUMNS(C)
#define APPLIERS_COLUMNS(C)                                                                    \
	C(tid, int32, KEY) C(thread, string, VALUE) C(role, string, VALUE) C(events, int64, VALUE) \
	C(apply_ns, int64, VALUE)
#define WORK_LATCHES_COLUMNS(C) \
	INTERVAL_COLUMNS(C) C(owner, string, KEY) LATCH_NAME_COLUMNS(C) C(mode, string, KEY) WAIT_COLUMNS(C)

#endif /* __INNOSTALL_TABLES_H */
