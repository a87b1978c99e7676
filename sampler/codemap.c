/*
 * sampler/codemap.c - the target's code for the sampler (see codemap.h).
 */
#include "sampler/codemap.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hook/base/map.h"
#include "hook/base/search.h"
#include "hook/base/util.h"
#include "hook/pe/pe.h"

#define PAGE 4096u
#define MAX_PAGES 16384          /* 64 MB of cached target memory, then start over */
#define MAX_PDATA (1u << 22)

typedef struct page {
    uint64_t addr;
    bool ok;
    uint8_t data[PAGE];
} page;

typedef struct own_arena {
    uint64_t base;
    uint32_t size;
    uint32_t *table;             /* triples, sorted */
    size_t ntable;
} own_arena;

typedef struct desc_ent {
    uint64_t desc, entry;
} desc_ent;

struct hs_codemap {
    hs_mem_read_fn read;
    void *ctx;
    hs_image *images;
    size_t nimages, cap_images;
    size_t *live;                /* indices of loaded images, by base */
    size_t nlive;
    own_arena *arenas;           /* by base */
    size_t narenas;
    hs_own_slot *slots;          /* by lo */
    size_t nslots;
    desc_ent *descs;             /* by desc */
    size_t ndescs;
    uint64_t agent_lo, agent_hi;
    uint64_t wrap_begin, wrap_rsi, wrap_gone, wrap_end, wrap_ret;
    uint32_t tids[64];
    size_t ntids;
    int bits;                    /* the target's: 64, or 32 (hs_codemap_set_bits) */
    hs_pdb_frames_fn pdb_frames; /* hs_codemap_set_pdb_frames */
    void *pdb_frames_ctx;
    uint32_t quick_rva[8];       /* ntdll's system calls that never block (hs_codemap_set_quick) */
    size_t nquick;
    page **pages;
    size_t npages;
    hs_map page_index;
};

hs_codemap *hs_codemap_new(hs_mem_read_fn read, void *ctx)
{
    hs_codemap *m = hs_xcalloc(1, sizeof *m);
    m->read = read;
    m->ctx = ctx;
    m->bits = 64;
    return m;
}

void hs_codemap_set_bits(hs_codemap *m, int bits)
{
    m->bits = bits == 32 ? 32 : 64;
}

static void free_own(hs_codemap *m)
{
    for (size_t i = 0; i < m->narenas; i++)
        free(m->arenas[i].table);
    free(m->arenas);
    free(m->slots);
    free(m->descs);
    m->arenas = NULL;
    m->slots = NULL;
    m->descs = NULL;
    m->narenas = m->nslots = m->ndescs = 0;
}

void hs_codemap_flush(hs_codemap *m)
{
    for (size_t i = 0; i < m->npages; i++)
        free(m->pages[i]);
    free(m->pages);
    m->pages = NULL;
    m->npages = 0;
    hs_map_free(&m->page_index);
}

void hs_codemap_free(hs_codemap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nimages; i++) {
        free(m->images[i].path);
        free(m->images[i].pdata);
        hs_cfi32_free(m->images[i].cfi);
        hs_fpo32_free(m->images[i].fpo);
    }
    free(m->images);
    free(m->live);
    free_own(m);
    hs_codemap_flush(m);
    free(m);
}

void hs_owncode_free(hs_owncode *o)
{
    free(o->arenas);
    free(o->slots);
    for (size_t i = 0; i < o->nmodules; i++)
        free(o->modules[i].path);
    free(o->modules);
    o->arenas = NULL;
    o->slots = NULL;
    o->modules = NULL;
    o->narenas = o->nslots = o->nmodules = 0;
}

/* ---- memory ------------------------------------------------------------------- */

