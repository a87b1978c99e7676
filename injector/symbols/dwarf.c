/*
 * injector/symbols/dwarf.c - DWARF 2-5 line tables of a PE image (see dwarf.h).
 * Opcodes and header layouts as in the DWARF 5 standard, section 6.2; unit
 * headers and forms as in sections 7.5 and 7.22.
 */
#include "injector/symbols/dwarf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook/base/bytes.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- sections ------------------------------------------------------------------- */

typedef struct sections {
    hs_cur line, line_str, str, info, abbrev;
} sections;

static void find_sections(const hs_pe *pe, sections *sec)
{
    memset(sec, 0, sizeof *sec);
    for (int i = 0; i < pe->nsections; i++) {
        const hs_pe_section *s = &pe->sections[i];
        const char *n = hs_pe_section_name(pe, s);
        hs_cur *c = NULL;
        if (!n)
            continue;
        if (!strcmp(n, ".debug_line"))
            c = &sec->line;
        else if (!strcmp(n, ".debug_line_str"))
            c = &sec->line_str;
        else if (!strcmp(n, ".debug_str"))
            c = &sec->str;
        else if (!strcmp(n, ".debug_info"))
            c = &sec->info;
        else if (!strcmp(n, ".debug_abbrev"))
            c = &sec->abbrev;
        if (!c)
            continue;
        uint32_t len = s->vsize < s->raw_size || !s->raw_size ? s->vsize : s->raw_size;
        const uint8_t *p = hs_pe_ptr(pe, s->rva, len);
        if (p) {
            c->p = p;
            c->len = len;
        }
    }
}

static const char *str_at(const hs_cur *sec, uint64_t off)
{
    if (!sec->p || off >= sec->len || !memchr(sec->p + off, 0, sec->len - (size_t)off))
        return NULL;
    return (const char *)sec->p + off;
}

/* ---- compilation directories from .debug_info ------------------------------------ */

enum {
    DW_FORM_addr = 0x01, DW_FORM_block2 = 0x03, DW_FORM_block4 = 0x04, DW_FORM_data2 = 0x05,
    DW_FORM_data4 = 0x06, DW_FORM_data8 = 0x07, DW_FORM_string = 0x08, DW_FORM_block = 0x09,
    DW_FORM_block1 = 0x0a, DW_FORM_data1 = 0x0b, DW_FORM_flag = 0x0c, DW_FORM_sdata = 0x0d,
    DW_FORM_strp = 0x0e, DW_FORM_udata = 0x0f, DW_FORM_ref_addr = 0x10, DW_FORM_ref1 = 0x11,
    DW_FORM_ref2 = 0x12, DW_FORM_ref4 = 0x13, DW_FORM_ref8 = 0x14, DW_FORM_ref_udata = 0x15,
    DW_FORM_indirect = 0x16, DW_FORM_sec_offset = 0x17, DW_FORM_exprloc = 0x18,
    DW_FORM_flag_present = 0x19, DW_FORM_strx = 0x1a, DW_FORM_addrx = 0x1b,
    DW_FORM_ref_sup4 = 0x1c, DW_FORM_strp_sup = 0x1d, DW_FORM_data16 = 0x1e,
    DW_FORM_line_strp = 0x1f, DW_FORM_ref_sig8 = 0x20, DW_FORM_implicit_const = 0x21,
    DW_FORM_loclistx = 0x22, DW_FORM_rnglistx = 0x23, DW_FORM_ref_sup8 = 0x24,
    DW_FORM_strx1 = 0x25, DW_FORM_strx2 = 0x26, DW_FORM_strx3 = 0x27, DW_FORM_strx4 = 0x28,
    DW_FORM_addrx1 = 0x29, DW_FORM_addrx2 = 0x2a, DW_FORM_addrx3 = 0x2b, DW_FORM_addrx4 = 0x2c,
    DW_FORM_GNU_addr_index = 0x1f01, DW_FORM_GNU_str_index = 0x1f02,
    DW_FORM_GNU_ref_alt = 0x1f20, DW_FORM_GNU_strp_alt = 0x1f21,
};
enum { DW_AT_stmt_list = 0x10, DW_AT_comp_dir = 0x1b };

