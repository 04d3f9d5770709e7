/* SPDX-License-Identifier: GPL-2.0 */
/* Bit helpers for log2 histograms: slot s counts values in [2^s, 2^(s+1)), slot 0 also 0. */
#ifndef __BITS_BPF_H
#define __BITS_BPF_H

static __always_inline __u32 log2_u32(__u32 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xffff) << 4; v >>= shift; r |= shift;
	shift = (v > 0xff) << 3;   v >>= shift; r |= shift;
	shift = (v > 0xf) << 2;    v >>= shift; r |= shift;
	shift = (v > 0x3) << 1;    v >>= shift; r |= shift;
	return r | (v >> 1);
}

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 hi = v >> 32;

	return hi ? log2_u32(hi) + 32 : log2_u32(v);
}

#endif /* __BITS_BPF_H */
