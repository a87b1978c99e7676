/*
 * injector/commands/progress.c - see progress.h. A console, not just a
 * character device: GetConsoleMode succeeds only on a console (NUL is a
 * character device too), so pipes, files and NUL never get the line and
 * tests that read stderr stay byte-exact.
 */
#include "injector/commands/progress.h"

#include <stdio.h>
#include <string.h>
#include <windows.h>

#include "hook/base/util.h"
#include "injector/trace/trace.h"

static void group(char *buf, size_t len, uint64_t v)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    size_t n = strlen(digits), w = 0;
    for (size_t i = 0; i < n && w + 2 < len; i++) {
        if (i && (n - i) % 3 == 0)
            buf[w++] = ',';
        buf[w++] = digits[i];
    }
    buf[w] = 0;
}

void hs_progress_text(char *buf, size_t len, double elapsed, uint64_t calls, uint64_t samples, double rate_hz,
                      double probe_ratio)
{
    char c[32], s[32], r[32] = "", w[64] = "";
    group(c, sizeof c, calls);
    group(s, sizeof s, samples);
    if (rate_hz > 0)
        snprintf(r, sizeof r, " at %.0f Hz", rate_hz);
    if (probe_ratio > HS_PROBE_RATIO_WARN)
        snprintf(w, sizeof w, "; probes %.0fx the program", probe_ratio);
    snprintf(buf, len, "hookscope: %.1f s, %s calls, %s samples%s%s", elapsed, c, s, r, w);
}

void hs_progress_start(hs_progress *pr, const hs_options *o)
{
    memset(pr, 0, sizeof *pr);
    HANDLE h = GetStdHandle(STD_ERROR_HANDLE);
    DWORD mode;
    pr->on = !o->quiet && h && h != INVALID_HANDLE_VALUE && GetFileType(h) == FILE_TYPE_CHAR &&
             GetConsoleMode(h, &mode);
    pr->last = hs_now();
}

void hs_progress_update(hs_progress *pr, double now, double elapsed, uint64_t calls, uint64_t samples,
                        double rate_hz, double probe_ratio)
{
    if (!pr->on || now - pr->last < 0.25)
        return;
    pr->last = now;
    char line[128];
    hs_progress_text(line, sizeof line, elapsed, calls, samples, rate_hz, probe_ratio);
    size_t n = strlen(line);
    /* spaces over what a longer line left */
    fprintf(stderr, "\r%s%*s", line, (int)(pr->width > n ? pr->width - n : 0), "");
    fflush(stderr);
    pr->width = n;
}

void hs_progress_end(hs_progress *pr)
{
    if (!pr->on || !pr->width)
        return;
    fprintf(stderr, "\r%*s\r", (int)pr->width, "");
    fflush(stderr);
    pr->width = 0;
}