typedef struct form_val {
    uint64_t u;
    const char *s;          /* for string forms read here */
} form_val;

/* Read (or skip) one attribute value. 0, or -1 for a form this reader does
 * not know (its size is then unknown). */
static int read_form(hs_cur *c, uint64_t form, int offsz, int addrsz, int version,
                     const sections *sec, form_val *v)
{
    v->u = 0;
    v->s = NULL;
    switch (form) {
    case DW_FORM_addr: v->u = hs_cur_un(c, addrsz); break;
    case DW_FORM_block2: hs_cur_skip(c, hs_cur_un(c, 2)); break;
    case DW_FORM_block4: hs_cur_skip(c, hs_cur_un(c, 4)); break;
    case DW_FORM_data2: case DW_FORM_ref2: case DW_FORM_strx2: case DW_FORM_addrx2:
        v->u = hs_cur_un(c, 2); break;
    case DW_FORM_data4: case DW_FORM_ref4: case DW_FORM_ref_sup4: case DW_FORM_strx4:
    case DW_FORM_addrx4:
        v->u = hs_cur_un(c, 4); break;
    case DW_FORM_data8: case DW_FORM_ref8: case DW_FORM_ref_sig8: case DW_FORM_ref_sup8:
        v->u = hs_cur_un(c, 8); break;
    case DW_FORM_data16: hs_cur_skip(c, 16); break;
    case DW_FORM_string: v->s = hs_cur_cstr(c); break;
    case DW_FORM_block: case DW_FORM_exprloc: hs_cur_skip(c, hs_cur_uleb(c)); break;
    case DW_FORM_block1: hs_cur_skip(c, hs_cur_un(c, 1)); break;
    case DW_FORM_data1: case DW_FORM_ref1: case DW_FORM_flag: case DW_FORM_strx1:
    case DW_FORM_addrx1:
        v->u = hs_cur_un(c, 1); break;
    case DW_FORM_strx3: case DW_FORM_addrx3: v->u = hs_cur_un(c, 3); break;
    case DW_FORM_sdata: v->u = (uint64_t)hs_cur_sleb(c); break;
    case DW_FORM_udata: case DW_FORM_ref_udata: case DW_FORM_strx: case DW_FORM_addrx:
    case DW_FORM_loclistx: case DW_FORM_rnglistx: case DW_FORM_GNU_addr_index:
    case DW_FORM_GNU_str_index:
        v->u = hs_cur_uleb(c); break;
    case DW_FORM_strp: v->u = hs_cur_un(c, offsz); v->s = str_at(&sec->str, v->u); break;
    case DW_FORM_line_strp: v->u = hs_cur_un(c, offsz); v->s = str_at(&sec->line_str, v->u); break;
    case DW_FORM_sec_offset: case DW_FORM_strp_sup: case DW_FORM_GNU_ref_alt:
    case DW_FORM_GNU_strp_alt:
        v->u = hs_cur_un(c, offsz); break;
    case DW_FORM_ref_addr: v->u = hs_cur_un(c, version <= 2 ? addrsz : offsz); break;
    case DW_FORM_flag_present: case DW_FORM_implicit_const: break;
    case DW_FORM_indirect: {
        uint64_t f = hs_cur_uleb(c);
        if (f == DW_FORM_indirect || c->bad)
            return -1;
        return read_form(c, f, offsz, addrsz, version, sec, v);
    }
    default:
        return -1;
    }
    return c->bad ? -1 : 0;
}

typedef struct comp_dir {
    uint64_t stmt_list;
    const char *dir;
} comp_dir;

typedef struct comp_dirs {
    comp_dir *v;
    size_t n, cap;
} comp_dirs;

/* The first DIE of every compile unit: its stmt_list and comp_dir. Units
 * this reader cannot decode are passed over (their lines then keep relative
 * names). */
