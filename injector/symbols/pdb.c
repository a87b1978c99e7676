/*
 * injector/symbols/pdb.c - hookscope's PDB reader (see pdb.h): identity, DBI,
 * module symbols, publics and C13 lines. Record layouts follow Microsoft's
 * published cvinfo.h / the LLVM PDB documentation (llvm.org/docs/PDB); every
 * field read goes through a bounds-checked cursor.
 */
#include "injector/symbols/pdb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/bytes.h"
#include "hook/base/search.h"
#include "injector/symbols/undecorate.h"

/* stream numbers and record kinds */
enum { PDB_STREAM_INFO = 1, PDB_STREAM_DBI = 3 };
enum { MACHINE_I386 = 0x14C };   /* IMAGE_FILE_MACHINE_I386, in the DBI header */
enum {
    S_END = 0x0006, S_THUNK32 = 0x1102, S_PUB32 = 0x110e, S_LPROC32 = 0x110f, S_GPROC32 = 0x1110,
    S_LPROC32_ID = 0x1146, S_GPROC32_ID = 0x1147, S_LPROC32_DPC = 0x1155, S_LPROC32_DPC_ID = 0x1156,
};
enum { DEBUG_S_IGNORE = 0x80000000u, DEBUG_S_LINES = 0xf2, DEBUG_S_FILECHKSMS = 0xf4 };
enum { CV_LINES_HAVE_COLUMNS = 1 };
enum { CVPSF_CODE = 1, CVPSF_FUNCTION = 2 };
/* the optional debug header of the DBI stream: stream numbers by slot */
enum { DBG_FPO = 0, DBG_OMAP_FROM_SRC = 4, DBG_SECTION_HDR = 5, DBG_NEW_FPO = 9, DBG_ORIG_SECTION_HDR = 10,
       DBG_SLOTS = 11 };

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---- identity ------------------------------------------------------------- */

void hs_guid_text(const uint8_t g[16], char out[39])
{
    snprintf(out, 39, "{%02X%02X%02X%02X-%02X%02X-%02X%02X-%02X%02X-%02X%02X%02X%02X%02X%02X}",
             g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8], g[9], g[10], g[11], g[12],
             g[13], g[14], g[15]);
}

void hs_guid_age_key(const uint8_t g[16], uint32_t age, char out[42])
{
    snprintf(out, 42, "%02X%02X%02X%02X%02X%02X%02X%02X%02X%02X%02X%02X%02X%02X%02X%02X%X", g[3],
             g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8], g[9], g[10], g[11], g[12], g[13],
             g[14], g[15], age);
}

/* The named stream map after the info stream's header: a string buffer and a
 * hash table of (string offset, stream) pairs. Finds "/names". */
static uint32_t find_named_stream(hs_cur *c, const char *want)
{
    uint32_t buflen = hs_cur_u32(c);
    hs_cur strings = hs_cur_sub(c, buflen);
    uint32_t size = hs_cur_u32(c), capacity = hs_cur_u32(c);
    uint32_t present_words = hs_cur_u32(c);
    if (c->bad || capacity > (1u << 24) || present_words > capacity / 32 + 1 || size > capacity)
        return UINT32_MAX;
    /* the pairs are stored for the present buckets only, in bucket order */
    uint32_t npresent = 0;
    for (uint32_t i = 0; i < present_words; i++) {
        uint32_t w = hs_cur_u32(c);
        while (w) {
            npresent += w & 1;
            w >>= 1;
        }
    }
    uint32_t deleted_words = hs_cur_u32(c);
    if (c->bad || deleted_words > capacity / 32 + 1)
        return UINT32_MAX;
    hs_cur_skip(c, 4 * (size_t)deleted_words);
    for (uint32_t i = 0; i < npresent && !c->bad; i++) {
        uint32_t off = hs_cur_u32(c), stream = hs_cur_u32(c);
        if (c->bad || off >= strings.len)
            return UINT32_MAX;
        const uint8_t *s = strings.p + off;
        const uint8_t *z = memchr(s, 0, strings.len - off);
        if (z && (size_t)(z - s) == strlen(want) && memcmp(s, want, (size_t)(z - s)) == 0)
            return stream;
    }
    return UINT32_MAX;
}

