/*
 * injector/dtrace/dcli.h - DTrace's command line and the small subset of
 * the D language that `hookscope dtrace` understands, parsed into what a
 * run needs. Plain C, no Windows API (unit-tested natively).
 *
 * Command line (as dtrace(1) takes it; a value may follow its letter in
 * the same argument, as getopt allows):
 *   --help             print the usage, exit 0
 *   -n PROGRAM         the D program (one)
 *   -x ustackframes=N  frames of ustack() when the program gives no N
 *   -o FILE            append the output to FILE (dtrace opens it "a")
 *   -c 'CMD ARGS'      run CMD: split at unescaped spaces, "\ " is a space
 *                      inside an argument (how cargo-flamegraph quotes)
 *   -p PID             attach to PID (repeatable: all at once)
 *   -q                 quiet
 *
 * Programs (whitespace free; the predicate optional):
 *   profile-N [/pid == $target/] { @[ustack([N])] = count(); }
 *   PROBE[, PROBE]... [/pid == $target/] { @[KEY] = count(); }
 *     PROBE  fpid$target:MOD::entry or pid$target:MOD:FUNC:entry; MOD a
 *            module name (empty: the program's exe), FUNC a glob (* ?;
 *            empty: every function)
 *     KEY    probefunc | probefunc, ustack([N]) | ustack([N])
 * The aggregation may be named (@name[...]); "profile:::profile-N" and
 * "profile-Nhz" are the same as "profile-N".
 */
#ifndef HOOKSCOPE_DCLI_H
#define HOOKSCOPE_DCLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { HS_DPROG_PROFILE = 1, HS_DPROG_ENTRY = 2 };

#define HS_DTRACE_MAX_PROBES 32
#define HS_DTRACE_DEFAULT_FRAMES 20   /* dtrace's default ustackframes */

typedef struct hs_dprog {
    int provider;                /* HS_DPROG_* */
    uint32_t hz;                 /* profile-N */
    char *modules[HS_DTRACE_MAX_PROBES];   /* entry probes: module, "" for the exe */
    char *funcs[HS_DTRACE_MAX_PROBES];     /* function glob, "" for every function */
    int nprobes;
    int key;                     /* hs_dtrace_key (output/dtrace_agg.h) */
    uint32_t frames;             /* ustack(N); 0: not given */
} hs_dprog;

typedef struct hs_dcli {
    bool help, quiet;
    uint32_t ustackframes;       /* -x ustackframes=N; 0: not given */
    char *program;               /* -n */
    char *outfile;               /* -o */
    char **cmd;                  /* -c, split; NULL-terminated */
    int ncmd;
    uint32_t pids[16];           /* -p */
    int npids;
    hs_dprog prog;
} hs_dcli;

/* The sentence that names what is supported, for error messages. */
extern const char hs_dtrace_supported[];

/* Parse a D program; 0, or -1 with a one-line reason in err. */
int hs_dprog_parse(const char *text, hs_dprog *prog, char *err, size_t errlen);
void hs_dprog_free(hs_dprog *prog);

/* Split -c's command: at spaces not escaped by a backslash; "\ " is a
 * space inside an argument, any other backslash stays as it is (Windows
 * paths). Returns a NULL-terminated malloc'd array of *n strings. */
char **hs_dsplit_command(const char *s, int *n);

/* Parse dtrace's arguments (argv without the program name); 0, or -1
 * with a one-line reason in err (and nothing left to free). A program is
 * parsed too (into c->prog). */
int hs_dcli_parse(int argc, char **argv, hs_dcli *c, char *err, size_t errlen);
void hs_dcli_free(hs_dcli *c);

/* The ustack() depth the program asks for: ustack(N), else -x
 * ustackframes, else DTrace's default. */
uint32_t hs_dcli_frames(const hs_dcli *c);

#endif
