/*
 * tests/unit/tap.c - the one-line-per-case report (see tap.h).
 */
#include "tests/unit/tap.h"

#include <stdio.h>

static int n_cases, n_failed;

static void vreport(int cond, const char *name, const char *fmt, va_list ap)
{
    n_cases++;
    if (cond) {
        printf("ok - %s\n", name);
    } else {
        n_failed++;
        printf("not ok - %s: ", name);
        vprintf(fmt, ap);
        printf("\n");
    }
    fflush(stdout);
}

void tap_check(int cond, const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(cond, name, fmt, ap);
    va_end(ap);
}

void tap_ok(const char *name)
{
    n_cases++;
    printf("ok - %s\n", name);
    fflush(stdout);
}

void tap_fail(const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(0, name, fmt, ap);
    va_end(ap);
}

void tap_skip(const char *name, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("skip - %s: ", name);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

void tap_diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("# ");
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

int tap_status(void) { return n_failed ? 1 : 0; }
int tap_failures(void) { return n_failed; }
int tap_count(void) { return n_cases; }