int hs_pdb_open(hs_pdb *p, const void *data, size_t size, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->names_stream = UINT32_MAX;
    if (hs_msf_open(&p->msf, data, size, err, errlen) != HS_MSF_OK)
        return -1;
    uint32_t n = 0;
    uint8_t *info = hs_msf_stream(&p->msf, PDB_STREAM_INFO, &n);
    if (!info) {
        hs_pdb_close(p);
        return fail(err, errlen, n ? "out of memory" : "corrupt PDB: no PDB info stream");
    }
    hs_cur c = hs_cur_of(info, n);
    p->version = hs_cur_u32(&c);
    p->signature = hs_cur_u32(&c);
    p->age = hs_cur_u32(&c);
    if (hs_cur_need(&c, 16))
        memcpy(p->guid, c.p + c.off, 16);
    hs_cur_skip(&c, 16);
    if (c.bad) {
        free(info);
        hs_pdb_close(p);
        return fail(err, errlen, "corrupt PDB: PDB info stream of %u bytes", n);
    }
    if (p->version < 20000404) {
        free(info);
        hs_pdb_close(p);
        return fail(err, errlen, "PDB version %u has no GUID (older than Visual C++ 7)",
                    p->version);
    }
    p->names_stream = find_named_stream(&c, "/names");
    free(info);
    return 0;
}

void hs_pdb_close(hs_pdb *p)
{
    hs_msf_close(&p->msf);
}

/* ---- reading: shared state ------------------------------------------------- */

typedef struct sect {
    uint32_t va, size;
} sect;

typedef struct omap {
    uint32_t from, to;
} omap;

typedef struct reader {
    const hs_pdb *pdb;
    hs_symtab *syms;
    hs_linetab *lines;
    sect *sects;              /* the image's sections (or the original ones, with OMAP) */
    uint32_t nsects;
    omap *omap;               /* OmapFromSrc, sorted by from */
    uint32_t nomap;
    uint8_t *names;           /* "/names": the string buffer */
    uint32_t names_len;
    uint16_t machine;         /* the DBI header's: IMAGE_FILE_MACHINE_I386 decorates C names */
    char *err;
    size_t errlen;
} reader;

static int cmp_omap(const void *a, const void *b)
{
    const omap *x = a, *y = b;
    return x->from < y->from ? -1 : x->from > y->from;
}

/* an rva of the image as linked -> the image's (OMAP); 0 where code was removed */
static uint32_t omap_rva(const reader *r, uint32_t a)
{
    if (!r->nomap)
        return a;
    /* the last OMAP entry with from <= a */
    size_t lo = HS_UPPER_BOUND_U32(r->omap, r->nomap, from, a);
    if (lo == 0 || r->omap[lo - 1].to == 0)
        return 0;
    return r->omap[lo - 1].to + (a - r->omap[lo - 1].from);
}

/* segment:offset -> rva; 0 when outside every section (absolute symbols,
 * code OMAP removed) */
static uint32_t to_rva(const reader *r, uint16_t seg, uint32_t off)
{
    if (seg == 0 || seg > r->nsects)
        return 0;
    uint64_t a = (uint64_t)r->sects[seg - 1].va + off;
    if (a > UINT32_MAX)
        return 0;
    return omap_rva(r, (uint32_t)a);
}

static uint8_t *read_stream(reader *r, uint32_t i, uint32_t *size, const char *what)
{
    uint8_t *s = hs_msf_stream(&r->pdb->msf, i, size);
    if (!s && *size)
        fail(r->err, r->errlen, "out of memory reading the %s stream", what);
    return s;
}

