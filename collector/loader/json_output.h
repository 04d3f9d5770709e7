/* SPDX-License-Identifier: GPL-2.0 */
/* The loader's output: one JSON object per line on stdout, read by collector/loader/loader.py. */
#ifndef __INNOSTALL_JSON_OUTPUT_H
#define __INNOSTALL_JSON_OUTPUT_H

#include <stddef.h>
#include <linux/types.h>
#include "attachment.h"
#include "calibrate.h"

struct governor;
struct innostall_bpf;

/* The measurement schema of innostall.h: names, kinds, units (--schema). */
void print_schema(void);
void print_calibration(const struct hit_cost *cost, bool measured);
void print_attached(const struct attachment *attach, int nr_attach);
/* Cumulative counters, histograms, probe hits and the governor's accounts. */
void print_snapshot(struct innostall_bpf *obj, struct governor *gov, const char *type);
/* A ring buffer callback: one line per event (deep version walks). */
int print_event(void *ctx, void *data, size_t size);
/* The oldest open read views (see read_views.h); flag_offset: ReadView.m_open. */
void print_read_views(struct innostall_bpf *obj, __u32 flag_offset);
void print_end(const char *reason);

#endif /* __INNOSTALL_JSON_OUTPUT_H */
