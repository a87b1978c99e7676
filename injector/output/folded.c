/*
 * injector/output/folded.c - entry-stacks.folded: the entry stacks in
 * Brendan Gregg's "folded" format, the input of flamegraph.pl and of
 * most flame graph viewers (speedscope, inferno):
 *
 *   demo.exe!mainCRTStartup;demo.exe!__tmainCRTStartup;demo.exe!main;demo.exe!fib 3
 *
 * One line per unique stack: root first, the hooked function last, frames
 * as module!function (no offsets, so stacks that differ only in call
 * sites within the same functions become one line; two functions of one
 * name in a module as function@0xrva), joined by ';', then a
 * space and how many captures had that stack. Lines are merged and sorted
 * bytewise, so the file is deterministic.
 *
 * A truncated stack (deeper than --stacks=DEPTH) has the root frame
 * "[truncated]" above its deepest captured frame, so that it does not look
 * like a thread's root in a flame graph; the counts stay exact.
 *
 * cpu-stacks.folded, wait-stacks.folded, ready-stacks.folded and
 * hookscope-stacks.folded: the sampled stacks of each kind in the same
 * format, weighted by samples (merged over threads), so that a flame graph
 * of the first shows where the CPU went, of the second where threads
 * waited (blocked in a system call), of the third where they stood
 * runnable but not running (preempted, or held by the sampler), and of
 * the last which hooked functions hookscope's own work in the target
 * served (its probes, wrapper and stack captures; the leaf is the hooked
 * function, so the widest leaves are the hooks that cost the most: `-x`
 * them). A frame in a kernel image
 * (ETW samples) ends in "_[k]", as stackcollapse-perf.pl --kernel marks
 * them: flamegraph.pl and inferno colour those as kernel code.
 *
 * entry-time.folded (--time with --stacks): the same stacks weighted by
 * time in ns instead of captures: each timed function's self time is
 * shared out over its entry stacks in proportion to their captures (exact
 * per function, proportional per stack), so a flame graph of it shows
 * where the time of the hooked functions went.
 */
#include <stdlib.h>
#include <string.h>

#include "hook/base/map.h"
#include "hook/base/util.h"
#include "injector/output/stackset.h"
#include "injector/output/writers.h"

typedef struct line {
    char *text;
    uint64_t count;
} line;

static int cmp_line(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    return strcmp(((const line *)a)->text, ((const line *)b)->text);
}

/* Append n bytes to a growing buffer. */
static void append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    hs_xgrow(buf, cap, *len + n + 2, 1);
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
}

/* A frame as the folded format names it: module!function, with ';' (the
 * separator) and control characters as '_', and "_[k]" after a frame in a
 * kernel image. */
static size_t frame_text(const hs_profile *p, hs_loc key, char *buf, size_t cap, void *ctx)
{
    (void)ctx;
    hs_loc_format(p, key, true, false, buf, cap < 600 ? cap : 600);
    size_t n = 0;
    for (; buf[n]; n++)
        if (buf[n] == ';' || (unsigned char)buf[n] < 0x20)
            buf[n] = '_';
    int32_t m = hs_loc_module(p, key);
    if (m >= 0 && p->modules[m].kernel && n + 5 <= cap) {
        memcpy(buf + n, "_[k]", 5);
        n += 4;
    }
    return n;
}

static uint64_t frames_hash(const hs_prof_stack *st)
{
    uint64_t h = st->truncated ? 0x9E3779B97F4A7C15ull : 0;
    for (uint32_t d = 0; d < st->nframes; d++) {
        hs_loc k = hs_frame_key(st->frames[d]);
        h = (h ^ (uint64_t)(uint32_t)k.func) * 0x100000001B3ull;
        h = (h ^ ((uint64_t)(uint32_t)k.module << 32 ^ k.off)) * 0xC2B2AE3D27D4EB4Full;
        h ^= h >> 29;
    }
    return h;
}

/* The two stacks are one line: the same frame keys, both truncated or not. */
static bool same_line(const hs_prof_stack *a, const hs_prof_stack *b)
{
    if (a->nframes != b->nframes || a->truncated != b->truncated)
        return false;
    for (uint32_t d = 0; d < a->nframes; d++)
        if (!hs_loc_same(hs_frame_key(a->frames[d]), hs_frame_key(b->frames[d])))
            return false;
    return true;
}

/* Stacks of `kind` folded, each weighted by weight(p, stack, ctx); lines
 * of weight 0 are left out. Stacks with the same frame keys (they differ
 * in threads or offsets only) are merged before their lines are put
 * together; lines that are still the same text (two modules of one name)
 * are merged after sorting. */