static int read_comp_dirs(const sections *sec, comp_dirs *out)
{
    hs_cur info = sec->info;
    while (info.p && info.off + 11 <= info.len) {
        size_t start = info.off;
        uint64_t len = hs_cur_un(&info, 4);
        int offsz = 4;
        if (len == 0xffffffffu) {
            len = hs_cur_un(&info, 8);
            offsz = 8;
        }
        if (info.bad || len > info.len - info.off)
            break;
        hs_cur u = { info.p + info.off, (size_t)len, 0, 0 };
        info.off += (size_t)len;
        int version = (int)hs_cur_un(&u, 2), unit_type = 1, addrsz;
        uint64_t abbrev_off;
        if (version >= 5) {
            unit_type = (int)hs_cur_un(&u, 1);
            addrsz = (int)hs_cur_un(&u, 1);
            abbrev_off = hs_cur_un(&u, offsz);
            if (unit_type == 4 || unit_type == 5)      /* skeleton, split: dwo id */
                hs_cur_skip(&u, 8);
            else if (unit_type == 2 || unit_type == 6) /* type units */
                continue;
        } else {
            abbrev_off = hs_cur_un(&u, offsz);
            addrsz = (int)hs_cur_un(&u, 1);
        }
        (void)start;
        if (u.bad || version < 2 || version > 5 || (addrsz != 4 && addrsz != 8) ||
            abbrev_off >= sec->abbrev.len)
            continue;
        uint64_t code = hs_cur_uleb(&u);
        if (!code)
            continue;
        /* find the abbreviation */
        hs_cur ab = sec->abbrev;
        ab.off = (size_t)abbrev_off;
        int found = 0;
        while (!ab.bad && ab.off < ab.len) {
            uint64_t c = hs_cur_uleb(&ab);
            if (!c)
                break;
            hs_cur_uleb(&ab);                                 /* tag */
            hs_cur_un(&ab, 1);                               /* children */
            if (c == code) {
                found = 1;
                break;
            }
            for (;;) {
                uint64_t at = hs_cur_uleb(&ab), form = hs_cur_uleb(&ab);
                if (form == DW_FORM_implicit_const)
                    hs_cur_sleb(&ab);
                if ((!at && !form) || ab.bad)
                    break;
            }
        }
        if (!found)
            continue;
        uint64_t stmt = UINT64_MAX;
        const char *dir = NULL;
        for (;;) {
            uint64_t at = hs_cur_uleb(&ab), form = hs_cur_uleb(&ab);
            int64_t implicit = 0;
            if (form == DW_FORM_implicit_const)
                implicit = hs_cur_sleb(&ab);
            if ((!at && !form) || ab.bad)
                break;
            form_val v;
            if (read_form(&u, form, offsz, addrsz, version, sec, &v))
                break;
            if (form == DW_FORM_implicit_const)
                v.u = (uint64_t)implicit;
            if (at == DW_AT_stmt_list)
                stmt = v.u;
            else if (at == DW_AT_comp_dir)
                dir = v.s;
        }
        if (stmt == UINT64_MAX || !dir)
            continue;
        if (out->n == out->cap) {
            size_t nc = out->cap ? 2 * out->cap : 64;
            comp_dir *nv = realloc(out->v, nc * sizeof *nv);
            if (!nv)
                return -1;
            out->v = nv;
            out->cap = nc;
        }
        out->v[out->n].stmt_list = stmt;
        out->v[out->n].dir = dir;
        out->n++;
    }
    return 0;
}

/* ---- line programs ----------------------------------------------------------------- */

static int is_absolute(const char *p)
{
    return p[0] == '/' || p[0] == '\\' ||
           (((p[0] | 0x20) >= 'a' && (p[0] | 0x20) <= 'z') && p[1] == ':');
}

/* comp_dir/dir/name as binutils joins it: parts stop at the first absolute one
 * from the right */