static int load_sections(reader *r, const uint16_t dbg[DBG_SLOTS])
{
    int use_omap = dbg[DBG_OMAP_FROM_SRC] != 0xffff && dbg[DBG_ORIG_SECTION_HDR] != 0xffff;
    uint32_t hdr = use_omap ? dbg[DBG_ORIG_SECTION_HDR] : dbg[DBG_SECTION_HDR];
    if (hdr == 0xffff)
        return fail(r->err, r->errlen, "the PDB has no section headers (DBI debug header)");
    uint32_t n = 0;
    uint8_t *s = read_stream(r, hdr, &n, "section header");
    if (!s)
        return n ? -1 : fail(r->err, r->errlen, "corrupt PDB: section header stream %u", hdr);
    r->nsects = n / 40;
    r->sects = calloc(r->nsects ? r->nsects : 1, sizeof *r->sects);
    if (!r->sects) {
        free(s);
        return fail(r->err, r->errlen, "out of memory");
    }
    for (uint32_t i = 0; i < r->nsects; i++) {
        hs_cur c = hs_cur_of(s + 40 * i, 40);
        hs_cur_skip(&c, 8);
        r->sects[i].size = hs_cur_u32(&c);
        r->sects[i].va = hs_cur_u32(&c);
    }
    free(s);
    if (use_omap) {
        uint8_t *o = read_stream(r, dbg[DBG_OMAP_FROM_SRC], &n, "OMAP");
        if (!o)
            return n ? -1 : 0;
        r->nomap = n / 8;
        r->omap = malloc((r->nomap ? r->nomap : 1) * sizeof *r->omap);
        if (!r->omap) {
            free(o);
            return fail(r->err, r->errlen, "out of memory");
        }
        for (uint32_t i = 0; i < r->nomap; i++) {
            hs_cur c = hs_cur_of(o + 8 * i, 8);
            r->omap[i].from = hs_cur_u32(&c);
            r->omap[i].to = hs_cur_u32(&c);
        }
        free(o);
        qsort(r->omap, r->nomap, sizeof *r->omap, cmp_omap);
    }
    return 0;
}

/* "/names": signature 0xeffeeffe, hash version, buffer size, buffer */
static void load_names(reader *r)
{
    if (r->pdb->names_stream == UINT32_MAX)
        return;
    uint32_t n = 0;
    uint8_t *s = hs_msf_stream(&r->pdb->msf, r->pdb->names_stream, &n);
    if (!s)
        return;
    hs_cur c = hs_cur_of(s, n);
    uint32_t sig = hs_cur_u32(&c);
    hs_cur_u32(&c);
    uint32_t len = hs_cur_u32(&c);
    if (c.bad || sig != 0xeffeeffeu || !hs_cur_need(&c, len)) {
        free(s);
        return;
    }
    r->names = s;
    memmove(s, s + 12, len);
    r->names_len = len;
}

static const char *name_at(const reader *r, uint32_t off)
{
    if (off >= r->names_len || !memchr(r->names + off, 0, r->names_len - off))
        return NULL;
    return (const char *)r->names + off;
}

/* ---- module symbols ------------------------------------------------------------ */

static int add_proc(reader *r, uint16_t kind, hs_cur *rec)
{
    uint32_t code_size, off, type;
    uint16_t seg;
    const char *name;
    int is_global = kind == S_GPROC32 || kind == S_GPROC32_ID;
    hs_cur_skip(rec, 12);                   /* parent, end, next */
    code_size = hs_cur_u32(rec);
    hs_cur_skip(rec, 8);                    /* debug start, debug end */
    type = hs_cur_u32(rec);
    off = hs_cur_u32(rec);
    seg = hs_cur_u16(rec);
    hs_cur_u8(rec);                         /* flags */
    name = hs_cur_cstr(rec);
    (void)type;
    if (rec->bad)
        return 1;                    /* a truncated record: counted as corrupt */
    uint32_t rva = to_rva(r, seg, off);
    if (!rva || !name[0])
        return 0;
    return hs_symtab_add(r->syms, rva, code_size, name, NULL, HS_SYMSRC_PDB, HS_SYMK_PROC,
                         is_global, NULL, 0) ? -1 : 0;
}

