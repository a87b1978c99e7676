/*
 * hook/unwind/fpo32.c - a PDB's FPO_DATA and FrameData records into the
 * x86 walker's frame data, and a table of them for one image (see
 * fpo32.h).
 */
#include "hook/unwind/fpo32.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/bytes.h"
#include "hook/base/search.h"
#include "hook/base/vec.h"

enum { FRAME_FPO = 0, FRAME_TRAP = 1, FRAME_TSS = 2, FRAME_NONFPO = 3 };
enum { FD_FUNCTION_START = 4 };

int hs_fpo32_decode(const uint8_t *rec, size_t len, uint32_t base, hs_uw32_frame_data *fd, uint32_t *end)
{
    if (len < HS_FPO_RECORD_SIZE)
        return -1;
    uint16_t bits = hs_le16(rec + 14);
    int frame = bits >> 14;
    if (frame == FRAME_TRAP || frame == FRAME_TSS)
        return -1;
    memset(fd, 0, sizeof *fd);
    fd->begin = base + hs_le32(rec);
    fd->prolog = bits & 0xFF;
    fd->locals = hs_le32(rec + 8) * 4;
    fd->saved_regs = ((bits >> 8) & 7) * 4;
    fd->params = (uint32_t)hs_le16(rec + 12) * 4;
    fd->uses_ebp = ((bits >> 12) & 1) || frame == FRAME_NONFPO;
    *end = fd->begin + hs_le32(rec + 4);
    return 0;
}

/* ---- program strings, evaluated symbolically ----------------------------- */

enum { V_UNKNOWN, V_NUM, V_ADDR, V_SLOT };   /* a number; base + off; the value read at base + off */
enum { B_RA, B_EBP, B_ESP };                 /* .raSearch, the frame's ebp, its esp */

typedef struct value {
    int kind, base;
    int64_t off;
} value;

#define VARS 16
#define DEPTH 16
#define NAME_MAX_LEN 24

typedef struct var {
    char name[NAME_MAX_LEN];
    value v;
} var;

typedef struct item {          /* a stack entry: a value, and the variable it came from ("" none) */
    char name[NAME_MAX_LEN];
    value v;
} item;

static var *find_var(var *vars, int *n, const char *name, bool add)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(vars[i].name, name))
            return &vars[i];
    if (!add || *n == VARS)
        return NULL;
    var *v = &vars[(*n)++];
    snprintf(v->name, sizeof v->name, "%s", name);
    v->v.kind = V_UNKNOWN;
    return v;
}

static value apply(char op, value a, value b)
{
    value r = { V_UNKNOWN, 0, 0 };
    if (a.kind == V_NUM && b.kind == V_NUM) {
        r.kind = V_NUM;
        switch (op) {
        case '+': r.off = a.off + b.off; break;
        case '-': r.off = a.off - b.off; break;
        case '*': r.off = a.off * b.off; break;
        case '/': if (b.off) r.off = a.off / b.off; else r.kind = V_UNKNOWN; break;
        case '%': if (b.off) r.off = a.off % b.off; else r.kind = V_UNKNOWN; break;
        default: r.kind = V_UNKNOWN;   /* '@' aligns: an address no offset describes */
        }
    } else if (a.kind == V_ADDR && b.kind == V_NUM && (op == '+' || op == '-')) {
        r = a;
        r.off = op == '+' ? a.off + b.off : a.off - b.off;
    } else if (a.kind == V_NUM && b.kind == V_ADDR && op == '+') {
        r = b;
        r.off += a.off;
    }
    return r;
}

/* Run the program; 0, or -1 for one that is malformed or too big. */
static int run_program(const char *p, var *vars, int *nvars)
{
    item st[DEPTH];
    int depth = 0;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, " \t\n\r");
        char tok[NAME_MAX_LEN];
        if (len >= sizeof tok)
            return -1;
        memcpy(tok, p, len);
        tok[len] = 0;
        p += len;
        if (len == 1 && strchr("+-*/%@^=", tok[0])) {
            if (tok[0] == '^') {
                if (depth < 1)
                    return -1;
                value *v = &st[depth - 1].v;
                v->kind = v->kind == V_ADDR ? V_SLOT : V_UNKNOWN;
                st[depth - 1].name[0] = 0;
                continue;
            }
            if (depth < 2)
                return -1;
            item b = st[--depth], *a = &st[depth - 1];
            if (tok[0] == '=') {
                var *v = a->name[0] ? find_var(vars, nvars, a->name, true) : NULL;
                if (!v)
                    return -1;
                v->v = b.v;
                depth--;
                continue;
            }
            a->v = apply(tok[0], a->v, b.v);
            a->name[0] = 0;
            continue;
        }
        if (depth == DEPTH)
            return -1;
        item *it = &st[depth++];
        it->name[0] = 0;
        if (tok[0] == '$' || tok[0] == '.') {
            snprintf(it->name, sizeof it->name, "%s", tok);
            var *v = find_var(vars, nvars, tok, false);
            it->v = v ? v->v : (value){ V_UNKNOWN, 0, 0 };
        } else {
            char *end;
            long long n = strtoll(tok, &end, 10);
            if (*end)
                return -1;
            it->v = (value){ V_NUM, 0, n };
        }
    }
    return depth == 0 ? 0 : -1;
}