static char *join_path(const char *comp, const char *dir, const char *name)
{
    const char *parts[3] = { comp, dir, name };
    int first = 0;
    for (int i = 2; i >= 0; i--)
        if (parts[i] && parts[i][0] && is_absolute(parts[i])) {
            first = i;
            break;
        }
    size_t n = 1;
    for (int i = first; i < 3; i++)
        n += parts[i] ? strlen(parts[i]) + 1 : 0;
    char *out = malloc(n);
    if (!out)
        return NULL;
    out[0] = 0;
    for (int i = first; i < 3; i++) {
        if (!parts[i] || !parts[i][0])
            continue;
        size_t l = strlen(out);
        if (l && out[l - 1] != '/' && out[l - 1] != '\\')
            strcat(out, "/");
        strcat(out, parts[i]);
    }
    return out;
}

typedef struct filetab {
    char **names;          /* joined paths */
    int *index;            /* linetab file index, -1 until first used */
    size_t n, cap;
} filetab;

static void filetab_free(filetab *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->names[i]);
    free(f->names);
    free(f->index);
    memset(f, 0, sizeof *f);
}

static int filetab_add(filetab *f, char *joined)
{
    if (!joined)
        return -1;
    if (f->n == f->cap) {
        size_t nc = f->cap ? 2 * f->cap : 32;
        char **nn = realloc(f->names, nc * sizeof *nn);
        if (!nn) {
            free(joined);
            return -1;
        }
        f->names = nn;
        int *ni = realloc(f->index, nc * sizeof *ni);
        if (!ni) {
            free(joined);
            return -1;
        }
        f->index = ni;
        f->cap = nc;
    }
    f->names[f->n] = joined;
    f->index[f->n] = -1;
    f->n++;
    return 0;
}

enum { DW_LNCT_path = 1, DW_LNCT_directory_index = 2 };

/* v5 entry formats: count, then (content type, form) pairs */
typedef struct entry_format {
    uint64_t type[16], form[16];
    int n;
} entry_format;

static int read_entry_format(hs_cur *c, entry_format *f)
{
    f->n = (int)hs_cur_un(c, 1);
    if (f->n > 16)
        return -1;
    for (int i = 0; i < f->n; i++) {
        f->type[i] = hs_cur_uleb(c);
        f->form[i] = hs_cur_uleb(c);
    }
    return c->bad ? -1 : 0;
}

typedef struct unit_ctx {
    const sections *sec;
    const char *comp_dir;
    hs_linetab *lines;
    uint64_t image_base;
    uint32_t image_size;
    char *err;
    size_t errlen;
    uint64_t unit_off;
} unit_ctx;