static const page *page_at(hs_codemap *m, uint64_t addr)
{
    uint64_t pa = addr & ~(uint64_t)(PAGE - 1);
    uint32_t i;
    if ((i = hs_map_get(&m->page_index, pa, 0)) != HS_MAP_NONE)
        return m->pages[i];
    if (m->npages == MAX_PAGES)
        hs_codemap_flush(m);
    page *pg = hs_xmalloc(sizeof *pg);
    pg->addr = pa;
    pg->ok = m->read(m->ctx, pa, pg->data, PAGE) == 0;
    m->pages = hs_xrealloc(m->pages, (m->npages + 1) * sizeof *m->pages);
    m->pages[m->npages] = pg;
    hs_map_xput(&m->page_index, pa, 0, (uint32_t)m->npages);
    m->npages++;
    return pg;
}

int hs_codemap_read(hs_codemap *m, uint64_t addr, void *buf, size_t len)
{
    uint8_t *out = buf;
    while (len) {
        const page *pg = page_at(m, addr);
        if (!pg->ok)
            return -1;
        size_t off = (size_t)(addr - pg->addr), n = PAGE - off;
        if (n > len)
            n = len;
        memcpy(out, pg->data + off, n);
        out += n;
        addr += n;
        len -= n;
    }
    return 0;
}

/* ---- images --------------------------------------------------------------------- */