static int add_thunk(reader *r, hs_cur *rec)
{
    hs_cur_skip(rec, 12);                   /* parent, end, next */
    uint32_t off = hs_cur_u32(rec);
    uint16_t seg = hs_cur_u16(rec), len = hs_cur_u16(rec);
    hs_cur_u8(rec);                         /* ordinal */
    const char *name = hs_cur_cstr(rec);
    if (rec->bad)
        return 1;
    uint32_t rva = to_rva(r, seg, off);
    if (!rva || !name[0])
        return 0;
    return hs_symtab_add(r->syms, rva, len, name, NULL, HS_SYMSRC_PDB, HS_SYMK_THUNK, 0, NULL, 0)
               ? -1
               : 0;
}

/* Walk symbol records [c]: returns the number of malformed records, or -1 on
 * out of memory. */
static long walk_symbols(reader *r, hs_cur c, int publics)
{
    long bad = 0;
    while (c.off + 4 <= c.len) {
        uint16_t len = hs_cur_u16(&c);
        if (len < 2) {
            bad++;
            break;                   /* no way to the next record */
        }
        hs_cur rec = hs_cur_sub(&c, len);
        if (rec.bad) {
            bad++;
            break;
        }
        uint16_t kind = hs_cur_u16(&rec);
        int rc = 0;
        if (!publics) {
            switch (kind) {
            case S_GPROC32: case S_LPROC32: case S_GPROC32_ID: case S_LPROC32_ID:
            case S_LPROC32_DPC: case S_LPROC32_DPC_ID:
                rc = add_proc(r, kind, &rec);
                break;
            case S_THUNK32:
                rc = add_thunk(r, &rec);
                break;
            }
        } else if (kind == S_PUB32) {
            uint32_t flags = hs_cur_u32(&rec), off = hs_cur_u32(&rec);
            uint16_t seg = hs_cur_u16(&rec);
            const char *raw = hs_cur_cstr(&rec);
            if (rec.bad) {
                rc = 1;
            } else {
                uint32_t rva = to_rva(r, seg, off);
                if (rva && raw[0]) {
                    /* (an i386 public is a C name with its decoration:
                     * `_f`, `_f@12`, `@f@8`) */
                    char *und = r->machine == MACHINE_I386 ? hs_undecorate_sym32(raw, HS_UND_FULL, 1)
                                                                 : hs_undecorate_sym(raw, HS_UND_FULL);
                    int k = flags & (CVPSF_CODE | CVPSF_FUNCTION) ? HS_SYMK_PUBLIC_CODE
                                                                   : HS_SYMK_PUBLIC;
                    rc = hs_symtab_add(r->syms, rva, 0, und ? und : raw, raw, HS_SYMSRC_PDB, k, 1,
                                       NULL, 0) ? -1 : 0;
                    free(und);
                }
            }
        }
        if (rc < 0)
            return -1;
        bad += rc;
        /* records are padded to 4 bytes inside their length; nothing to do */
    }
    return bad;
}

/* ---- C13 lines --------------------------------------------------------------- */

/* the file name of a DEBUG_S_LINES block: an offset into the module's
 * DEBUG_S_FILECHKSMS subsection, whose entry names an offset in "/names" */