/* One line program. 0, or -1 (err set). */
static int read_unit(unit_ctx *x, hs_cur *u, int offsz)
{
    const sections *sec = x->sec;
    int version = (int)hs_cur_un(u, 2);
    int addrsz = 8;
    if (version < 2 || version > 5)
        return fail(x->err, x->errlen, "DWARF line table at 0x%llx: version %d",
                    (unsigned long long)x->unit_off, version);
    if (version >= 5) {
        addrsz = (int)hs_cur_un(u, 1);
        hs_cur_un(u, 1);                                      /* segment selector size */
    }
    uint64_t hlen = hs_cur_un(u, offsz);
    if (u->bad || hlen > u->len - u->off)
        return fail(x->err, x->errlen, "DWARF line table at 0x%llx: header length",
                    (unsigned long long)x->unit_off);
    size_t prog = u->off + (size_t)hlen;
    int min_inst = (int)hs_cur_un(u, 1);
    if (version >= 4)
        hs_cur_un(u, 1);                                      /* max ops per instruction */
    int default_stmt = (int)hs_cur_un(u, 1);
    int line_base = (int8_t)hs_cur_un(u, 1);
    int line_range = (int)hs_cur_un(u, 1);
    int opcode_base = (int)hs_cur_un(u, 1);
    uint8_t std_len[256] = { 0 };
    for (int i = 1; i < opcode_base; i++)
        std_len[i] = (uint8_t)hs_cur_un(u, 1);
    (void)default_stmt;
    if (u->bad || line_range == 0 || opcode_base == 0)
        return fail(x->err, x->errlen, "DWARF line table at 0x%llx: header",
                    (unsigned long long)x->unit_off);

    /* directories and files */
    char **dirs = NULL;
    size_t ndirs = 0, cap = 0;
    filetab files = { 0 };
    int rc = -1;
    if (version < 5) {
        dirs = malloc(sizeof *dirs);
        if (!dirs)
            goto oom;
        cap = 1;
        dirs[ndirs++] = NULL;                          /* 0: the compilation directory */
        for (;;) {
            const char *d = hs_cur_cstr(u);
            if (!d || !d[0])
                break;
            if (ndirs == cap) {
                char **nd = realloc(dirs, 2 * cap * sizeof *nd);
                if (!nd)
                    goto oom;
                dirs = nd;
                cap *= 2;
            }
            dirs[ndirs++] = (char *)d;
        }
        /* file 0 does not exist before v5: a placeholder keeps indexes 1-based */
        if (filetab_add(&files, join_path(NULL, NULL, "")))
            goto oom;
        for (;;) {
            const char *name = hs_cur_cstr(u);
            if (!name || !name[0])
                break;
            uint64_t di = hs_cur_uleb(u);
            hs_cur_uleb(u);
            hs_cur_uleb(u);
            const char *dir = di < ndirs ? dirs[di] : NULL;
            if (filetab_add(&files, join_path(x->comp_dir, dir, name)))
                goto oom;
        }
    } else {
        entry_format df, ff;
        if (read_entry_format(u, &df))
            goto bad;
        uint64_t nd = hs_cur_uleb(u);
        if (u->bad || nd > u->len)
            goto bad;
        dirs = calloc(nd ? (size_t)nd : 1, sizeof *dirs);
        if (!dirs)
            goto oom;
        ndirs = (size_t)nd;
        for (size_t i = 0; i < ndirs; i++)
            for (int k = 0; k < df.n; k++) {
                form_val v;
                if (read_form(u, df.form[k], offsz, addrsz, version, sec, &v))
                    goto bad;
                if (df.type[k] == DW_LNCT_path)
                    dirs[i] = (char *)v.s;
            }
        if (read_entry_format(u, &ff))
            goto bad;
        uint64_t nf = hs_cur_uleb(u);
        if (u->bad || nf > u->len)
            goto bad;
        for (uint64_t i = 0; i < nf; i++) {
            const char *name = NULL;
            uint64_t di = 0;
            for (int k = 0; k < ff.n; k++) {
                form_val v;
                if (read_form(u, ff.form[k], offsz, addrsz, version, sec, &v))
                    goto bad;
                if (ff.type[k] == DW_LNCT_path)
                    name = v.s;
                else if (ff.type[k] == DW_LNCT_directory_index)
                    di = v.u;
            }
            /* directory 0 is the compilation directory itself in v5 */
            const char *dir = di < ndirs ? dirs[di] : NULL;
            if (filetab_add(&files, join_path(di == 0 ? NULL : x->comp_dir, dir, name ? name : "")))
                goto oom;
        }
    }
    if (u->bad || prog > u->len)
        goto bad;
    u->off = prog;

    /* the program */
    {
        uint64_t addr = 0, file = 1, line = 1;
        size_t seq_first = x->lines->count;          /* rows of the current sequence */
        int in_image = 1;
        while (u->off < u->len) {
            uint8_t op = (uint8_t)hs_cur_un(u, 1);
            int row = 0, end_seq = 0;
            if (op >= opcode_base) {
                int adj = op - opcode_base;
                addr += (uint64_t)(adj / line_range) * (uint64_t)min_inst;
                line += (uint64_t)(int64_t)(line_base + adj % line_range);
                row = 1;
            } else if (op == 0) {
                uint64_t len = hs_cur_uleb(u);
                if (u->bad || len == 0 || len > u->len - u->off)
                    goto bad;
                size_t next = u->off + (size_t)len;
                uint8_t sub = (uint8_t)hs_cur_un(u, 1);
                if (sub == 1) {                                 /* end_sequence */
                    row = end_seq = 1;
                } else if (sub == 2) {                          /* set_address */
                    addr = hs_cur_un(u, (int)(len - 1 > 8 ? 8 : len - 1));
                    in_image = 1;
                } else if (sub == 3 && version < 5) {           /* define_file */
                    const char *name = hs_cur_cstr(u);
                    uint64_t di = hs_cur_uleb(u);
                    if (!name)
                        goto bad;
                    if (filetab_add(&files, join_path(x->comp_dir, di < ndirs ? dirs[di] : NULL,
                                                      name)))
                        goto oom;
                }
                u->off = next;
            } else {
                switch (op) {
                case 1: row = 1; break;                         /* copy */
                case 2: addr += hs_cur_uleb(u) * (uint64_t)min_inst; break;
                case 3: line += (uint64_t)hs_cur_sleb(u); break;
                case 4: file = hs_cur_uleb(u); break;
                case 8: addr += (uint64_t)((255 - opcode_base) / line_range) * (uint64_t)min_inst;
                    break;
                case 9: addr += hs_cur_un(u, 2); break;
                default:
                    for (int i = 0; i < std_len[op]; i++)
                        hs_cur_uleb(u);
                }
            }
            if (u->bad)
                goto bad;
            if (!row)
                continue;
            uint64_t rva = addr - x->image_base;
            if (addr < x->image_base || rva >= x->image_size)
                in_image = 0;                  /* a discarded function's sequence */
            if (end_seq) {
                /* close the sequence: its rows run up to here */
                for (size_t i = seq_first; in_image && i < x->lines->count; i++)
                    x->lines->lines[i].end = (uint32_t)rva;
                if (!in_image)
                    x->lines->count = seq_first;
                seq_first = x->lines->count;
                addr = 0;
                file = 1;
                line = 1;
                in_image = 1;
                continue;
            }
            if (!in_image || file >= files.n || line > UINT32_MAX)
                continue;
            if (files.index[file] < 0) {
                files.index[file] = hs_linetab_file(x->lines, files.names[file]);
                if (files.index[file] < 0)
                    goto oom;
            }
            if (hs_linetab_add(x->lines, (uint32_t)rva, UINT32_MAX, (uint32_t)line,
                               files.index[file]))
                goto oom;
        }
        /* a sequence without its end: its rows cover nothing */
        x->lines->count = seq_first;
    }
    rc = 0;
    goto out;
bad:
    fail(x->err, x->errlen, "DWARF line table at 0x%llx is malformed",
         (unsigned long long)x->unit_off);
    goto out;
oom:
    fail(x->err, x->errlen, "out of memory reading DWARF lines");
out:
    free(dirs);
    filetab_free(&files);
    return rc;
}

