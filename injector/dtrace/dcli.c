/*
 * injector/dtrace/dcli.c - see dcli.h.
 */
#include "injector/dtrace/dcli.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"
#include "injector/output/dtrace_agg.h"

const char hs_dtrace_supported[] =
    "supported: profile-N /pid == $target/ { @[ustack(N)] = count(); }, and fpid$target:MOD::entry "
    "or pid$target:MOD:FUNC:entry (FUNC a glob) with { @[probefunc] = count(); }, "
    "{ @[probefunc, ustack()] = count(); } or { @[ustack()] = count(); }";

/* ---- the D program -------------------------------------------------------------- */

typedef struct lexer {
    const char *s, *at;
    char *err;
    size_t errlen;
    int failed;
} lexer;

static void ws(lexer *l)
{
    for (;;) {
        while (isspace((unsigned char)*l->at))
            l->at++;
        if (l->at[0] == '/' && l->at[1] == '*') {
            const char *end = strstr(l->at + 2, "*/");
            l->at = end ? end + 2 : l->at + strlen(l->at);
        } else {
            return;
        }
    }
}

static int fail(lexer *l, const char *what)
{
    if (!l->failed) {
        char near[24];
        snprintf(near, sizeof near, "%.20s", l->at);
        for (char *c = near; *c; c++)
            if (*c == '\n' || *c == '\r' || *c == '\t')
                *c = ' ';
        if (*l->at)
            snprintf(l->err, l->errlen, "unsupported D program: %s at '%s'; %s", what, near, hs_dtrace_supported);
        else
            snprintf(l->err, l->errlen, "unsupported D program: %s at its end; %s", what, hs_dtrace_supported);
    }
    l->failed = 1;
    return -1;
}

/* The literal text (after white space), consumed; 0 if not there. */
static int eat(lexer *l, const char *text)
{
    ws(l);
    size_t n = strlen(text);
    if (strncmp(l->at, text, n) != 0)
        return 0;
    l->at += n;
    return 1;
}

static int expect(lexer *l, const char *text)
{
    if (eat(l, text))
        return 0;
    char what[64];
    snprintf(what, sizeof what, "expected '%s'", text);
    return fail(l, what);
}

static int number(lexer *l, uint32_t *out)
{
    ws(l);
    if (!isdigit((unsigned char)*l->at))
        return fail(l, "expected a number");
    unsigned long long v = 0;
    while (isdigit((unsigned char)*l->at)) {
        v = v * 10 + (unsigned)(*l->at++ - '0');
        if (v > 1000000)
            return fail(l, "number too large");
    }
    *out = (uint32_t)v;
    return 0;
}

/* The text up to the next ':' (may be empty). */
static char *field(lexer *l)
{
    const char *start = l->at;
    while (*l->at && *l->at != ':' && !isspace((unsigned char)*l->at) && *l->at != ',' && *l->at != '{' &&
           *l->at != '/')
        l->at++;
    return hs_xstrndup(start, (size_t)(l->at - start));
}

static int probe(lexer *l, hs_dprog *p)
{
    ws(l);
    if (eat(l, "profile:::"))
        ws(l);
    if (eat(l, "profile-")) {
        uint32_t hz;
        if (number(l, &hz) < 0)
            return -1;
        (void)eat(l, "hz");
        if (hz == 0)
            return fail(l, "profile-0 is not a rate");
        if (p->provider == HS_DPROG_ENTRY)
            return fail(l, "profile and entry probes together");
        p->provider = HS_DPROG_PROFILE;
        p->hz = hz;
        return 0;
    }
    int fpid = eat(l, "fpid$target:");
    if (!fpid && !eat(l, "pid$target:"))
        return fail(l, "expected a probe (profile-N, fpid$target:MOD::entry or pid$target:MOD:FUNC:entry)");
    if (p->provider == HS_DPROG_PROFILE)
        return fail(l, "profile and entry probes together");
    if (p->nprobes >= HS_DTRACE_MAX_PROBES)
        return fail(l, "too many probes");
    char *mod = field(l);
    if (strpbrk(mod, "*?[")) {
        free(mod);
        return fail(l, "a module must be named, not a glob");
    }
    if (*l->at != ':') {
        free(mod);
        return fail(l, "expected ':'");
    }
    l->at++;
    char *fn = field(l);
    if (fpid && *fn) {
        free(mod);
        free(fn);
        return fail(l, "fpid probes name no function (fpid$target:MOD::entry)");
    }
    p->modules[p->nprobes] = mod;
    p->funcs[p->nprobes] = fn;
    p->nprobes++;
    p->provider = HS_DPROG_ENTRY;
    if (*l->at != ':')
        return fail(l, "expected ':'");
    l->at++;
    if (strncmp(l->at, "entry", 5) != 0 || isalnum((unsigned char)l->at[5]) || l->at[5] == '_')
        return fail(l, "only entry probes");
    l->at += 5;
    return 0;
}

