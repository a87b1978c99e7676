/*
 * tests/unit/fuzztime.h - how long the fuzz tests go on. Each campaign
 * always runs its fixed number of cases (the same ones every run, from a
 * fixed seed); with HS_FUZZ_SECONDS=S in the environment a test goes on
 * with more cases of its campaigns until S seconds are spent, shared out
 * evenly over the campaigns it declared (the sanitizer run of the units
 * sets it, so that the readers are fuzzed for a bounded time there).
 */
#ifndef HS_TEST_FUZZTIME_H
#define HS_TEST_FUZZTIME_H

/* At the start: the test runs `campaigns` campaigns. */
void fuzz_time_begin(int campaigns);
/* At the start of a campaign: its deadline (0: none). */
double fuzz_time_slice(void);
/* Run case `c` of a campaign of `cases`, with its deadline? */
int fuzz_time_more(int c, int cases, double deadline);

#endif