static int write_kind(const hs_profile *p, FILE *out, uint8_t kind,
                      uint64_t (*weight)(const hs_profile *, size_t, void *), void *ctx)
{
    line *lines = hs_xcalloc(p->nstacks ? p->nstacks : 1, sizeof *lines);
    size_t *first = hs_xcalloc(p->nstacks ? p->nstacks : 1, sizeof *first);   /* per line: its first stack */
    hs_map same = { 0 };
    size_t n = 0;
    for (size_t i = 0; i < p->nstacks; i++) {
        const hs_prof_stack *st = &p->stacks[i];
        if (st->kind != kind || !st->nframes)
            continue;
        uint64_t w = weight(p, i, ctx);
        if (!w)
            continue;
        uint64_t h = frames_hash(st);
        size_t cursor = 0;
        uint32_t k;
        bool found = false;
        while (!found && hs_map_next(&same, h, 0, &cursor, &k))
            if (same_line(&p->stacks[first[k]], st)) {
                lines[k].count += w;
                found = true;
            }
        if (found)
            continue;
        hs_map_xadd(&same, h, 0, (uint32_t)n);
        first[n] = i;
        lines[n++].count = w;
    }
    hs_map_free(&same);
    hs_frametexts names = { .make = frame_text };
    hs_frametexts_premake(&names, p, kind, 0);
    for (size_t k = 0; k < n; k++) {
        const hs_prof_stack *st = &p->stacks[first[k]];
        char *buf = NULL;
        size_t len = 0, cap = 0;
        if (st->truncated)
            append(&buf, &len, &cap, "[truncated]", 11);
        for (uint32_t d = st->nframes; d-- > 0;) {
            size_t nlen;
            const char *name = hs_frametext(&names, p, hs_frame_key(st->frames[d]), &nlen);
            if (len)
                append(&buf, &len, &cap, ";", 1);
            append(&buf, &len, &cap, name, nlen);
        }
        lines[k].text = buf;
    }
    hs_frametexts_free(&names);
    free(first);
    hs_sort(lines, n, sizeof *lines, cmp_line, NULL);
    for (size_t i = 0; i < n;) {
        uint64_t count = lines[i].count;
        size_t j = i + 1;
        while (j < n && strcmp(lines[j].text, lines[i].text) == 0)
            count += lines[j++].count;
        fputs(lines[i].text, out);
        fprintf(out, " %llu\n", (unsigned long long)count);
        i = j;
    }
    for (size_t i = 0; i < n; i++)
        free(lines[i].text);
    free(lines);
    return ferror(out) ? -1 : 0;
}

static uint64_t by_captures(const hs_profile *p, size_t i, void *ctx)
{
    (void)ctx;
    return p->stacks[i].count;
}

int hs_write_folded(const hs_profile *p, FILE *out)
{
    return write_kind(p, out, HS_STACK_ENTRY, by_captures, NULL);
}

int hs_write_folded_cpu(const hs_profile *p, FILE *out)
{
    return write_kind(p, out, HS_STACK_CPU, by_captures, NULL);
}

int hs_write_folded_wait(const hs_profile *p, FILE *out)
{
    return write_kind(p, out, HS_STACK_WAIT, by_captures, NULL);
}

int hs_write_folded_ready(const hs_profile *p, FILE *out)
{
    return write_kind(p, out, HS_STACK_READY, by_captures, NULL);
}

int hs_write_folded_hookscope(const hs_profile *p, FILE *out)
{
    return write_kind(p, out, HS_STACK_HOOKSCOPE, by_captures, NULL);
}

/* captures per function, to share its self time out */
static uint64_t by_time(const hs_profile *p, size_t i, void *ctx)
{
    const uint64_t *captures = ctx;
    const hs_prof_stack *st = &p->stacks[i];
    const hs_prof_time *t = hs_prof_time_get(p, st->func);
    if (!captures[st->func])
        return 0;
    unsigned __int128 w = (unsigned __int128)t->self_ns * st->count;
    return (uint64_t)((w + captures[st->func] / 2) / captures[st->func]);
}

int hs_write_folded_time(const hs_profile *p, FILE *out)
{
    uint64_t *captures = hs_xcalloc(p->nfuncs ? p->nfuncs : 1, sizeof *captures);
    for (size_t i = 0; i < p->nstacks; i++)
        if (p->stacks[i].kind == HS_STACK_ENTRY)
            captures[p->stacks[i].func] += p->stacks[i].count;
    int rc = write_kind(p, out, HS_STACK_ENTRY, by_time, captures);
    free(captures);
    return rc;
}
