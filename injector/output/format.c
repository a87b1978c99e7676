/*
 * injector/output/format.c - see format.h.
 */
#include "injector/output/format.h"

#include <stdlib.h>
#include <string.h>

#include "hook/base/text.h"
#include "hook/base/util.h"

/* How many bytes at p go into a JSON string as they are (a valid UTF-8
 * sequence, or one plain character), else 0: an escape. */
static size_t json_plain(const unsigned char *p)
{
    if (*p >= 0x80)
        return hs_utf8_seq(p, strnlen((const char *)p, 4));
    return *p >= 0x20 && *p != '"' && *p != '\\';
}

/* The escape for the byte at p (one that json_plain refused): a JSON
 * escape, or U+FFFD for a byte that begins no valid UTF-8 sequence (a
 * name cut mid-character, a target's scribbled text): the file stays
 * valid UTF-8, as JSON must be. */
static const char *json_escape(const unsigned char *p, char esc[8])
{
    switch (*p) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    }
    if (*p >= 0x80)
        return "\\ufffd";
    snprintf(esc, 8, "\\u%04x", *p);
    return esc;
}

size_t hs_json_quoted(const char *s, char *buf, size_t cap)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        char esc[8];
        size_t k = json_plain(p);
        const char *e = (const char *)p;
        size_t step = k;
        if (!k) {
            e = json_escape(p, esc);
            k = strlen(e);
            step = 1;
        }
        if (n + k >= cap)
            break;
        memcpy(buf + n, e, k);
        n += k;
        p += step;
    }
    if (cap)
        buf[n] = 0;
    return n;
}

void hs_json_quote(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : ""), *run = p;
    fputc('"', out);
    while (*p) {
        size_t k = json_plain(p);
        if (k) {
            p += k;
            continue;
        }
        char esc[8];
        fwrite(run, 1, (size_t)(p - run), out);
        fputs(json_escape(p, esc), out);
        run = ++p;
    }
    fwrite(run, 1, (size_t)(p - run), out);
    fputc('"', out);
}

const char *hs_fmt_longest_kept(const hs_prof_timeline *t, const hs_tl_longest *l, char *buf, size_t len)
{
    /* (lengths a tick apart: in ns to 1/100, from the ticks) */
    int n = snprintf(buf, len, "the calls of %.2f ns or more", (double)l->min_ticks * 1e9 / t->tsc_hz);
    if (l->edge_until && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ", and of the calls from %.2f ns, those that began before %.3f ms",
                 (double)l->edge_ticks * 1e9 / t->tsc_hz, (double)hs_timeline_ns(t, l->edge_until) / 1e6);
    return buf;
}