static const char *checksum_file(const reader *r, hs_cur chk, uint32_t off)
{
    if (chk.bad || off >= chk.len)
        return NULL;
    chk.off = off;
    uint32_t name = hs_cur_u32(&chk);
    if (chk.bad)
        return NULL;
    return name_at(r, name);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The entry offsets of one DEBUG_S_LINES subsection (its blocks after the
 * header), sorted. -1: out of memory; a malformed block ends the list (the
 * main pass counts it). */
static int collect_offsets(hs_cur body, uint16_t flags, uint32_t code_size, uint32_t **out, size_t *n)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    while (body.off + 12 <= body.len) {
        hs_cur_u32(&body);
        uint32_t nlines = hs_cur_u32(&body), block_size = hs_cur_u32(&body);
        size_t entry = (flags & CV_LINES_HAVE_COLUMNS) ? 12 : 8;
        if (block_size < 12 || nlines > (block_size - 12) / entry)
            break;
        hs_cur blk = hs_cur_sub(&body, block_size - 12);
        if (blk.bad)
            break;
        for (uint32_t i = 0; i < nlines; i++) {
            uint32_t off = hs_cur_u32(&blk);
            hs_cur_u32(&blk);
            if (off >= code_size)
                continue;
            if (*n == cap) {
                size_t nc = cap ? 2 * cap : 64;
                uint32_t *p = realloc(*out, nc * sizeof *p);
                if (!p) {
                    free(*out);
                    *out = NULL;
                    return -1;
                }
                *out = p;
                cap = nc;
            }
            (*out)[(*n)++] = off;
        }
    }
    if (*n > 1)
        qsort(*out, *n, sizeof **out, cmp_u32);
    return 0;
}

/* the smallest offset above off, or end */
static uint32_t next_offset(const uint32_t *offs, size_t n, uint32_t off, uint32_t end)
{
    size_t lo = hs_upper_bound_u32(offs, n, sizeof *offs, 0, off);
    return lo < n ? offs[lo] : end;
}

static long read_lines(reader *r, hs_cur c)
{
    long bad = 0;
    /* find the file checksums first: blocks refer to them */
    hs_cur chk = { NULL, 0, 0, 1 };
    hs_cur scan = c;
    while (scan.off + 8 <= scan.len) {
        uint32_t kind = hs_cur_u32(&scan), len = hs_cur_u32(&scan);
        hs_cur body = hs_cur_sub(&scan, len);
        if (body.bad)
            break;
        if (kind == DEBUG_S_FILECHKSMS)
            chk = body;
        hs_cur_skip(&scan, (4 - len % 4) % 4);
        scan.bad = 0;
    }
    while (c.off + 8 <= c.len) {
        uint32_t kind = hs_cur_u32(&c), len = hs_cur_u32(&c);
        hs_cur body = hs_cur_sub(&c, len);
        if (body.bad) {
            bad++;
            break;
        }
        hs_cur_skip(&c, (4 - len % 4) % 4);
        c.bad = 0;
        if ((kind & DEBUG_S_IGNORE) || kind != DEBUG_S_LINES)
            continue;
        uint32_t roff = hs_cur_u32(&body);
        uint16_t rseg = hs_cur_u16(&body), flags = hs_cur_u16(&body);
        uint32_t code_size = hs_cur_u32(&body);
        if (body.bad) {
            bad++;
            continue;
        }
        /* every entry covers the code up to the next entry of the
         * subsection (whatever its file) or the subsection's end: the
         * offsets of all its entries, sorted, give each one its span */
        uint32_t *offs = NULL;
        size_t noffs = 0;
        if (collect_offsets(body, flags, code_size, &offs, &noffs) < 0)
            return -1;
        while (body.off + 12 <= body.len) {
            uint32_t name_off = hs_cur_u32(&body), nlines = hs_cur_u32(&body), block_size = hs_cur_u32(&body);
            size_t entry = (flags & CV_LINES_HAVE_COLUMNS) ? 12 : 8;
            if (block_size < 12 || nlines > (block_size - 12) / entry) {
                bad++;
                break;
            }
            hs_cur blk = hs_cur_sub(&body, block_size - 12);
            if (blk.bad) {
                bad++;
                break;
            }
            const char *file = checksum_file(r, chk, name_off);
            if (!file) {
                bad++;
                continue;
            }
            int fi = r->lines ? hs_linetab_file(r->lines, file) : 0;
            if (fi < 0) {
                free(offs);
                return -1;
            }
            for (uint32_t i = 0; i < nlines; i++) {
                uint32_t eoff = hs_cur_u32(&blk), eflags = hs_cur_u32(&blk);
                uint32_t line = eflags & 0xffffff;
                if (eoff >= code_size || (uint64_t)roff + eoff > UINT32_MAX)
                    continue;
                uint32_t span = next_offset(offs, noffs, eoff, code_size) - eoff;
                /* with OMAP each entry moves on its own */
                uint32_t a = to_rva(r, rseg, roff + eoff);
                if (!a || (uint64_t)a + span > UINT32_MAX)
                    continue;
                if (r->lines && hs_linetab_add(r->lines, a, a + span, line, fi)) {
                    free(offs);
                    return -1;
                }
            }
        }
        free(offs);
    }
    return bad;
}