static int cmp_triple(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Read `n` RUNTIME_FUNCTIONs at addr (directly, not through the cache)
 * and sort them. NULL if unreadable. */
static uint32_t *read_table(hs_codemap *m, uint64_t addr, size_t n)
{
    uint32_t *t = hs_xmalloc(n * 12 + 12);
    if (n && m->read(m->ctx, addr, t, n * 12) < 0) {
        free(t);
        return NULL;
    }
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = t[i * 3] >= t[(i - 1) * 3];
    if (!sorted)
        hs_sort(t, n, 12, cmp_triple, NULL);
    return t;
}

static int read_fn(void *ctx, uint64_t addr, void *buf, size_t len)
{
    const hs_codemap *m = ctx;
    return m->read(m->ctx, addr, buf, len);
}

/* The headers of the image at base: timestamp, SizeOfImage, .pdata. */
static int read_image(hs_codemap *m, hs_image *im)
{
    hs_pe pe;
    if (hs_pe_read_headers(&pe, read_fn, m, im->base) != HS_PE_OK)
        return -1;
    im->timestamp = pe.timestamp;
    if (!im->size)
        im->size = pe.size_of_image;
    uint32_t rva = pe.dir_rva[HS_DIR_EXCEPTION], size = pe.dir_size[HS_DIR_EXCEPTION];
    hs_pe_close(&pe);
    size_t n = size / 12;
    if (n > MAX_PDATA)
        n = MAX_PDATA;
    if (n && rva < im->size && size <= im->size - rva) {
        im->pdata = read_table(m, im->base + rva, n);
        im->npdata = im->pdata ? n : 0;
    }
    return 0;
}

static int cmp_live(const void *a, const void *b, void *ctx)
{
    const hs_codemap *m = ctx;
    uint64_t x = m->images[*(const size_t *)a].base, y = m->images[*(const size_t *)b].base;
    return x < y ? -1 : x > y;
}

static void index_live(hs_codemap *m)
{
    m->live = hs_xrealloc(m->live, (m->nimages + 1) * sizeof *m->live);
    m->nlive = 0;
    for (size_t i = 0; i < m->nimages; i++)
        if (!m->images[i].unloaded)
            m->live[m->nlive++] = i;
    hs_sort(m->live, m->nlive, sizeof *m->live, cmp_live, m);
}

hs_image *hs_codemap_add_image(hs_codemap *m, uint64_t base, uint32_t size, const char *path, bool agent)
{
    for (size_t i = 0; i < m->nimages; i++) {
        hs_image *im = &m->images[i];
        if (!im->unloaded && im->base == base && (im->size == size || !size)) {
            im->seen = true;
            im->agent |= agent;
            return im;
        }
    }
    hs_image im;
    memset(&im, 0, sizeof im);
    im.base = base;
    im.size = size;
    im.agent = agent;
    im.seen = true;
    if (read_image(m, &im) < 0) {
        free(im.pdata);
        return NULL;
    }
    im.path = hs_xstrdup(path ? path : "");
    /* another live image overlapping this one is gone */
    for (size_t i = 0; i < m->nimages; i++) {
        hs_image *o = &m->images[i];
        if (!o->unloaded && o->base < base + im.size && base < o->base + o->size)
            o->unloaded = true;
    }
    hs_xgrow(&m->images, &m->cap_images, m->nimages + 1, sizeof *m->images);
    m->images[m->nimages++] = im;
    index_live(m);
    return &m->images[m->nimages - 1];
}

void hs_codemap_set_frames(hs_codemap *m, hs_image *im, hs_cfi32 *cfi, hs_fpo32 *fpo)
{
    (void)m;
    hs_cfi32_free(im->cfi);
    hs_fpo32_free(im->fpo);
    im->cfi = cfi;
    im->fpo = fpo;
    im->frames_tried = true;
}

void hs_codemap_set_pdb_frames(hs_codemap *m, hs_pdb_frames_fn fn, void *ctx)
{
    m->pdb_frames = fn;
    m->pdb_frames_ctx = ctx;
}

hs_fpo32 *hs_codemap_pdb_frames(hs_codemap *m, const char *path)
{
    return m->pdb_frames ? m->pdb_frames(m->pdb_frames_ctx, path) : NULL;
}

void hs_codemap_begin_enum(hs_codemap *m)
{
    for (size_t i = 0; i < m->nimages; i++)
        m->images[i].seen = false;
}

void hs_codemap_sweep(hs_codemap *m)
{
    int changed = 0;
    for (size_t i = 0; i < m->nimages; i++) {
        if (!m->images[i].seen && !m->images[i].unloaded) {
            m->images[i].unloaded = true;
            changed = 1;
        }
    }
    if (changed) {
        index_live(m);
        hs_codemap_flush(m);
    }
}

size_t hs_codemap_images(const hs_codemap *m, const hs_image **out)
{
    *out = m->images;
    return m->nimages;
}

/* ---- hookscope's code -------------------------------------------------------------- */

static int cmp_slot(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    uint64_t x = ((const hs_own_slot *)a)->lo, y = ((const hs_own_slot *)b)->lo;
    return x < y ? -1 : x > y;
}

static int cmp_desc(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    uint64_t x = ((const desc_ent *)a)->desc, y = ((const desc_ent *)b)->desc;
    return x < y ? -1 : x > y;
}

static int cmp_arena(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    uint64_t x = ((const own_arena *)a)->base, y = ((const own_arena *)b)->base;
    return x < y ? -1 : x > y;
}

void hs_codemap_set_own(hs_codemap *m, const hs_owncode *own)
{
    free_own(m);
    m->agent_lo = own->agent_base;
    m->agent_hi = own->agent_base + own->agent_size;
    m->wrap_begin = own->wrap_begin;
    m->wrap_rsi = own->wrap_rsi;
    m->wrap_gone = own->wrap_gone;
    m->wrap_end = own->wrap_end;
    m->wrap_ret = own->wrap_ret;
    m->ntids = own->ntids < 64 ? own->ntids : 64;
    memcpy(m->tids, own->tids, m->ntids * sizeof *m->tids);
    m->arenas = hs_xcalloc(own->narenas ? own->narenas : 1, sizeof *m->arenas);
    for (size_t i = 0; i < own->narenas; i++) {
        own_arena *a = &m->arenas[m->narenas];
        a->base = own->arenas[i].base;
        a->size = own->arenas[i].size;
        a->table = own->arenas[i].ntable ? read_table(m, own->arenas[i].table, own->arenas[i].ntable) : NULL;
        a->ntable = a->table ? own->arenas[i].ntable : 0;
        m->narenas++;
    }
    hs_sort(m->arenas, m->narenas, sizeof *m->arenas, cmp_arena, NULL);
    m->slots = hs_xcalloc(own->nslots ? own->nslots : 1, sizeof *m->slots);
    memcpy(m->slots, own->slots, own->nslots * sizeof *m->slots);
    m->nslots = own->nslots;
    hs_sort(m->slots, m->nslots, sizeof *m->slots, cmp_slot, NULL);
    m->descs = hs_xcalloc(own->nslots ? own->nslots : 1, sizeof *m->descs);
    for (size_t i = 0; i < m->nslots; i++) {
        if (m->slots[i].desc) {
            m->descs[m->ndescs].desc = m->slots[i].desc;
            m->descs[m->ndescs++].entry = m->slots[i].entry;
        }
    }
    hs_sort(m->descs, m->ndescs, sizeof *m->descs, cmp_desc, NULL);
    /* stubs of a module hooked again at the same place are new code */
    hs_codemap_flush(m);
}

bool hs_codemap_own_thread(const hs_codemap *m, uint32_t tid)
{
    for (size_t i = 0; i < m->ntids; i++)
        if (m->tids[i] == tid)
            return true;
    return false;
}

/* A search of one of the sorted tables below for an address. */
typedef struct at_pc {
    const hs_codemap *m;
    uint64_t pc;
} at_pc;

static bool arena_not_after(const void *ctx, size_t i)
{
    const at_pc *q = ctx;
    return q->m->arenas[i].base <= q->pc;
}

static bool slot_not_after(const void *ctx, size_t i)
{
    const at_pc *q = ctx;
    return q->m->slots[i].lo <= q->pc;
}

static bool image_not_after(const void *ctx, size_t i)
{
    const at_pc *q = ctx;
    return q->m->images[q->m->live[i]].base <= q->pc;
}

static const own_arena *arena_of(const hs_codemap *m, uint64_t pc)
{
    at_pc q = { m, pc };
    size_t lo = hs_partition_point(m->narenas, &q, arena_not_after);
    if (!lo)
        return NULL;
    const own_arena *a = &m->arenas[lo - 1];
    return pc - a->base < a->size ? a : NULL;
}

static const hs_own_slot *slot_of(const hs_codemap *m, uint64_t pc)
{
    at_pc q = { m, pc };
    size_t lo = hs_partition_point(m->nslots, &q, slot_not_after);
    if (!lo)
        return NULL;
    const hs_own_slot *s = &m->slots[lo - 1];
    return pc < s->hi ? s : NULL;
}

static const hs_image *image_of(const hs_codemap *m, uint64_t pc)
{
    at_pc q = { m, pc };
    size_t lo = hs_partition_point(m->nlive, &q, image_not_after);
    if (!lo)
        return NULL;
    const hs_image *im = &m->images[m->live[lo - 1]];
    return pc - im->base < im->size ? im : NULL;
}

/* a system-call stub is at most this long (mov r10,rcx; mov eax,N; test; jne;
 * syscall; ret; int 2e; ret: 24 bytes) */
#define QUICK_STUB 32
/* and in i386 code the return address of its call into the kernel's side
 * is at most this far in (mov eax,N; mov edx,X; call edx: 12 bytes, the
 * stubs 16 apart; Windows 7's mov eax,N; mov ecx,N; lea edx,[esp+4];
 * call fs:[0C0h]: 21) */
#define QUICK_STUB32 24

static bool is_ntdll(const hs_image *im)
{
    return im && im->path && !strcasecmp(hs_basename(im->path), "ntdll.dll");
}

/* Is the i386 code before pc (c: the 7 bytes before it and the one at
 * it) a system-call stub's call into the kernel's side? */
static bool after_syscall32(const uint8_t c[8])
{
    static const uint8_t win7[7] = { 0x64, 0xFF, 0x15, 0xC0, 0x00, 0x00, 0x00 };   /* call fs:[0C0h] */
    return (c[5] == 0xFF && c[6] == 0xD2 && (c[7] == 0xC2 || c[7] == 0xC3)) || !memcmp(c, win7, sizeof win7);
}

bool hs_codemap_at_syscall(hs_codemap *m, uint64_t pc)
{
    uint8_t c[8];
    if (pc < 7 || !image_of(m, pc))
        return false;
    if (m->bits == 32) {
        if (hs_codemap_read(m, pc - 7, c, 8) < 0 || !after_syscall32(c))
            return false;
    } else {
        /* syscall ; ret  or  int 2e ; ret: the system-call stubs of ntdll
         * and win32u, where a thread blocked in the system stands */
        if (hs_codemap_read(m, pc - 2, c, 3) < 0 ||
            !(c[2] == 0xC3 && ((c[0] == 0x0F && c[1] == 0x05) || (c[0] == 0xCD && c[1] == 0x2E))))
            return false;
    }
    /* ...unless the call is one that never blocks (NtContinue: a thread
     * not yet started, or resuming after an exception or APC) */
    const hs_image *im = image_of(m, pc);
    if (m->nquick && is_ntdll(im))
        for (size_t i = 0; i < m->nquick; i++)
            if (pc - im->base - m->quick_rva[i] < (m->bits == 32 ? QUICK_STUB32 : QUICK_STUB))
                return false;
    return true;
}

void hs_codemap_set_quick(hs_codemap *m, const uint32_t *rvas, size_t n)
{
    m->nquick = n < 8 ? n : 8;
    memcpy(m->quick_rva, rvas, m->nquick * sizeof *rvas);
}

bool hs_codemap_is_own(const hs_codemap *m, uint64_t addr)
{
    return (addr >= m->agent_lo && addr < m->agent_hi) || arena_of(m, addr) != NULL;
}

/* ---- the unwinder's view ------------------------------------------------------------- */

static int lookup(void *ctx, uint64_t pc, hs_uw_entry *e)
{
    const hs_codemap *m = ctx;
    const own_arena *a = arena_of(m, pc);
    if (a) {
        const uint32_t *f = hs_pdata_find(a->table, a->ntable, (uint32_t)(pc - a->base));
        if (!f)
            return HS_UW_EMULATE;
        e->base = a->base;
        e->begin = f[0];
        e->end = f[1];
        e->unwind = f[2];
        return HS_UW_TABLE;
    }
    const hs_image *im = image_of(m, pc);
    if (!im)
        return HS_UW_UNKNOWN;
    const uint32_t *f = hs_pdata_find(im->pdata, im->npdata, (uint32_t)(pc - im->base));
    if (!f)
        return HS_UW_LEAF;
    e->base = im->base;
    e->begin = f[0];
    e->end = f[1];
    e->unwind = f[2];
    return HS_UW_TABLE;
}

static int env_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    return hs_codemap_read(ctx, addr, buf, len);
}

