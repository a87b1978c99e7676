/*
 * injector/output/stackset.h - what the stack-based writers (flame graph,
 * speedscope, callgrind, DTrace) share: tables of unique frames and of
 * unique strings, and the word for a kind of stack. A frame as a function,
 * which stacks a flame graph shows and the CPU time of samples are views
 * of the profile (profile/views.h).
 */
#ifndef HOOKSCOPE_STACKSET_H
#define HOOKSCOPE_STACKSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hook/base/map.h"
#include "hook/base/util.h"
#include "injector/profile/profile.h"
#include "injector/profile/views.h"

/* A table of unique frame keys, in the order they were first added. A
 * function's frame key ({func, -1, 0}, hs_frame_key) is found by the
 * function's index (by_func), other keys by hash: writers look up every
 * frame of every stack, nearly all of them functions. */
typedef struct hs_frametab {
    hs_loc *v;
    size_t n, cap;
    hs_map map;
    uint32_t *by_func;           /* per function index: its key's index + 1, 0 if not added */
    size_t by_func_cap;
} hs_frametab;

/* The index of the key (added if new). */
uint32_t hs_frametab_add_key(hs_frametab *t, hs_loc key);
/* The index of the key, or -1. */
int64_t hs_frametab_find(const hs_frametab *t, hs_loc key);
void hs_frametab_free(hs_frametab *t);

/* hs_frametab_add, with a function's key already in the table found here */
static inline uint32_t hs_frametab_add(hs_frametab *t, hs_loc key)
{
    if (key.func >= 0 && key.module == -1 && key.off == 0 && (size_t)key.func < t->by_func_cap &&
        t->by_func[key.func])
        return t->by_func[key.func] - 1;
    return hs_frametab_add_key(t, key);
}

/* Per frame key, the text a writer shows for it, made once (by `make`, into
 * buf of cap bytes; it returns the text's length) and kept: writers name
 * the same functions in every stack. The texts lie one after another in
 * one buffer (at: their offset + 1), a function's found by its index. */
typedef size_t (*hs_frametext_fn)(const hs_profile *p, hs_loc key, char *buf, size_t cap, void *ctx);
typedef struct hs_frametext_at {
    uint32_t at, len;            /* at 0: not made yet */
} hs_frametext_at;
typedef struct hs_frametexts {
    hs_frametab keys;            /* the keys of places in no function */
    hs_frametext_at *key_text;   /* per key of keys */
    hs_frametext_at *func_text;  /* per function index */
    size_t key_cap, func_cap;
    char *buf;
    size_t used, buf_cap;
    hs_frametext_fn make;
    void *ctx;
} hs_frametexts;

/* hs_frametext when the text is not made yet, or not a function's. */
const char *hs_frametext_make(hs_frametexts *t, const hs_profile *p, hs_loc key, size_t *len);

/* The text of key (a frame key, hs_frame_key) and its length (*len). */
static inline const char *hs_frametext(hs_frametexts *t, const hs_profile *p, hs_loc key, size_t *len)
{
    if (key.func >= 0 && key.module == -1 && key.off == 0 && (size_t)key.func < t->func_cap &&
        t->func_text[key.func].at) {
        *len = t->func_text[key.func].len;
        return t->buf + t->func_text[key.func].at - 1;
    }
    return hs_frametext_make(t, p, key, len);
}
/* Make now, in the functions' order, the texts of the functions in the
 * first `max` frames (0: all) of p's stacks of `kind`: their names are then
 * read one after another, not in the stacks' order. */
void hs_frametexts_premake(hs_frametexts *t, const hs_profile *p, int kind, uint32_t max);
void hs_frametexts_free(hs_frametexts *t);

/* A table of unique strings, in the order they were first added; the
 * strings are copied into blocks of the table's own. */
typedef struct hs_strtab {
    char **v;
    size_t n, cap;
    hs_map map;
    char **blocks;
    size_t nblocks, blocks_cap;
    char *next;                  /* the last block's free bytes: left of them */
    size_t left;
} hs_strtab;

uint32_t hs_strtab_add(hs_strtab *t, const char *s);
int64_t hs_strtab_find(const hs_strtab *t, const char *s);
void hs_strtab_free(hs_strtab *t);

/* A growing run of bytes: texts put together before they are written. */
typedef struct hs_textbuf {
    char *s;
    size_t n, cap;
} hs_textbuf;

/* Where `more` bytes can go after the n there are (room made for them). */
static inline char *hs_textbuf_room(hs_textbuf *b, size_t more)
{
    if (b->n + more > b->cap)
        hs_xgrow(&b->s, &b->cap, b->n + more, 1);
    return b->s + b->n;
}

static inline void hs_textbuf_put(hs_textbuf *b, const char *s, size_t n)
{
    memcpy(hs_textbuf_room(b, n), s, n);
    b->n += n;
}

/* Sort v (thread ids, ...) ascending and drop repeats; returns how many
 * are left at its start. */
size_t hs_u32_sort_unique(uint32_t *v, size_t n);

/* "samples" for sampled stacks, "captures" for entry stacks. */
const char *hs_stack_unit(int kind);

#endif