static int ustack(lexer *l, hs_dprog *p)
{
    if (expect(l, "(") < 0)
        return -1;
    ws(l);
    if (isdigit((unsigned char)*l->at)) {
        if (number(l, &p->frames) < 0)
            return -1;
        if (!p->frames)
            return fail(l, "ustack(0) prints nothing");
    }
    return expect(l, ")");
}

static int aggregation(lexer *l, hs_dprog *p)
{
    if (expect(l, "@") < 0)
        return -1;
    while (isalnum((unsigned char)*l->at) || *l->at == '_')
        l->at++;
    if (expect(l, "[") < 0)
        return -1;
    if (eat(l, "probefunc")) {
        if (p->provider == HS_DPROG_PROFILE)
            return fail(l, "probefunc with profile probes");
        p->key = HS_DKEY_FUNC;
        if (eat(l, ",")) {
            if (!eat(l, "ustack"))
                return fail(l, "expected ustack() after probefunc");
            if (ustack(l, p) < 0)
                return -1;
            p->key = HS_DKEY_FUNC_STACK;
        }
    } else if (eat(l, "ustack")) {
        if (ustack(l, p) < 0)
            return -1;
        p->key = HS_DKEY_STACK;
    } else {
        return fail(l, "expected ustack() or probefunc as the key");
    }
    if (expect(l, "]") < 0 || expect(l, "=") < 0 || expect(l, "count") < 0 || expect(l, "(") < 0 ||
        expect(l, ")") < 0)
        return -1;
    return 0;
}

int hs_dprog_parse(const char *text, hs_dprog *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    lexer l = { text, text, err, errlen, 0 };
    if (probe(&l, p) < 0)
        goto bad;
    while (eat(&l, ","))
        if (probe(&l, p) < 0)
            goto bad;
    if (eat(&l, "/")) {
        if (expect(&l, "pid") < 0 || expect(&l, "==") < 0 || expect(&l, "$target") < 0 || expect(&l, "/") < 0)
            goto bad;
    }
    if (expect(&l, "{") < 0 || aggregation(&l, p) < 0)
        goto bad;
    (void)eat(&l, ";");
    if (expect(&l, "}") < 0)
        goto bad;
    (void)eat(&l, ";");
    ws(&l);
    if (*l.at) {
        fail(&l, "more than one clause or statement");
        goto bad;
    }
    return 0;
bad:
    hs_dprog_free(p);
    return -1;
}

void hs_dprog_free(hs_dprog *p)
{
    for (int i = 0; i < p->nprobes; i++) {
        free(p->modules[i]);
        free(p->funcs[i]);
    }
    p->nprobes = 0;
}

/* ---- the command line ------------------------------------------------------------ */

char **hs_dsplit_command(const char *s, int *n)
{
    size_t len = strlen(s);
    char **v = hs_xcalloc(len / 2 + 2, sizeof *v);
    char *cur = hs_xmalloc(len + 1);
    size_t w = 0;
    int k = 0, in = 0;
    for (const char *c = s;; c++) {
        if (*c == '\\' && c[1] == ' ') {
            cur[w++] = ' ';
            in = 1;
            c++;
        } else if (*c == ' ' || *c == '\t' || *c == 0) {
            if (in) {
                cur[w] = 0;
                v[k++] = hs_xstrdup(cur);
                w = 0;
                in = 0;
            }
            if (!*c)
                break;
        } else {
            cur[w++] = *c;
            in = 1;
        }
    }
    free(cur);
    v[k] = NULL;
    *n = k;
    return v;
}

