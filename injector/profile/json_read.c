/*
 * injector/profile/json_read.c - see json.h. A recursive-descent parser over the
 * RFC 8259 grammar; \u escapes (with surrogate pairs) become UTF-8.
 */
#include "injector/profile/json_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/util.h"

#define MAX_DEPTH 256

typedef struct parser {
    const char *s, *end, *start;
    char *err;
    size_t errlen;
    int failed;
} parser;

static void fail(parser *p, const char *what)
{
    if (p->failed)
        return;
    p->failed = 1;
    size_t line = 1, col = 1;
    for (const char *c = p->start; c < p->s && c < p->end; c++) {
        if (*c == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(p->err, p->errlen, "line %zu column %zu: %s", line, col, what);
}

static void ws(parser *p)
{
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
        p->s++;
}

static int lit(parser *p, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(p->end - p->s) < n || memcmp(p->s, word, n) != 0)
        return 0;
    p->s += n;
    return 1;
}

static int hex4(parser *p, uint32_t *out)
{
    if (p->end - p->s < 4)
        return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return 0;
    }
    p->s += 4;
    *out = v;
    return 1;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* At the opening quote; returns a malloc'd string or NULL. */
static char *string(parser *p)
{
    p->s++;
    /* escapes only shrink the text (\uXXXX: 6 bytes -> at most 4) */
    size_t cap = 16;
    const char *scan = p->s;
    while (scan < p->end && *scan != '"') {
        if (*scan == '\\' && scan + 1 < p->end)
            scan++;
        scan++;
    }
    cap += (size_t)(scan - p->s);
    char *out = hs_xmalloc(cap), *o = out;
    while (p->s < p->end && *p->s != '"') {
        unsigned char c = (unsigned char)*p->s;
        if (c < 0x20) {
            fail(p, "control character in a string");
            free(out);
            return NULL;
        }
        if (c != '\\') {
            *o++ = (char)c;
            p->s++;
            continue;
        }
        p->s++;
        if (p->s >= p->end)
            break;
        char e = *p->s++;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            uint32_t cp;
            if (!hex4(p, &cp)) {
                fail(p, "bad \\u escape");
                free(out);
                return NULL;
            }
            if (cp >= 0xD800 && cp < 0xDC00) {
                uint32_t lo;
                if (p->end - p->s >= 2 && p->s[0] == '\\' && p->s[1] == 'u') {
                    p->s += 2;
                    if (!hex4(p, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                        fail(p, "bad surrogate pair");
                        free(out);
                        return NULL;
                    }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else {
                    cp = 0xFFFD;
                }
            } else if (cp >= 0xDC00 && cp < 0xE000) {
                cp = 0xFFFD;
            }
            o += put_utf8(o, cp);
            break;
        }
        default:
            fail(p, "bad escape in a string");
            free(out);
            return NULL;
        }
    }
    if (p->s >= p->end) {
        fail(p, "unterminated string");
        free(out);
        return NULL;
    }
    p->s++;
    *o = 0;
    return out;
}

static int number(parser *p, hs_json *v)
{
    const char *b = p->s;
    if (p->s < p->end && *p->s == '-')
        p->s++;
    if (p->s >= p->end || !(*p->s >= '0' && *p->s <= '9')) {
        fail(p, "bad number");
        return 0;
    }
    if (*p->s == '0')
        p->s++;
    else
        while (p->s < p->end && *p->s >= '0' && *p->s <= '9')
            p->s++;
    if (p->s < p->end && *p->s == '.') {
        p->s++;
        if (p->s >= p->end || !(*p->s >= '0' && *p->s <= '9')) {
            fail(p, "bad number");
            return 0;
        }
        while (p->s < p->end && *p->s >= '0' && *p->s <= '9')
            p->s++;
    }
    if (p->s < p->end && (*p->s == 'e' || *p->s == 'E')) {
        p->s++;
        if (p->s < p->end && (*p->s == '+' || *p->s == '-'))
            p->s++;
        if (p->s >= p->end || !(*p->s >= '0' && *p->s <= '9')) {
            fail(p, "bad number");
            return 0;
        }
        while (p->s < p->end && *p->s >= '0' && *p->s <= '9')
            p->s++;
    }
    v->type = HS_JNUM;
    v->s = hs_xstrndup(b, (size_t)(p->s - b));
    return 1;
}

static int value(parser *p, hs_json *v, int depth);

static int elements(parser *p, hs_json *v, int depth, int object)
{
    char close = object ? '}' : ']';
    size_t cap = 0;
    p->s++;
    ws(p);
    if (p->s < p->end && *p->s == close) {
        p->s++;
        return 1;
    }
    for (;;) {
        ws(p);
        char *key = NULL;
        if (object) {
            if (p->s >= p->end || *p->s != '"') {
                fail(p, "expected a string key");
                return 0;
            }
            key = string(p);
            if (!key)
                return 0;
            ws(p);
            if (p->s >= p->end || *p->s != ':') {
                free(key);
                fail(p, "expected ':'");
                return 0;
            }
            p->s++;
        }
        size_t old = cap;
        hs_xgrow(&v->v, &cap, v->n + 1, sizeof *v->v);
        if (object) {
            size_t kcap = old;
            hs_xgrow(&v->k, &kcap, v->n + 1, sizeof *v->k);
            v->k[v->n] = key;
        }
        memset(&v->v[v->n], 0, sizeof *v->v);
        v->n++;
        if (!value(p, &v->v[v->n - 1], depth + 1))
            return 0;
        ws(p);
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            continue;
        }
        if (p->s < p->end && *p->s == close) {
            p->s++;
            return 1;
        }
        fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
        return 0;
    }
}

