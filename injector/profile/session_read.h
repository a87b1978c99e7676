/*
 * injector/profile/session_read.h - the primitives of from_session.h's
 * readers (session_read.c), for profile/from_session.c: bounded copies
 * out of the section, tables read a chunk of records at a time, the
 * counts and module records checked, problems counted. Internal to
 * injector/profile/.
 */
#ifndef HOOKSCOPE_SESSION_READ_H
#define HOOKSCOPE_SESSION_READ_H

#include <stdbool.h>
#include <stdint.h>

#include "hook/base/util.h"
#include "injector/profile/from_session.h"

/* Count a problem; the first one is named (t NULL: not kept). */
void hs_sr_problem(hs_session_trust *t, const char *fmt, ...) HS_PRINTF(2, 3);

/* Copy [off, off + len) of the view into dst (zeros where it cannot be
 * read); false when it is outside the view. */
bool hs_sr_read(const hs_session_src *s, uint64_t off, void *dst, uint64_t len);

/* A table of n records of `size` bytes at `off`, read a chunk at a time. */
typedef struct hs_sr_table {
    const hs_session_src *s;
    uint64_t off;
    uint32_t size, n;
    uint32_t first, have;        /* the records in buf */
    uint8_t *buf;
} hs_sr_table;
void hs_sr_table_open(hs_sr_table *t, const hs_session_src *s, uint64_t off, uint32_t size, uint32_t n);
void hs_sr_table_close(hs_sr_table *t);
/* Record i (a copy), or NULL when it cannot be read. */
const void *hs_sr_table_at(hs_sr_table *t, uint32_t i);

/* The view's identity (magic, version), which nothing should change. */
void hs_sr_identity(const hs_session_src *s, hs_session_trust *t);
/* n, at most cap (a problem when over). */
uint32_t hs_sr_count(uint32_t n, uint32_t cap, const char *what, hs_session_trust *t);
/* Module record i, copied, checked and made safe to use (its path
 * terminated, its ranges within bounds); false when it cannot be read. */
bool hs_sr_module(const hs_session_src *s, uint32_t i, hs_module_rec *out, hs_session_trust *t);
/* The regions in use (threads_used of the header copy h, at most the
 * capacity); the shared overflow region comes after them. */
uint32_t hs_sr_regions(const hs_session_header *h);
/* Region k of the nregions in use, or for k == nregions the shared
 * overflow region: its offset in *base, its header copied into *rh;
 * false when that cannot be read. */
bool hs_sr_region(const hs_session_src *s, uint32_t k, uint32_t nregions, uint64_t *base, hs_region_hdr *rh);

#endif
