/*
 * tests/unit/tap.h - one line per case: "ok - <name>",
 * "not ok - <name>: <reason>" or "skip - <name>: <reason>" (a case this
 * machine cannot run; tests/run.py counts it and accepts it only when
 * tests/skips.py justifies it here); diagnostics start with "# ".
 */
#ifndef HS_TEST_TAP_H
#define HS_TEST_TAP_H

#include <stdarg.h>

/* Report one case. cond true: "ok - name"; false: "not ok - name: reason". */
void tap_check(int cond, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void tap_ok(const char *name);
void tap_fail(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A case not run here, and why ("the CPU lacks AVX-512"). */
void tap_skip(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Exit status for main: nonzero if any case failed. */
int tap_status(void);
int tap_failures(void);
int tap_count(void);

#endif
