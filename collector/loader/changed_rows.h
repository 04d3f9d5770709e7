/* SPDX-License-Identifier: GPL-2.0 */
/* Which rows of a BPF map changed since they were last printed (changed_rows.c), so that
 * the loader prints each table's new and changed rows only and the journal stays small
 * when the tables grow to thousands of pages and stacks. */
#ifndef __INNOSTALL_CHANGED_ROWS_H
#define __INNOSTALL_CHANGED_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct row_mark;

struct changed_rows {
	struct row_mark *marks; /* open addressing, twice the map's entries: it never fills */
	unsigned int slots;
};

/* Whether the row (its key and value as read from the map) differs from when it was last
 * printed, noting it printed now; the marks are sized from the map's max_entries at the
 * first call. A row whose marks cannot be allocated counts as changed. */
bool row_changed(struct changed_rows *rows, unsigned int max_entries, const void *key,
		 size_t key_len, const void *value, size_t value_len);
/* The row's key as one number (the hash the marks keep), which tells kernel rows apart
 * where their printed columns may not: a stack that could not be taken prints no frames. */
__u64 row_id(const void *key, size_t key_len);

#endif /* __INNOSTALL_CHANGED_ROWS_H */