int hs_dwarf_lines(const hs_pe *pe, hs_linetab *lines, char *err, size_t errlen)
{
    sections sec;
    find_sections(pe, &sec);
    if (!sec.line.p) {
        hs_linetab_finish(lines);
        return 0;
    }
    comp_dirs cd = { 0 };
    if (read_comp_dirs(&sec, &cd)) {
        free(cd.v);
        return fail(err, errlen, "out of memory reading DWARF units");
    }
    unit_ctx x = { &sec, NULL, lines, pe->image_base, pe->size_of_image, err, errlen, 0 };
    hs_cur c = sec.line;
    int rc = 0;
    while (c.off + 4 <= c.len) {
        x.unit_off = c.off;
        uint64_t len = hs_cur_un(&c, 4);
        int offsz = 4;
        if (len == 0xffffffffu) {
            len = hs_cur_un(&c, 8);
            offsz = 8;
        }
        if (c.bad || len > c.len - c.off) {
            rc = fail(err, errlen, "DWARF line table at 0x%llx: length %llu past the section",
                      (unsigned long long)x.unit_off, (unsigned long long)len);
            break;
        }
        hs_cur u = { c.p + c.off, (size_t)len, 0, 0 };
        c.off += (size_t)len;
        x.comp_dir = NULL;
        for (size_t i = 0; i < cd.n; i++)
            if (cd.v[i].stmt_list == x.unit_off) {
                x.comp_dir = cd.v[i].dir;
                break;
            }
        if ((rc = read_unit(&x, &u, offsz)) != 0)
            break;
    }
    free(cd.v);
    hs_linetab_finish(lines);
    return rc;
}