const char *hs_fmt_duration(double ns, char *buf, size_t len)
{
    if (ns < 1e3)
        snprintf(buf, len, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, len, "%.2f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, len, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, len, "%.3f s", ns / 1e9);
    return buf;
}

const char *hs_fmt_duration3(double ns, char *buf, size_t len)
{
    static const char *const units[] = { "ns", "us", "ms", "s" };
    int u = 0;
    double v = ns;
    while (u < 3 && v >= 999.5) {
        v /= 1e3;
        u++;
    }
    int decimals = v == 0 ? 0 : v < 0.9995 ? 3 : v < 9.995 ? 2 : v < 99.95 ? 1 : 0;
    snprintf(buf, len, "%.*f %s", decimals, v, units[u]);
    return buf;
}

const char *hs_fmt_estimate(const hs_cpu_estimate *e, double ns, char *buf, size_t len)
{
    if (ns < 0) {
        snprintf(buf, len, "-");
        return buf;
    }
    char t[32];
    hs_fmt_duration3(ns, t, sizeof t);
    snprintf(buf, len, "%s%s", e->capped ? "<=" : e->few ? "~" : "", t);
    return buf;
}

void hs_fmt_quantize(FILE *out, const uint64_t *hist, int nbuckets)
{
    int lo = -1, hi = -1;
    unsigned __int128 total = 0;   /* the counts come from the target: their sum may not fit 64 bits */
    for (int b = 0; b < nbuckets; b++) {
        if (!hist[b])
            continue;
        if (lo < 0)
            lo = b;
        hi = b;
        total += (double)hist[b];
    }
    if (lo < 0)
        return;
    if (lo > 0)
        lo--;
    if (hi < nbuckets - 1)
        hi++;
    fprintf(out, "%16s  %s %s\n", "value (ns)", "------------- Distribution -------------", "count");
    for (int b = lo; b <= hi; b++) {
        char bar[41];
        int w = (int)(((unsigned __int128)hist[b] * 40 + total / 2) / total);   /* at most 40 */
        memset(bar, '@', (size_t)w);
        bar[w] = 0;
        fprintf(out, "%16llu |%-40s %llu\n", 1ull << b, bar, (unsigned long long)hist[b]);
    }
}

const char *hs_fmt_rights(const char *rights)
{
    if (!strcmp(rights, "user"))
        return "the user's, unelevated (hookscope ran elevated; --elevated-target keeps them)";
    if (!strcmp(rights, "user-restricted"))
        return "the user's, restricted to medium integrity without the administrators group (hookscope ran "
               "elevated; --elevated-target keeps them)";
    if (!strcmp(rights, "administrator"))
        return "administrator (--elevated-target)";
    if (!strcmp(rights, "administrator-only"))
        return "administrator, as hookscope's: its token has no unelevated one (UAC off, or the built-in "
               "Administrator)";
    return rights;
}

void hs_fmt_stop(const hs_profile *p, char *buf, size_t len)
{
    const char *crash = p->crash_what ? p->crash_what : p->exited ? hs_crash_name(p->exit_code) : NULL;
    uint32_t code = p->crash_code ? p->crash_code : p->exit_code;
    switch (p->stop) {
    case HS_STOP_CRASH:
        if (p->crash_address) {
            char at[600];
            snprintf(buf, len, "crashed: 0x%08X (%s) at %s", code, crash ? crash : "exception",
                     hs_loc_format(p, p->crash_at, true, true, at, sizeof at));
        } else {
            snprintf(buf, len, "crashed: 0x%08X (%s)", code, crash ? crash : "exception");
        }
        break;
    case HS_STOP_DURATION:
        snprintf(buf, len, "stopped after --duration %.3g s", p->duration_s);
        break;
    case HS_STOP_INTERRUPT:
        snprintf(buf, len, "interrupted (Ctrl+C)");
        break;
    case HS_STOP_DETACH:
        snprintf(buf, len, "detached; the target keeps running");
        break;
    case HS_STOP_RECORDED:
        snprintf(buf, len, "read from a recorded trace");
        break;
    case HS_STOP_TARGET_GONE:
        snprintf(buf, len, "the target exited with code %u (0x%X)", p->exit_code, p->exit_code);
        break;
    default:
        snprintf(buf, len, "exited with code %u (0x%X)", p->exit_code, p->exit_code);
        break;
    }
}

void hs_fmt_stack_policy(const hs_profile *p, char *buf, size_t len)
{
    uint32_t n = p->stack_every;
    if (n <= 1) {
        snprintf(buf, len, "every call");
        return;
    }
    const char *suffix = "th";
    if (n % 100 < 11 || n % 100 > 13)
        suffix = n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
    snprintf(buf, len, "every %u%s call of each function on each thread", n, suffix);
}

void hs_fmt_sort_key(const hs_profile *p, uint32_t func, int key, char *buf, size_t len)
{
    double v = hs_sort_key_value(p, func, key);
    if (v < 0)
        snprintf(buf, len, "-");
    else if (hs_sort_key_is_time(p, key))
        hs_fmt_duration(v, buf, len);
    else
        snprintf(buf, len, "%.0f", v);
}