static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (!*s || *end || !isdigit((unsigned char)*s) || v < lo || v > hi)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int parse(int argc, char **argv, hs_dcli *c, char *err, size_t errlen);

int hs_dcli_parse(int argc, char **argv, hs_dcli *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    int rc = parse(argc, argv, c, err, errlen);
    if (rc < 0)
        hs_dcli_free(c);   /* what was parsed before the error */
    return rc;
}

static int parse(int argc, char **argv, hs_dcli *c, char *err, size_t errlen)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-?")) {
            c->help = true;
            continue;
        }
        if (a[0] != '-' || !a[1] || a[1] == '-') {
            snprintf(err, errlen, "unexpected argument '%s' (options: -n PROGRAM, -c CMD, -p PID, -o FILE, "
                                  "-x ustackframes=N, -q, --help)", a);
            return -1;
        }
        /* getopt's way: flags may be grouped, a value may be attached */
        for (const char *o = a + 1; *o; o++) {
            if (*o == 'q') {
                c->quiet = true;
                continue;
            }
            if (!strchr("nxocp", *o)) {
                snprintf(err, errlen, "option '-%c' is not supported (options: -n PROGRAM, -c CMD, -p PID, "
                                      "-o FILE, -x ustackframes=N, -q, --help)", *o);
                return -1;
            }
            const char *val = o[1] ? o + 1 : (i + 1 < argc ? argv[++i] : NULL);
            if (!val) {
                snprintf(err, errlen, "option '-%c' needs a value", *o);
                return -1;
            }
            switch (*o) {
            case 'n':
                if (c->program) {
                    snprintf(err, errlen, "one -n program at a time");
                    return -1;
                }
                c->program = hs_xstrdup(val);
                break;
            case 'o':
                free(c->outfile);
                c->outfile = hs_xstrdup(val);
                break;
            case 'x':
                if (strncmp(val, "ustackframes=", 13) != 0 || parse_u32(val + 13, 1, 100000, &c->ustackframes) < 0) {
                    snprintf(err, errlen, "-x '%s' is not supported (only -x ustackframes=N)", val);
                    return -1;
                }
                break;
            case 'c':
                if (c->cmd || c->npids) {
                    snprintf(err, errlen, "one -c command, and not with -p");
                    return -1;
                }
                c->cmd = hs_dsplit_command(val, &c->ncmd);
                if (!c->ncmd) {
                    snprintf(err, errlen, "-c needs a command");
                    return -1;
                }
                break;
            case 'p':
                if (c->cmd) {
                    snprintf(err, errlen, "-p and -c together");
                    return -1;
                }
                if (c->npids >= 16 || parse_u32(val, 1, UINT32_MAX, &c->pids[c->npids]) < 0) {
                    snprintf(err, errlen, c->npids >= 16 ? "too many -p" : "invalid pid: %s", val);
                    return -1;
                }
                c->npids++;
                break;
            }
            break;   /* the value took the rest of the argument */
        }
    }
    if (c->help)
        return 0;
    if (!c->program) {
        snprintf(err, errlen, "no program: give one with -n ('%s')", "profile-997 /pid == $target/ { @[ustack(100)] = count(); }");
        return -1;
    }
    if (!c->cmd && !c->npids) {
        snprintf(err, errlen, "nothing to trace: give -c 'CMD ARGS' or -p PID");
        return -1;
    }
    return hs_dprog_parse(c->program, &c->prog, err, errlen);
}

void hs_dcli_free(hs_dcli *c)
{
    free(c->program);
    free(c->outfile);
    for (int i = 0; i < c->ncmd; i++)
        free(c->cmd[i]);
    free(c->cmd);
    hs_dprog_free(&c->prog);
    memset(c, 0, sizeof *c);
}

uint32_t hs_dcli_frames(const hs_dcli *c)
{
    if (c->prog.frames)
        return c->prog.frames;
    return c->ustackframes ? c->ustackframes : HS_DTRACE_DEFAULT_FRAMES;
}