int hs_fpo32_program(const char *program, bool *uses_ebp, uint32_t *ebp_saved_at)
{
    var vars[VARS] = {
        { "$ebp", { V_ADDR, B_EBP, 0 } },
        { "$esp", { V_ADDR, B_ESP, 0 } },
        { ".raSearch", { V_ADDR, B_RA, 0 } },
        { ".raSearchStart", { V_ADDR, B_RA, 0 } },
    };
    int n = 4;
    if (!program || run_program(program, vars, &n))
        return 0;
    const var *e = find_var(vars, &n, "$eip", false);
    value eip = e ? e->v : (value){ V_UNKNOWN, 0, 0 }, ebp = find_var(vars, &n, "$ebp", false)->v;
    if (eip.kind != V_SLOT)
        return 0;
    if (eip.base == B_EBP && eip.off == 4) {
        *uses_ebp = true;
        *ebp_saved_at = 0;
        return 1;
    }
    if (eip.base != B_RA || eip.off != 0)
        return 0;
    *uses_ebp = false;
    *ebp_saved_at = ebp.kind == V_SLOT && ebp.base == B_RA && ebp.off < 0 && ebp.off > -0x10000
                        ? (uint32_t)-ebp.off : 0;
    return 1;
}

int hs_framedata_decode(const uint8_t *rec, size_t len, const char *program, uint32_t base, hs_uw32_frame_data *fd,
                        uint32_t *end)
{
    if (len < HS_FRAMEDATA_RECORD_SIZE)
        return -1;
    memset(fd, 0, sizeof *fd);
    fd->begin = base + hs_le32(rec);
    *end = fd->begin + hs_le32(rec + 4);
    fd->locals = hs_le32(rec + 8);
    fd->params = hs_le32(rec + 12);
    fd->saved_regs = hs_le16(rec + 26);
    fd->prolog = hs_le32(rec + 28) & FD_FUNCTION_START ? hs_le16(rec + 24) : 0;
    hs_fpo32_program(program, &fd->uses_ebp, &fd->ebp_saved_at);
    return 0;
}

/* ---- one image's table --------------------------------------------------- */

typedef struct entry {
    uint32_t rva, end;
    hs_uw32_frame_data fd;     /* begin: the rva */
} entry;

struct hs_fpo32 {
    entry *e;
    size_t n, cap;
};

hs_fpo32 *hs_fpo32_new(void)
{
    return calloc(1, sizeof(hs_fpo32));
}

void hs_fpo32_free(hs_fpo32 *t)
{
    if (t)
        free(t->e);
    free(t);
}

int hs_fpo32_add(hs_fpo32 *t, const hs_uw32_frame_data *fd, uint32_t end)
{
    if (end <= fd->begin || hs_grow(&t->e, &t->cap, t->n, sizeof *t->e))
        return -1;
    t->e[t->n++] = (entry){ fd->begin, end, *fd };
    return 0;
}

int hs_fpo32_add_fpo(hs_fpo32 *t, const uint8_t *rec, size_t len)
{
    hs_uw32_frame_data fd;
    uint32_t end;
    return hs_fpo32_decode(rec, len, 0, &fd, &end) ? -1 : hs_fpo32_add(t, &fd, end);
}

int hs_fpo32_add_framedata(hs_fpo32 *t, const uint8_t *rec, size_t len, const char *program)
{
    hs_uw32_frame_data fd;
    uint32_t end;
    return hs_framedata_decode(rec, len, program, 0, &fd, &end) ? -1 : hs_fpo32_add(t, &fd, end);
}

static int cmp_entry(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    return x->rva < y->rva ? -1 : x->rva > y->rva;
}

void hs_fpo32_finish(hs_fpo32 *t)
{
    if (t && t->n)
        qsort(t->e, t->n, sizeof *t->e, cmp_entry);
}

size_t hs_fpo32_count(const hs_fpo32 *t)
{
    return t ? t->n : 0;
}

const hs_uw32_frame_data *hs_fpo32_record(const hs_fpo32 *t, size_t i, uint32_t *end)
{
    if (!t || i >= t->n)
        return NULL;
    *end = t->e[i].end;
    return &t->e[i].fd;
}

/* Records nested in a function all end where it ends; a few are looked
 * back over for one that covers rva. */
#define LOOK_BACK 4

int hs_fpo32_frame_data(const hs_fpo32 *t, uint32_t rva, uint32_t base, hs_uw32_frame_data *fd)
{
    if (!t || !t->n)
        return 0;
    size_t hi = HS_UPPER_BOUND_U32(t->e, t->n, rva, rva);
    for (size_t i = hi; i > 0 && hi - i < LOOK_BACK; i--) {
        const entry *e = &t->e[i - 1];
        if (rva < e->end) {
            *fd = e->fd;
            fd->begin = base + e->rva;
            return 1;
        }
    }
    return 0;
}