/* A cached page holds it all: point there. */
static const uint8_t *env_view(void *ctx, uint64_t addr, size_t len)
{
    hs_codemap *m = ctx;
    if ((addr & (PAGE - 1)) + len > PAGE)
        return NULL;
    const page *pg = page_at(m, addr);
    return pg->ok ? pg->data + (addr - pg->addr) : NULL;
}

hs_uw_env hs_codemap_env(hs_codemap *m)
{
    hs_uw_env env = { m, lookup, env_read, env_view };
    return env;
}

static bool is_code32(void *ctx, uint32_t addr)
{
    return image_of(ctx, addr) != NULL;
}

static int env_read32(void *ctx, uint32_t addr, void *buf, size_t len)
{
    return hs_codemap_read(ctx, addr, buf, len);
}

static int frame_data32(void *ctx, uint32_t pc, hs_uw32_frame_data *fd)
{
    const hs_image *im = image_of(ctx, pc);
    if (!im)
        return 0;
    uint32_t rva = (uint32_t)(pc - im->base), base = (uint32_t)im->base;
    return hs_fpo32_frame_data(im->fpo, rva, base, fd) || hs_cfi32_frame_data(im->cfi, rva, base, fd);
}

hs_uw32_env hs_codemap_env32(hs_codemap *m)
{
    hs_uw32_env env = { m, is_code32, env_read32, frame_data32, NULL, NULL, NULL };
    return env;
}

