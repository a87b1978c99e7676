/*
 * injector/output/difftxt.c - the table of `hookscope diff` (see
 * profile/match.h): per function, calls, self CPU samples and self time of
 * the first run (A) and the second (B) with the change, by the largest
 * change first; "-" where a run has no such figure:
 *
 *   hookscope diff
 *   A  <dir of A>: <target> (151938 calls, 0 CPU samples)
 *   B  ...
 *   functions matched by module and name, by the change of self time
 *
 *        calls A      calls B     change   samples A ...  function  module
 *
 * and a last line: how many functions changed, or "no change".
 */
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "injector/output/format.h"
#include "injector/output/writers.h"
#include "injector/profile/match.h"

static void count_col(FILE *out, const hs_diff_side *s, uint64_t v, bool have)
{
    if (s->func < 0 || !have)
        fprintf(out, " %11s", "-");
    else
        fprintf(out, " %11llu", (unsigned long long)v);
}

static void change_col(FILE *out, double a, double b, bool have)
{
    if (!have)
        fprintf(out, " %11s", "-");
    else
        fprintf(out, " %+11.0f", b - a);
}

static void time_col_of(FILE *out, const hs_diff_side *s, uint64_t ns)
{
    char buf[32] = "-";
    if (s->func >= 0 && s->timed)
        hs_fmt_duration((double)ns, buf, sizeof buf);
    fprintf(out, " %11s", buf);
}

static void time_change(FILE *out, uint64_t a_ns, uint64_t b_ns, bool have)
{
    char buf[32] = "-";
    if (have) {
        double d = (double)b_ns - (double)a_ns;
        hs_fmt_duration(d < 0 ? -d : d, buf + 1, sizeof buf - 1);
        buf[0] = d < 0 ? '-' : '+';
    }
    fprintf(out, " %11s", buf);
}

static uint64_t cpu_samples(const hs_profile *p)
{
    uint64_t n = 0;
    for (size_t i = 0; i < p->nstacks; i++)
        if (p->stacks[i].kind == HS_STACK_CPU)
            n += p->stacks[i].count;
    return n;
}

int hs_write_diff(const hs_profile *a, const char *name_a, const hs_profile *b, const char *name_b,
                  const hs_diff *d, uint32_t top, FILE *out)
{
    static const char *const by[] = { "self CPU samples", "self time", "calls", "total time (inclusive)",
                                      "total CPU samples (inclusive)" };
    bool total = d->by == HS_DIFF_BY_TOTAL_TIME || d->by == HS_DIFF_BY_TOTAL_SAMPLES;
    fprintf(out, "hookscope diff\n\n");
    fprintf(out, "A  %s: %s (%llu calls, %llu CPU samples)\n", name_a, a->target_path ? a->target_path : "?",
            (unsigned long long)a->total_calls, (unsigned long long)cpu_samples(a));
    fprintf(out, "B  %s: %s (%llu calls, %llu CPU samples)\n", name_b, b->target_path ? b->target_path : "?",
            (unsigned long long)b->total_calls, (unsigned long long)cpu_samples(b));
    if (d->other_program)
        fprintf(out, "warning: A ran %s and B ran %s, and only %zu of the %zu functions are in both: two "
                "programs, matched by name alone\n", hs_basename(a->target_path ? a->target_path : "?"),
                hs_basename(b->target_path ? b->target_path : "?"), d->both, d->n);
    fprintf(out, "functions matched by module and name, by the largest change of %s first\n\n", by[d->by]);
    fprintf(out, "%11s %11s %11s %11s %11s %11s %11s %11s %11s", "calls A", "calls B", "change", "samples A",
            "samples B", "change", "self A", "self B", "change");
    if (total)
        fprintf(out, " %11s %11s %11s", "total A", "total B", "change");
    fprintf(out, "  %-32s %s\n", "function", "module");
    size_t changed = 0, n = d->n;
    for (size_t i = 0; i < d->n; i++) {
        const hs_diff_row *r = &d->rows[i];
        if (r->a.func < 0 || r->b.func < 0 || r->a.calls != r->b.calls || r->a.cpu_self != r->b.cpu_self ||
            r->a.timed != r->b.timed || r->a.self_ns != r->b.self_ns)
            changed++;
    }
    if (top && n > top)
        n = top;
    for (size_t i = 0; i < n; i++) {
        const hs_diff_row *r = &d->rows[i];
        count_col(out, &r->a, r->a.calls, true);
        count_col(out, &r->b, r->b.calls, true);
        change_col(out, (double)r->a.calls, (double)r->b.calls, true);
        count_col(out, &r->a, r->a.cpu_self, d->samples);
        count_col(out, &r->b, r->b.cpu_self, d->samples);
        change_col(out, (double)r->a.cpu_self, (double)r->b.cpu_self, d->samples);
        time_col_of(out, &r->a, r->a.self_ns);
        time_col_of(out, &r->b, r->b.self_ns);
        time_change(out, r->a.self_ns, r->b.self_ns, d->time && r->a.timed && r->b.timed);
        if (d->by == HS_DIFF_BY_TOTAL_TIME) {
            time_col_of(out, &r->a, r->a.total_ns);
            time_col_of(out, &r->b, r->b.total_ns);
            time_change(out, r->a.total_ns, r->b.total_ns, r->a.timed && r->b.timed);
        } else if (total) {
            count_col(out, &r->a, r->a.cpu_total, true);
            count_col(out, &r->b, r->b.cpu_total, true);
            change_col(out, (double)r->a.cpu_total, (double)r->b.cpu_total, true);
        }
        fprintf(out, "  %-32s %s\n", r->name, r->module);
    }
    if (n < d->n)
        fprintf(out, "(the first %zu of %zu functions)\n", n, d->n);
    if (changed)
        fprintf(out, "\n%zu of %zu functions changed\n", changed, d->n);
    else
        fprintf(out, "\nno change: the %zu functions have the same figures in both runs\n", d->n);
    return ferror(out) ? -1 : 0;
}
