/*
 * tests/unit/fuzztime.c - see fuzztime.h.
 */
#include "tests/unit/fuzztime.h"

#include <stdlib.h>
#include <time.h>

static double budget, start;
static int left;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void fuzz_time_begin(int campaigns)
{
    const char *s = getenv("HS_FUZZ_SECONDS");
    budget = s ? atof(s) : 0;
    start = now();
    left = campaigns;
}

double fuzz_time_slice(void)
{
    if (budget <= 0 || left <= 0)
        return 0;
    double t = now(), rest = start + budget - t;
    return t + (rest > 0 ? rest / left-- : 0);
}

int fuzz_time_more(int c, int cases, double deadline)
{
    return c < cases || (deadline > 0 && now() < deadline);
}