/* After sorting: a public name at the start of a procedure is that
 * procedure's decorated name (raw) and no symbol of its own. Of several
 * procedures at one rva (folded code) it goes to the one it undecorates to. */
static void fold_publics(hs_symtab *t)
{
    size_t out = 0;
    for (size_t i = 0; i < t->count;) {
        size_t j = i;
        while (j < t->count && t->syms[j].rva == t->syms[i].rva)
            j++;
        size_t nproc = 0;
        while (i + nproc < j && t->syms[i + nproc].kind == HS_SYMK_PROC)
            nproc++;
        for (size_t k = i + nproc; k < j && nproc; k++) {
            hs_sym *s = &t->syms[k];
            if (s->kind != HS_SYMK_PUBLIC_CODE && s->kind != HS_SYMK_PUBLIC)
                continue;
            hs_sym *to = &t->syms[i];
            char *only = nproc > 1 ? hs_undecorate_sym(s->raw, HS_UND_NAME) : NULL;
            for (size_t q = i; only && q < i + nproc; q++)
                if (strcmp(t->syms[q].name, only) == 0) {
                    to = &t->syms[q];
                    break;
                }
            free(only);
            if (to->raw == to->name)
                to->raw = s->raw;
        }
        /* then keep all but the folded publics */
        for (size_t k = i; k < j; k++) {
            const hs_sym *s = &t->syms[k];
            if (!nproc || (s->kind != HS_SYMK_PUBLIC_CODE && s->kind != HS_SYMK_PUBLIC))
                t->syms[out++] = *s;
        }
        i = j;
    }
    t->count = out;
}

/* The first line of every procedure and thunk: the first entry at its start. */
static int proc_first_lines(hs_symtab *t, const hs_linetab *lines)
{
    for (size_t i = 0; i < t->count; i++) {
        const char *file;
        uint32_t line;
        int k = t->syms[i].kind;
        if ((k == HS_SYMK_PROC || k == HS_SYMK_THUNK) &&
            hs_linetab_first_at(lines, t->syms[i].rva, &file, &line) &&
            hs_symtab_set_line(t, i, file, line))
            return -1;
    }
    return 0;
}

/* ---- DBI and the whole read ------------------------------------------------------- */

/* The DBI stream's header and the parts of it the readers use. */
typedef struct dbi {
    uint8_t *data;             /* the stream (malloc'd) */
    hs_cur mods;               /* the module list */
    uint16_t sym_records;      /* the symbol record stream */
    uint16_t dbg[DBG_SLOTS];   /* the optional debug header's streams (0xffff: none) */
} dbi;

/* Read the DBI stream's header into *d (r->machine too). 0, or -1 with
 * the error set (d->data freed). */