static int value(parser *p, hs_json *v, int depth)
{
    if (depth > MAX_DEPTH) {
        fail(p, "nested too deep");
        return 0;
    }
    ws(p);
    if (p->s >= p->end) {
        fail(p, "unexpected end of the text");
        return 0;
    }
    switch (*p->s) {
    case '{':
        v->type = HS_JOBJ;
        return elements(p, v, depth, 1);
    case '[':
        v->type = HS_JARR;
        return elements(p, v, depth, 0);
    case '"':
        v->type = HS_JSTR;
        return (v->s = string(p)) != NULL;
    case 't':
    case 'f':
        v->type = HS_JBOOL;
        v->b = *p->s == 't';
        if (lit(p, v->b ? "true" : "false"))
            return 1;
        break;
    case 'n':
        if (lit(p, "null"))
            return 1;
        break;
    default:
        return number(p, v);
    }
    fail(p, "unexpected character");
    return 0;
}

static void free_value(hs_json *v)
{
    free(v->s);
    for (size_t i = 0; i < v->n; i++) {
        free_value(&v->v[i]);
        if (v->k)
            free(v->k[i]);
    }
    free(v->v);
    free(v->k);
}

hs_json *hs_json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    parser p = { text, text + len, text, err, errlen, 0 };
    hs_json *root = hs_xcalloc(1, sizeof *root);
    if (value(&p, root, 0)) {
        ws(&p);
        if (p.s == p.end)
            return root;
        fail(&p, "text after the JSON value");
    }
    hs_json_free(root);
    return NULL;
}

void hs_json_free(hs_json *j)
{
    if (!j)
        return;
    free_value(j);
    free(j);
}

const hs_json *hs_json_get(const hs_json *obj, const char *key)
{
    if (!obj || obj->type != HS_JOBJ)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (!strcmp(obj->k[i], key))
            return &obj->v[i];
    return NULL;
}

bool hs_json_is(const hs_json *j, hs_jtype t)
{
    return j && j->type == t;
}

const char *hs_json_str(const hs_json *j, const char *dflt)
{
    return hs_json_is(j, HS_JSTR) ? j->s : dflt;
}

uint64_t hs_json_u64(const hs_json *j, uint64_t dflt)
{
    if (!hs_json_is(j, HS_JNUM) || j->s[0] == '-')
        return dflt;
    if (strpbrk(j->s, ".eE"))
        return (uint64_t)strtod(j->s, NULL);
    return strtoull(j->s, NULL, 10);
}

int64_t hs_json_i64(const hs_json *j, int64_t dflt)
{
    if (!hs_json_is(j, HS_JNUM))
        return dflt;
    if (strpbrk(j->s, ".eE"))
        return (int64_t)strtod(j->s, NULL);
    return strtoll(j->s, NULL, 10);
}

double hs_json_num(const hs_json *j, double dflt)
{
    return hs_json_is(j, HS_JNUM) ? strtod(j->s, NULL) : dflt;
}

bool hs_json_bool(const hs_json *j, bool dflt)
{
    return hs_json_is(j, HS_JBOOL) ? j->b : dflt;
}