/* ---- attribution ------------------------------------------------------------------------ */

static bool desc_below(const void *ctx, size_t i)
{
    const at_pc *q = ctx;
    return q->m->descs[i].desc < q->pc;
}

static uint64_t desc_entry(const hs_codemap *m, uint64_t desc)
{
    at_pc q = { m, desc };
    size_t lo = hs_partition_point(m->ndescs, &q, desc_below);
    return lo < m->ndescs && m->descs[lo].desc == desc ? m->descs[lo].entry : 0;
}

bool hs_codemap_in_agent(const hs_codemap *m, uint64_t a)
{
    return a >= m->agent_lo && a < m->agent_hi;
}

/* A frame's address as the profile shows it: in a trampoline, the function
 * it serves (at its entry when it is the leaf, inside it as a return
 * address: a relocated call); any other address as it is. */
static uint64_t as_program(const hs_codemap *m, uint64_t a, bool leaf)
{
    if (!arena_of(m, a))
        return a;
    const hs_own_slot *s = slot_of(m, a);
    if (!s)
        return 0;
    return leaf ? s->entry : s->entry + 1;
}

uint32_t hs_codemap_attribute(const hs_codemap *m, const hs_uw_regs *leaf, uint64_t *frames, uint32_t n, int *attr)
{
    *attr = HS_ATTR_PROGRAM;
    if (!n)
        return 0;
    uint32_t from = 0;           /* the first frame kept */
    uint64_t served = 0;         /* hookscope's own work: the function it served, 0 none known */
    uint64_t a = frames[0];
    const hs_own_slot *slot = arena_of(m, a) ? slot_of(m, a) : NULL;
    if (slot && a < slot->tramp) {
        /* an entry stub or its slow path: counting a call to its function */
        *attr = HS_ATTR_HOOKSCOPE;
        served = slot->entry;
        from = 1;
    } else if (hs_codemap_in_agent(m, a)) {
        *attr = HS_ATTR_HOOKSCOPE;
        if (a >= m->wrap_begin && a < m->wrap_end) {
            /* the timing wrapper: the register that holds the timed
             * function's descriptor depends on where it is */
            uint64_t desc = !leaf ? 0 : a < m->wrap_rsi ? leaf->r[HS_RBP] : a < m->wrap_gone ? leaf->r[HS_RSI] : 0;
            served = desc ? desc_entry(m, desc) : 0;
        }
        from = 1;
    } else {
        /* the program's code, or code hookscope's probes called: the first
         * frame of hookscope's code above it says which (the wrapper's call
         * into the timed function is the program's) */
        for (uint32_t i = 1; i < n; i++) {
            if (hs_codemap_in_agent(m, frames[i]) && frames[i] != m->wrap_ret) {
                *attr = HS_ATTR_HOOKSCOPE;
                from = i + 1;
                break;
            }
            if (arena_of(m, frames[i]) && slot_of(m, frames[i]) && frames[i] < slot_of(m, frames[i])->tramp) {
                /* returns into a stub: a probe's callee */
                *attr = HS_ATTR_HOOKSCOPE;
                from = i;
                break;
            }
        }
    }
    uint32_t out = 0;
    if (served)
        frames[out++] = served;
    bool leaf_kept = out == 0;
    for (uint32_t i = from; i < n; i++) {
        uint64_t f = frames[i];
        if (hs_codemap_in_agent(m, f))
            continue;                                    /* the wrapper's frames, a probe's */
        if (arena_of(m, f) && slot_of(m, f) && f < slot_of(m, f)->tramp) {
            /* a return into a stub (from a probe): the function it serves */
            if (!out)
                frames[out++] = slot_of(m, f)->entry;
            continue;
        }
        uint64_t p = as_program(m, f, leaf_kept && out == 0);
        if (p)
            frames[out++] = p;
    }
    return out;
}