static int open_dbi(reader *r, dbi *d)
{
    uint32_t n = 0;
    memset(d, 0, sizeof *d);
    memset(d->dbg, 0xff, sizeof d->dbg);
    d->data = read_stream(r, PDB_STREAM_DBI, &n, "DBI");
    if (!d->data)
        return n ? -1 : fail(r->err, r->errlen, "the PDB has no DBI stream (no symbols)");
    hs_cur c = hs_cur_of(d->data, n);
    int32_t sig = (int32_t)hs_cur_u32(&c);
    uint32_t ver = hs_cur_u32(&c);
    hs_cur_u32(&c);                                  /* age */
    hs_cur_u16(&c);                                  /* global symbol stream */
    hs_cur_u16(&c);                                  /* build number */
    hs_cur_u16(&c);                                  /* public symbol stream */
    hs_cur_u16(&c);                                  /* pdb dll version */
    d->sym_records = hs_cur_u16(&c);
    hs_cur_u16(&c);                                  /* pdb dll rebuild */
    uint32_t mod_size = hs_cur_u32(&c), sc_size = hs_cur_u32(&c), smap_size = hs_cur_u32(&c), file_size = hs_cur_u32(&c);
    uint32_t tsmap_size = hs_cur_u32(&c);
    hs_cur_u32(&c);                                  /* MFC type server */
    uint32_t dbg_size = hs_cur_u32(&c), ec_size = hs_cur_u32(&c);
    hs_cur_u16(&c);                                  /* flags */
    r->machine = hs_cur_u16(&c);
    hs_cur_skip(&c, 4);                              /* padding */
    if (c.bad || sig != -1 || ver < 19990903) {
        fail(r->err, r->errlen, "corrupt PDB: DBI stream header (signature %d, version %u)", sig, ver);
        goto bad;
    }
    d->mods = hs_cur_sub(&c, mod_size);
    hs_cur_skip(&c, sc_size);
    hs_cur_skip(&c, smap_size);
    hs_cur_skip(&c, file_size);
    hs_cur_skip(&c, tsmap_size);
    hs_cur_skip(&c, ec_size);
    hs_cur dbgc = hs_cur_sub(&c, dbg_size);
    if (c.bad) {
        fail(r->err, r->errlen, "corrupt PDB: DBI substreams (%u bytes) exceed the stream (%u)",
             mod_size + sc_size + smap_size + file_size + tsmap_size + ec_size + dbg_size, n);
        goto bad;
    }
    for (int i = 0; i < DBG_SLOTS && dbgc.off + 2 <= dbgc.len; i++)
        d->dbg[i] = hs_cur_u16(&dbgc);
    return 0;
bad:
    free(d->data);
    d->data = NULL;
    return -1;
}

static reader reader_of(const hs_pdb *p, char *err, size_t errlen)
{
    reader r;
    memset(&r, 0, sizeof r);
    r.pdb = p;
    r.err = err;
    r.errlen = errlen;
    return r;
}

