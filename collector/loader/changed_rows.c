// SPDX-License-Identifier: GPL-2.0
/* Rows printed, by a 64-bit hash of their key and of their value rather than the bytes
 * themselves: a stack's key holds the frames unwound through libc and runs to a few hundred
 * bytes, and a copy of every key of seven maps would cost the loader megabytes. Two keys of
 * 16384 share a hash with odds of about 1 in 10^11; the cost would be one row left
 * unprinted until it changes again. */
#include <stdlib.h>
#include "changed_rows.h"

struct row_mark {
	__u64 key_hash; /* 0: a free slot */
	__u64 value_hash;
};

/* FNV-1a, then a final mix (splitmix64's) so that nearby keys spread over the slots. */
static __u64 hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	__u64 h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h ? h : 1;
}

__u64 row_id(const void *key, size_t key_len)
{
	return hash_bytes(key, key_len);
}

bool row_changed(struct changed_rows *rows, unsigned int max_entries, const void *key,
		 size_t key_len, const void *value, size_t value_len)
{
	__u64 key_hash = hash_bytes(key, key_len), value_hash = hash_bytes(value, value_len);
	unsigned int i, n;

	if (!rows->marks) {
		rows->slots = 2 * (max_entries ? max_entries : 1);
		rows->marks = calloc(rows->slots, sizeof(*rows->marks));
		if (!rows->marks)
			return true;
	}
	for (n = 0, i = key_hash % rows->slots; n < rows->slots; n++, i = (i + 1) % rows->slots) {
		struct row_mark *mark = &rows->marks[i];

		if (mark->key_hash && mark->key_hash != key_hash)
			continue;
		if (mark->key_hash && mark->value_hash == value_hash)
			return false;
		mark->key_hash = key_hash;
		mark->value_hash = value_hash;
		return true;
	}
	return true;
}
