/*
 * injector/report_folded.c - entry-stacks.folded: the entry stacks in
 * Brendan Gregg's "folded" format, the input of flamegraph.pl and of
 * most flame graph viewers (speedscope, inferno):
 *
 *   demo.exe!mainCRTStartup;demo.exe!__tmainCRTStartup;demo.exe!main;demo.exe!fib 3
 *
 * One line per unique stack: root first, the hooked function last, frames
 * as module!function (no offsets, so stacks that differ only in call
 * sites within the same functions become one line), joined by ';', then a
 * space and how many captures had that stack. The timing wrapper's frames
 * (hookscope-agent.dll) are left out, as in report.json. Lines are merged
 * and sorted bytewise, so the file is deterministic.
 *
 * A truncated stack (deeper than --stacks=DEPTH) starts at its deepest
 * captured frame instead of the thread's root; the counts stay exact.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "util.h"

typedef struct line {
    char *text;
    uint64_t count;
} line;

static int cmp_line(const void *a, const void *b)
{
    return strcmp(((const line *)a)->text, ((const line *)b)->text);
}

/* Append text to a growing buffer; in a frame name (escape), ';' (the
 * separator) and control characters become '_'. */
static void append(char **buf, size_t *len, size_t *cap, const char *s, int escape)
{
    size_t n = strlen(s);
    if (*len + n + 2 > *cap) {
        *cap = (*len + n + 2) * 2;
        *buf = hs_xrealloc(*buf, *cap);
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        (*buf)[(*len)++] = (escape && (c == ';' || (unsigned char)c < 0x20)) ? '_' : c;
    }
    (*buf)[*len] = 0;
}

int hs_write_report_folded(const hs_results *r, FILE *out)
{
    hs_addrsym *as = hs_addrsym_new(r);
    line *lines = hs_xcalloc(r->nstacks ? r->nstacks : 1, sizeof *lines);
    size_t n = 0;
    for (size_t i = 0; i < r->nstacks; i++) {
        const hs_res_stack *st = &r->stacks[i];
        char *buf = NULL;
        size_t len = 0, cap = 0;
        for (uint32_t k = st->depth; k-- > 0;) {
            char name[600];
            if (!hs_stack_frame_name(r, as, st, k, 0, name, sizeof name))
                continue;
            if (len)
                append(&buf, &len, &cap, ";", 0);
            append(&buf, &len, &cap, name, 1);
        }
        if (!buf)
            continue;
        lines[n].text = buf;
        lines[n].count = st->count;
        n++;
    }
    qsort(lines, n, sizeof *lines, cmp_line);
    for (size_t i = 0; i < n;) {
        uint64_t count = lines[i].count;
        size_t j = i + 1;
        while (j < n && strcmp(lines[j].text, lines[i].text) == 0)
            count += lines[j++].count;
        fprintf(out, "%s %llu\n", lines[i].text, (unsigned long long)count);
        i = j;
    }
    for (size_t i = 0; i < n; i++)
        free(lines[i].text);
    free(lines);
    hs_addrsym_free(as);
    return ferror(out) ? -1 : 0;
}