int hs_pdb_read(const hs_pdb *p, hs_symtab *syms, hs_linetab *lines, char *err, size_t errlen)
{
    reader r = reader_of(p, err, errlen);
    r.syms = syms;
    r.lines = lines;
    int rc = -1;
    long bad = 0;
    dbi d;
    if (open_dbi(&r, &d))
        return -1;
    hs_cur mods = d.mods;
    uint16_t sym_records = d.sym_records;
    if (load_sections(&r, d.dbg))
        goto out;
    load_names(&r);

    /* modules: a fixed 64-byte header, two names, 4-byte alignment */
    while (mods.off + 64 <= mods.len) {
        hs_cur h = hs_cur_sub(&mods, 64);
        hs_cur_skip(&h, 4 + 28 + 2);                 /* unused, section contribution, flags */
        uint16_t stream = hs_cur_u16(&h);
        uint32_t sym_bytes = hs_cur_u32(&h), c11_bytes = hs_cur_u32(&h), c13_bytes = hs_cur_u32(&h);
        const char *modname = hs_cur_cstr(&mods);
        const char *objname = hs_cur_cstr(&mods);
        if (mods.bad || !modname || !objname) {
            bad++;
            break;
        }
        (void)modname;
        (void)objname;
        mods.off = (mods.off + 3) & ~(size_t)3;
        if (mods.off > mods.len)
            mods.off = mods.len;
        if (stream == 0xffff)
            continue;
        uint32_t ms = 0;
        uint8_t *m = read_stream(&r, stream, &ms, "module symbol");
        if (!m) {
            if (ms)
                goto out;
            bad++;
            continue;
        }
        if (sym_bytes >= 4 && (uint64_t)sym_bytes + c11_bytes + c13_bytes <= ms) {
            hs_cur sy = hs_cur_of(m + 4, sym_bytes - 4);     /* after the CV signature */
            long b = walk_symbols(&r, sy, 0);
            hs_cur ln = hs_cur_of(m + sym_bytes + c11_bytes, c13_bytes);
            long bl = b < 0 ? 0 : read_lines(&r, ln);
            if (b < 0 || bl < 0) {
                free(m);
                fail(err, errlen, "out of memory");
                goto out;
            }
            bad += b + bl;
        } else {
            bad++;
        }
        free(m);
    }
    if (mods.bad)
        bad++;

    /* publics, from the symbol record stream */
    if (sym_records != 0xffff) {
        uint32_t ss = 0;
        uint8_t *s = read_stream(&r, sym_records, &ss, "symbol record");
        if (s) {
            long b = walk_symbols(&r, hs_cur_of(s, ss), 1);
            free(s);
            if (b < 0) {
                fail(err, errlen, "out of memory");
                goto out;
            }
            bad += b;
        } else if (ss) {
            goto out;
        }
    }
    if (bad) {
        fail(err, errlen, "corrupt PDB: %ld malformed records or line blocks", bad);
        goto out;
    }
    if (lines) {
        hs_linetab_finish(lines);
        if (proc_first_lines(syms, lines)) {
            fail(err, errlen, "out of memory");
            goto out;
        }
    }
    hs_symtab_finish(syms);
    fold_publics(syms);
    rc = 0;
out:
    free(d.data);
    free(r.sects);
    free(r.omap);
    free(r.names);
    return rc;
}

/* ---- x86 frame data ----------------------------------------------------------------- */

/* The records of one frame data stream into t; bad counts the malformed. */
static int add_frames(reader *r, uint16_t stream, size_t size, hs_fpo32 *t, long *bad)
{
    if (stream == 0xffff)
        return 0;
    uint32_t n = 0;
    uint8_t *s = read_stream(r, stream, &n, size == HS_FPO_RECORD_SIZE ? "FPO" : "FrameData");
    if (!s)
        return n ? -1 : 0;
    for (uint32_t at = 0; at + size <= n; at += (uint32_t)size) {
        uint8_t rec[HS_FRAMEDATA_RECORD_SIZE];
        memcpy(rec, s + at, size);
        uint32_t rva = omap_rva(r, hs_le32(rec));
        if (!rva)
            continue;                /* code the image no longer has */
        memcpy(rec, &rva, 4);
        if (size == HS_FPO_RECORD_SIZE) {
            hs_fpo32_add_fpo(t, rec, size);   /* refused: a kernel (trap, task switch) frame */
            continue;
        }
        const char *program = name_at(r, hs_le32(rec + 20));
        if (!program)
            (*bad)++;
        else if (hs_fpo32_add_framedata(t, rec, size, program))
            (*bad)++;
    }
    if (n % size)
        (*bad)++;
    free(s);
    return 0;
}

int hs_pdb_frames(const hs_pdb *p, hs_fpo32 *t, char *err, size_t errlen)
{
    reader r = reader_of(p, err, errlen);
    dbi d;
    if (open_dbi(&r, &d))
        return -1;
    long bad = 0;
    int rc = -1;
    if (load_sections(&r, d.dbg))
        goto out;
    load_names(&r);
    if (add_frames(&r, d.dbg[DBG_FPO], HS_FPO_RECORD_SIZE, t, &bad) ||
        add_frames(&r, d.dbg[DBG_NEW_FPO], HS_FRAMEDATA_RECORD_SIZE, t, &bad))
        goto out;
    hs_fpo32_finish(t);
    if (bad) {
        fail(err, errlen, "corrupt PDB: %ld malformed frame data records", bad);
        goto out;
    }
    rc = 0;
out:
    free(d.data);
    free(r.sects);
    free(r.omap);
    free(r.names);
    return rc;
}
