/*
 * agent/install.c - hook every function of one module.
 *
 * hs_install_module takes one module through these steps, each a function
 * over an install_ctx; a step that fails ends the install, and install_end
 * releases what the steps left.
 *  1. find the functions (open_image, add_module_record, find_functions,
 *     add_function_records): the injector's list (its function service,
 *     session.h: .pdata, exports, COFF symbols and the PDB's procedures,
 *     with the filters applied to the names the reports show), else from
 *     the image (.pdata, exports, and the COFF symbols of the file on disk
 *     when it matches the mapped image);
 *  2. analyze each (analyze_functions, with hook/), and record every
 *     function in the session, hooked or not, with the reason when not;
 *     solve the slots the timing wrappers need for tail jumps and size the
 *     stubs (size_stubs);
 *  3. write all stubs and trampolines into one arena chunk near the module
 *     (emit_stubs), then the module's state (build_mod_state) and the
 *     stubs' unwind info (register_arena);
 *  4. patch every entry under a single freeze of the other threads, one
 *     protection change per code section, moving any thread that stopped
 *     inside a patched window to the same instruction in the trampoline
 *     (patch_entries, patch.c; the modules hooked when the agent starts are
 *     patched together, under one freeze, by hs_modules_init).
 *
 * Nothing is allocated from the heap between freeze and thaw.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "hook/base/vec.h"
#include "hook/engine/filter.h"
#include "hook/engine/names.h"
#include "hook/pe/eh_frame.h"
#include "hook/pe/functions.h"
#include "hook/pe/pe.h"
#include "hook/pe/symbols.h"
#include "hook/pe/unwind_info.h"

/* from the C++ runtime, linked statically into the agent */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

typedef struct file_view {
    HANDLE file, mapping;
    const uint8_t *data;
    size_t size;
} file_view;

static int map_file(const wchar_t *path, file_view *fv)
{
    memset(fv, 0, sizeof *fv);
    fv->file = CreateFileW(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_DELETE, NULL,
                           OPEN_EXISTING, 0, NULL);
    if (fv->file == INVALID_HANDLE_VALUE)
        return -1;
    LARGE_INTEGER sz;
    if (!GetFileSizeEx(fv->file, &sz) || sz.QuadPart == 0) {
        CloseHandle(fv->file);
        return -1;
    }
    fv->mapping = CreateFileMappingW(fv->file, NULL, PAGE_READONLY, 0, 0, NULL);
    if (fv->mapping)
        fv->data = MapViewOfFile(fv->mapping, FILE_MAP_READ, 0, 0, 0);
    if (!fv->data) {
        if (fv->mapping)
            CloseHandle(fv->mapping);
        CloseHandle(fv->file);
        return -1;
    }
    fv->size = (size_t)sz.QuadPart;
    return 0;
}

static void unmap_file(file_view *fv)
{
    if (fv->data) {
        UnmapViewOfFile(fv->data);
        CloseHandle(fv->mapping);
        CloseHandle(fv->file);
    }
    memset(fv, 0, sizeof *fv);
}

#define DESC_SPACE 32   /* hs_wrap_desc, rounded up */

/* Arena bytes for one function: its stub and trampoline (and descriptor). */
static size_t slot_size(const hs_plan *p, int wrapped)
{
    return ((hs_stub_size_max(p) + 15) & ~(size_t)15) + (wrapped ? DESC_SPACE : 0);
}

/* Is this code entered with a frame already set up (gcc's .cold parts,
 * which have .pdata entries of their own), not by a call? */
static int entered_with_frame(const hs_pe *pe, const hs_pe_func *f)
{
    hs_unwind u;
    return f->unwind_rva && hs_pe_unwind(pe, f->unwind_rva, &u) == 0 && hs_unwind_entered_with_frame(&u);
}

/* Can this function get the timing wrapper, or only an entry probe (and
 * why)? Needs a full analysis (HS_ANALYZE_FULL). The rule for its tail
 * jumps (HS_WRAP_TAIL_JUMP) is applied after, to the whole module. */
static int wrap_reason(const hs_plan *p, const hs_pe *pe, const hs_pe_func *f, int named, int dwarf_eh)
{
    if (named == HS_FNE_RETURNS_TWICE)
        return HS_WRAP_RETURNS_TWICE;
    if (named == HS_FNE_STACK_PROBE || (p->flags & HS_FN_STACK_PROBE))
        return HS_WRAP_STACK_PROBE;
#if HS_AGENT_X86
    /* the 32-bit return probe copies nothing and needs no unwind data
     * (time32.S); a jump back to the entry would enter it twice; a C++
     * exception that DWARF-2 unwinding carries out of the function would
     * meet the return thunk where the caller's address should be, find no
     * frame there and end the program (the image names a personality
     * routine: g++'s code; its functions are where such exceptions pass) */
    (void)pe, (void)f;
    if (dwarf_eh)
        return HS_WRAP_DWARF_EH;
    return (p->flags & HS_FN_BRANCH_TO_ENTRY) ? HS_WRAP_LOOPS_TO_ENTRY : HS_WRAP_OK;
#else
    (void)dwarf_eh;
#endif
    /* without unwind data a function must be a flat leaf (rsp never moves,
     * no call): it runs with its return address, the wrapper's, at [rsp],
     * and an unwind from it goes straight to the wrapper's frame */
    if ((!(f->src & HS_SRC_PDATA) || !f->unwind_rva) && (p->flags & HS_FN_MOVES_RSP))
        return HS_WRAP_NO_UNWIND;
    if (entered_with_frame(pe, f))
        return HS_WRAP_NOT_A_FUNCTION;
    if (p->flags & HS_FN_VARARGS)
        return HS_WRAP_VARARGS;
    if (p->flags & HS_FN_ARGS_ADDRESS)
        return HS_WRAP_ARGS_ADDRESS;
    if (p->flags & HS_FN_BRANCH_TO_ENTRY)
        return HS_WRAP_LOOPS_TO_ENTRY;
    if (p->stack_arg_slots < 0)
        return HS_WRAP_UNKNOWN_ARGS;
    if (p->stack_arg_slots > HS_WRAP_MAX_SLOTS)
        return HS_WRAP_STACK_ARGS;
    return HS_WRAP_OK;
}

/* What a function's name says (HS_FNE_RETURNS_TWICE, HS_FNE_STACK_PROBE,
 * or 0): from the injector's list, else from the image's symbols. */
static int by_name(const uint8_t *fnflags, size_t i, const hs_pe_symtab *syms, uint32_t rva)
{
    if (fnflags)
        return fnflags[i] & (HS_FNE_RETURNS_TWICE | HS_FNE_STACK_PROBE);
    const char *nm = hs_pe_symtab_at(syms, rva);
    return hs_name_returns_twice(nm) ? HS_FNE_RETURNS_TWICE : hs_name_stack_probe(nm) ? HS_FNE_STACK_PROBE : 0;
}

/* The injector's list of the functions of module record mi, as hook/pe.h
 * entries and their HS_FNE_* flags (malloc'd); -1 when it has none. */
static int listed_functions(uint32_t mi, hs_pe_func **funcs, uint8_t **fnflags, size_t *n)
{
    int32_t count = hs_session_request_functions(mi);
    if (count < 0)
        return -1;
    const hs_fn_entry *list = hs_session_fn_list(g_hs.view);
    *funcs = calloc(count ? (size_t)count : 1, sizeof **funcs);
    *fnflags = calloc(count ? (size_t)count : 1, 1);
    if (!*funcs || !*fnflags) {
        free(*funcs);
        free(*fnflags);
        *funcs = NULL;
        *fnflags = NULL;
        return -1;
    }
    for (int32_t i = 0; i < count; i++) {
        hs_pe_func *f = &(*funcs)[i];
        f->rva = list[i].rva;
        f->size = list[i].size;
        f->gap_before = list[i].gap_before;
        f->gap_after = list[i].gap_after;
        f->unwind_rva = list[i].unwind_rva;
        f->src = list[i].src;
        (*fnflags)[i] = list[i].flags;
    }
    *n = (size_t)count;
    return 0;
}

static hs_mod_state *add_mod_state(void)
{
    if (g_hs.n_mods == g_hs.cap_mods) {
        size_t nc = g_hs.cap_mods ? g_hs.cap_mods * 2 : 16;
        hs_mod_state *nm = realloc(g_hs.mods, nc * sizeof *nm);
        if (!nm)
            return NULL;
        g_hs.mods = nm;
        g_hs.cap_mods = nc;
    }
    hs_mod_state *m = &g_hs.mods[g_hs.n_mods++];
    memset(m, 0, sizeof *m);
    return m;
}

void hs_install_mark(hs_mod_state *ms, int patched)
{
    hs_module_rec *mrec = hs_session_module(g_hs.view, ms->index);
    if (patched < 0) {
        mrec->flags |= HS_MOD_FAILED;
        mrec->status = (int32_t)GetLastError();
        return;
    }
    for (size_t j = 0; j < ms->n_hooks; j++) {
        const hs_hooked *hk = &ms->hooks[j];
        hs_func_rec *rec = hs_session_func(g_hs.view, hk->fidx);
        rec->flags |= HS_FUNC_HOOKED;
        rec->patch_kind = (uint8_t)hk->plan.kind;
        if (hk->plan.kind < 8)
            mrec->patch_counts[hk->plan.kind]++;
    }
    mrec->n_hooked = (uint32_t)ms->n_hooks;
    mrec->flags |= HS_MOD_HOOKED;
}

/* What installing one module carries from step to step: set by the steps
 * in their order, released by install_end whichever step stopped. */
typedef struct install_ctx {
    /* the module */
    HMODULE module;
    const wchar_t *path;
    uint64_t base;
    uint32_t image_size;
    int timed;                 /* --time: full analysis, timing wrappers */
    int dwarf_eh;              /* (32-bit, timed) its C++ exceptions unwind by return address */
    hs_pe pe;                  /* the mapped image (with its file's COFF symbols) */
    file_view fv;              /* the file on disk */
    /* its records in the session */
    uint32_t mi;
    hs_module_rec *mrec;
    uint32_t first;            /* the record of its first function */
    /* its functions, fragments included */
    hs_pe_func *funcs;
    uint8_t *fnflags;          /* HS_FNE_* per function of the injector's list, NULL: none */
    size_t nfuncs;
    size_t n;                  /* function records: the functions that are not fragments */
    /* the names the filters and the name rules read */
    hs_pe_symtab syms;         /* the image's, when the injector gave no list */
    hs_filter flt;
    char modname[HS_PATH_LEN];
    /* per function record k: what analysis and sizing find */
    hs_image_view view;        /* the inputs' read_ctx: jump tables, code around a function */
    hs_func_list list;         /* the inputs' part_ctx */
    hs_func_input *inputs;
    hs_plan *plans;
    uint32_t *unwind;
    hs_insn *windows;          /* the window instructions of every plan made, as analyzed */
    size_t n_windows, cap_windows;
    uint32_t *window_at;       /* record k's first in windows */
    uint8_t *entry_only;       /* HS_WRAP_* (timed) */
    int32_t *nslots;           /* slots a wrapped copy needs for its tail jumps */
    hs_tail *tails;            /* timed: the module's tail jumps */
    /* the arena chunk: stubs and trampolines, then their unwind info */
    uint8_t *arena;
    size_t stubs_total, total;
    int arena_writable;
    hs_hooked *hooks;          /* nh of them; the module state takes them */
    size_t nh;
    hs_mod_state *ms;
} install_ctx;

/* Start an empty context for module at path: its base and image size. */
static void install_begin(install_ctx *c, HMODULE module, const wchar_t *path)
{
    memset(c, 0, sizeof *c);
    c->module = module;
    c->path = path;
    c->base = (uint64_t)(uintptr_t)module;
    c->image_size = hs_pe_mapped_size(module, NULL);
    c->timed = (g_hs.hdr->options & HS_OPT_TIME) != 0;
}

/* Open the module's PE. */
static int open_image(install_ctx *c)
{
    if (hs_pe_open_mapped(&c->pe, c->module, c->image_size) != HS_PE_OK) {
        hs_agent_fail(ERROR_BAD_EXE_FORMAT, "cannot hook %ls: its PE headers cannot be read", hs_file_name(c->path));
        return -1;
    }
    /* an image of the other width is mapped as data: no code of it runs here */
    const int bits = HS_AGENT_X86 ? 32 : 64;
    if (c->pe.bits != bits) {
        hs_agent_fail(ERROR_BAD_EXE_FORMAT, "cannot hook %ls: it is a %d-bit image", hs_file_name(c->path),
                      c->pe.bits);
        hs_pe_close(&c->pe);
        return -1;
    }
    return 0;
}

/* Give the PE its file's COFF symbols if that file is what was mapped
 * (the same time stamp and SizeOfImage in the headers, which a file has
 * as its mapping does): only needed without the injector's list. */
static void attach_file(install_ctx *c)
{
    uint32_t timestamp = 0;
    if (map_file(c->path, &c->fv) == 0 && c->fv.size >= HS_PE_HEADER_PAGE &&
        hs_pe_mapped_size(c->fv.data, &timestamp) == c->pe.size_of_image && timestamp == c->pe.timestamp)
        hs_pe_attach_file(&c->pe, c->fv.data, c->fv.size);
}

/* Add the module's record to the session. */
static int add_module_record(install_ctx *c, uint32_t flags, int pattern)
{
    c->mi = hs_session_add_module(c->path, c->base, c->image_size, flags, pattern);
    if (c->mi == UINT32_MAX) {
        hs_agent_fail(ERROR_NOT_ENOUGH_MEMORY, "cannot hook %ls: the module table is full", hs_file_name(c->path));
        return -1;
    }
    c->mrec = hs_session_module(g_hs.view, c->mi);
    c->mrec->timestamp = c->pe.timestamp;
    return 0;
}

/* List the module's functions: the injector's list, else the image's
 * (with its file's COFF symbols). */
static int find_functions(install_ctx *c)
{
    const bool listed = listed_functions(c->mi, &c->funcs, &c->fnflags, &c->nfuncs) == 0;
    if (!listed) {
        attach_file(c);
        if (hs_pe_functions(&c->pe, &c->funcs, &c->nfuncs) < 0)
            return -1;
    }
#if HS_AGENT_X86
    if (listed)   /* (its frame data came with the list) */
        hs_frames32_keep(c->base, c->image_size);
#endif
    for (size_t i = 0; i < c->nfuncs; i++)
        if (!(c->funcs[i].src & HS_SRC_FRAGMENT))
            c->n++;
    return 0;
}

/* Add a session record for each function that is not a fragment. */
static int add_function_records(install_ctx *c)
{
    const hs_session_header *h = g_hs.hdr;
    if (hs_session_add_functions((uint32_t)c->n, &c->first) < 0) {
        c->mrec->flags |= HS_MOD_FAILED;
        c->mrec->status = ERROR_NOT_ENOUGH_MEMORY;
        hs_agent_fail(ERROR_NOT_ENOUGH_MEMORY,
                      "cannot hook %ls: its %zu functions do not fit in the function table "
                      "(%u of %u used); raise --max-functions",
                      hs_file_name(c->path), c->n, h->n_functions, h->max_functions);
        return -1;
    }
    c->mrec->first_func = c->first;
    c->mrec->n_funcs = (uint32_t)c->n;
    return 0;
}

/* Allocate what the later steps keep per function record. */
static int alloc_per_function(install_ctx *c)
{
    const size_t n = c->n ? c->n : 1;
    c->hooks = calloc(n, sizeof *c->hooks);
    if (!c->hooks)
        return -1;
    c->plans = calloc(n, sizeof *c->plans);
    c->inputs = calloc(n, sizeof *c->inputs);
    c->entry_only = calloc(n, 1);
    c->window_at = calloc(n, sizeof *c->window_at);
    c->unwind = calloc(n, sizeof *c->unwind);
    c->nslots = calloc(n, sizeof *c->nslots);
    /* (tail jumps matter to the x64 wrapper's copy of the arguments only) */
    const int tails = c->timed && !HS_AGENT_X86;
    c->tails = tails ? hs_tail_new() : NULL;
    if (!c->plans || !c->inputs || !c->entry_only || !c->window_at || !c->unwind || !c->nslots ||
        (tails && !c->tails))
        return -1;
    return 0;
}

/* Free what the analysis keeps per function record (safe to call twice). */
static void free_analysis(install_ctx *c)
{
    free(c->plans);
    free(c->inputs);
    free(c->entry_only);
    free(c->windows);
    free(c->window_at);
    free(c->unwind);
    free(c->nslots);
    hs_tail_free(c->tails);
    c->plans = NULL;
    c->inputs = NULL;
    c->entry_only = NULL;
    c->windows = NULL;
    c->n_windows = c->cap_windows = 0;
    c->window_at = NULL;
    c->unwind = NULL;
    c->nslots = NULL;
    c->tails = NULL;
}

/* Load what the filters and name rules read: image symbols, session filters, file name. */
static void load_names(install_ctx *c)
{
    const hs_session_header *h = g_hs.hdr;
    if (!c->fnflags && (c->timed || h->n_filters))
        hs_pe_symbols(&c->pe, &c->syms);
    for (uint32_t i = 0; i < h->n_filters && i < HS_FILTER_MAX; i++) {
        c->flt.pattern[c->flt.n] = h->filters[i];
        c->flt.exclude[c->flt.n++] = (h->filter_exclude >> i) & 1;
    }
    if (!WideCharToMultiByte(CP_UTF8, 0, hs_file_name(c->path), -1, c->modname, sizeof c->modname, NULL, NULL))
        c->modname[0] = 0;
}

/* Fill function i's session record k and its analysis input. */
static void describe_function(install_ctx *c, size_t i, size_t k)
{
    const hs_pe_func *f = &c->funcs[i];
    hs_func_rec *rec = hs_session_func(g_hs.view, c->first + (uint32_t)k);
    rec->module = c->mi;
    rec->rva = f->rva;
    rec->size = f->size;
    hs_func_input *in = &c->inputs[k];
    c->unwind[k] = f->unwind_rva;
    in->code = (const uint8_t *)c->module + f->rva;
    in->addr = c->base + f->rva;
    in->size = f->size;
    in->gap_before = f->gap_before;
    in->gap_after = f->gap_after;
    in->image_lo = c->base;
    in->image_hi = c->base + c->image_size;
    in->read = hs_image_read;
    in->read_ctx = &c->view;
    in->part_at = hs_pe_part_at;
    in->part_ctx = &c->list;
}

/* Say why function i is left out (the agent's own code, a filter), or HS_OK. */
static hs_skip_reason filter_reason(install_ctx *c, size_t i)
{
    if (c->module == g_hs.self)
        return HS_SKIP_AGENT;
    if (c->fnflags)
        return (c->fnflags[i] & HS_FNE_ADMIT) ? HS_OK : HS_SKIP_FILTERED;
    if (!c->flt.n)
        return HS_OK;
    const uint32_t rva = c->funcs[i].rva;
    const char *raw = hs_pe_symtab_at(&c->syms, rva);
    int st = 0;
    char *und = raw && raw[0] == '_' && raw[1] == 'Z' ? __cxa_demangle(raw, NULL, NULL, &st) : NULL;
    hs_skip_reason r = hs_filter_admits(&c->flt, c->modname, raw, st == 0 ? und : NULL, rva) ? HS_OK : HS_SKIP_FILTERED;
    free(und);
    return r;
}

/* Keep record k's window as analyzed, for its trampoline (when there is
 * no memory for it, the trampoline decodes the window again). */
static void keep_window(install_ctx *c, size_t k)
{
    const hs_insn *w = hs_analyze_window(g_hs.engine);
    const size_t n = c->plans[k].n_insns;
    c->window_at[k] = UINT32_MAX;
    if (c->n_windows + n > UINT32_MAX || hs_grow(&c->windows, &c->cap_windows, c->n_windows + n, sizeof *w) < 0)
        return;
    memcpy(c->windows + c->n_windows, w, n * sizeof *w);
    c->window_at[k] = (uint32_t)c->n_windows;
    c->n_windows += n;
}

/* Analyze function i (record k) and note its tail jumps (timed). */
static hs_skip_reason analyze_function(install_ctx *c, size_t i, size_t k)
{
    const hs_pe_func *f = &c->funcs[i];
    hs_skip_reason r = hs_analyze(g_hs.engine, &c->inputs[k], c->timed ? HS_ANALYZE_FULL : 0, &c->plans[k]);
    if (r == HS_OK)
        keep_window(c, k);
    if (c->tails) {
        /* every function analyzed, hooked or not, may be jumped to */
        int32_t own = hs_tail_own(&c->plans[k]);
        if (by_name(c->fnflags, i, &c->syms, f->rva) || entered_with_frame(&c->pe, f))
            own = HS_TAIL_NEVER;
        const hs_exit *x;
        size_t nx = hs_analyze_exits(g_hs.engine, &x);
        hs_tail_add(c->tails, c->inputs[k].addr, own, x, nx);
    }
    return r;
}

/* Record each function in the session; analyze the admitted ones (plan, tail jumps, wrap). */
static void analyze_functions(install_ctx *c)
{
    load_names(c);
    /* jump tables and the code around a function are read from the image */
    c->view = (hs_image_view){ &c->pe, c->base };
    if (HS_AGENT_X86 && c->timed) {
        /* (.eh_frame is a long section name: the file's string table says
         * which section it is) */
        if (!c->pe.file)
            attach_file(c);
        c->dwarf_eh = hs_pe_eh_frame_personality(&c->pe);
    }
    c->list = (hs_func_list){ c->funcs, c->nfuncs, c->base };
    size_t k = 0;
    for (size_t i = 0; i < c->nfuncs; i++) {
        if (c->funcs[i].src & HS_SRC_FRAGMENT)
            continue;
        describe_function(c, i, k);
        hs_skip_reason r = filter_reason(c, i);
        if (r == HS_OK && !hs_pe_func_bounded(&c->pe, &c->funcs[i]))
            r = HS_SKIP_BOUNDS;
        if (r == HS_OK)
            r = analyze_function(c, i, k);
        if (r != HS_OK)
            c->plans[k].reason = r;
        else if (c->timed)
            c->entry_only[k] = (uint8_t)wrap_reason(&c->plans[k], &c->pe, &c->funcs[i],
                                                    by_name(c->fnflags, i, &c->syms, c->funcs[i].rva),
                                                    c->dwarf_eh);
        k++;
    }
    hs_pe_symtab_free(&c->syms);
    if (c->flt.matched)
        InterlockedOr((volatile LONG *)&g_hs.hdr->filter_matched, (LONG)c->flt.matched);
}

/* Solve the slots wrapped copies need for tail jumps (else entry probe only); size the stubs. */
static void size_stubs(install_ctx *c)
{
    if (c->tails)
        hs_tail_solve_module(c->tails, c->base);
    for (size_t k = 0; k < c->n; k++) {
        if (c->plans[k].reason != HS_OK)
            continue;
        if (c->timed && c->entry_only[k] == HS_WRAP_OK && !HS_AGENT_X86) {
            int32_t need = c->tails ? hs_tail_need(c->tails, c->inputs[k].addr) : HS_TAIL_NEVER;
            if (need == HS_TAIL_WIDE)
                c->nslots[k] = HS_WRAP_MAX_SLOTS;   /* the widest copy, bounded by the stack base */
            else if (need < 0 || need > HS_WRAP_MAX_SLOTS)
                c->entry_only[k] = HS_WRAP_TAIL_JUMP;
            else
                c->nslots[k] = need;
        }
        c->total += slot_size(&c->plans[k], c->timed && c->entry_only[k] == HS_WRAP_OK);
    }
    hs_tail_free(c->tails);
    c->tails = NULL;
}

/* Emit record k's stub, trampoline (descriptor) at arena offset *used, and patch; HS_OK: hooked. */
static hs_skip_reason emit_function(install_ctx *c, size_t k, hs_func_rec *rec, size_t *used)
{
    const hs_session_header *h = g_hs.hdr;
    const int wrap = c->timed && c->entry_only[k] == HS_WRAP_OK;
    const size_t cap = slot_size(&c->plans[k], wrap);
    hs_hooked *hk = &c->hooks[c->nh];
    uint8_t *slot = c->arena + *used;
    uint8_t *at = slot;
    hs_wrap_desc *desc = NULL;
    hs_skip_reason why = HS_OK;
    memset(hk, 0, sizeof *hk);
    if (wrap) {
        /* the descriptor first, then the stub */
        desc = (hs_wrap_desc *)at;
        desc->fidx = c->first + (uint32_t)k;
        desc->time_rel = (h->region_time_off - h->region_counters_off) +
                         (uint64_t)desc->fidx * sizeof(hs_time_rec);
        desc->nslots = c->nslots[k] < 4 ? 4 : (uint32_t)c->nslots[k];
        hk->desc = (uint64_t)(uintptr_t)desc;
        at += DESC_SPACE;
    }
    const hs_insn *window = c->window_at[k] != UINT32_MAX ? c->windows + c->window_at[k] : NULL;
    size_t len = hs_stub_emit(at, (uint64_t)(uintptr_t)at, cap - (size_t)(at - slot),
                              c->first + (uint32_t)k, &c->inputs[k], &c->plans[k], window, hk, &why);
    if (!len)
        return why == HS_OK ? HS_SKIP_NO_ARENA : why;
    /* packed at the stub's real length (16-aligned), not its worst case:
     * hot stubs share cache lines and pages */
    *used += (size_t)(at - slot) + ((len + 15) & ~(size_t)15);
    if (desc)
        desc->tramp = hk->tramp;
    if (hs_emit_patch(&c->inputs[k], &c->plans[k], hk->stub, hk->patch) != 0)
        return HS_SKIP_OUT_OF_RANGE;
    hk->unwind_rva = c->unwind[k];
    rec->slot_off = (uint32_t)(slot - c->arena);
    rec->slot_len = (uint16_t)((size_t)(at - slot) + len);
    rec->tramp_off = (uint16_t)(hk->tramp - (uint64_t)(uintptr_t)slot);
    rec->entry_only = c->entry_only[k];
    if (c->timed && c->entry_only[k] < 16)
        c->mrec->entry_only_counts[c->entry_only[k]]++;
    if (wrap)
        rec->flags |= HS_FUNC_WRAPPED;
    c->nh++;
    return why;
}

/* Emit all stubs into one arena chunk near the module; record each one's place or skip reason. */
static void emit_stubs(install_ctx *c)
{
    c->stubs_total = c->total;
    if (c->total)
        c->total += hs_unwind_space(c->n);
    c->arena = c->total ? hs_arena_alloc(&g_hs.arena, c->base, c->base + c->image_size, c->total) : NULL;
    if (c->arena) {
        hs_arena_protect(&g_hs.arena, 1);
        c->arena_writable = 1;
    }
    size_t used = 0;
    for (size_t k = 0; k < c->n; k++) {
        hs_func_rec *rec = hs_session_func(g_hs.view, c->first + (uint32_t)k);
        hs_skip_reason why = c->plans[k].reason;
        if (why == HS_OK && !c->arena)
            why = HS_SKIP_NO_ARENA;
        if (why == HS_OK)
            why = emit_function(c, k, rec, &used);
        if (why != HS_OK) {
            rec->skip_reason = (uint8_t)why;
            if (why < 32)
                c->mrec->skip_counts[why]++;
        }
    }
}

/* Build the module's state (hooks, code ranges); it takes over the hooks. */
static int build_mod_state(install_ctx *c)
{
    hs_mod_state *ms = add_mod_state();
    if (!ms)
        return -1;
    ms->index = c->mi;
    ms->base = c->base;
    ms->size = c->image_size;
    ms->hooks = c->hooks;
    ms->n_hooks = c->nh;
    c->hooks = NULL;
    for (int s = 0; s < c->pe.nsections && ms->n_ranges < HS_MAX_CODE_RANGES; s++) {
        if (c->pe.sections[s].chars & (HS_SCN_EXEC | HS_SCN_CODE)) {
            ms->range_lo[ms->n_ranges] = c->base + c->pe.sections[s].rva;
            ms->range_hi[ms->n_ranges] = c->base + c->pe.sections[s].rva + c->pe.sections[s].vsize;
            ms->n_ranges++;
        }
    }
    c->ms = ms;
    return 0;
}

/* Register the stubs' unwind info, record the arena chunk in the session, make it executable. */
static void register_arena(install_ctx *c)
{
    if (!c->arena)
        return;
    /* after the stubs (a failure only costs exact stack walks through
     * hookscope's own code) */
    hs_unwind_register(c->ms, &c->pe, c->arena + c->stubs_total, c->total - c->stubs_total,
                       (uint64_t)(uintptr_t)c->arena);
    c->mrec->arena_base = (uint64_t)(uintptr_t)c->arena;
    c->mrec->arena_size = (uint32_t)c->total;
    hs_arena_protect(&g_hs.arena, 0);
    c->arena_writable = 0;
    FlushInstructionCache(GetCurrentProcess(), c->arena, c->total);
}

/* Patch now, or leave it to hs_modules_init's one freeze for the first pass's modules. */
static void patch_entries(install_ctx *c)
{
    if (!g_hs.defer_patch)
        hs_install_mark(c->ms, hs_patch_module(c->ms, 1));
}

/* The single cleanup path: release whatever the steps left, after any of them. */
static void install_end(install_ctx *c)
{
    if (c->arena_writable)
        hs_arena_protect(&g_hs.arena, 0);
    free_analysis(c);
    free(c->hooks);
    free(c->funcs);
    free(c->fnflags);
    unmap_file(&c->fv);
    hs_pe_close(&c->pe);
}

/* Add the ticks since *t to step `step`'s sum; *t becomes now. */
static void step_done(uint64_t *t, int step)
{
    uint64_t now = hs_rdtsc();
    g_hs.hdr->install_step_ticks[step] += now - *t;
    *t = now;
}

int hs_install_module(HMODULE module, const wchar_t *path, uint32_t flags, int pattern)
{
    const uint64_t t0 = hs_rdtsc();
    uint64_t t = t0;
    install_ctx c;
    int rc = -1;
    install_begin(&c, module, path);
    if (open_image(&c) < 0 || add_module_record(&c, flags, pattern) < 0)
        goto out;
    step_done(&t, HS_STEP_OPEN);
    if (find_functions(&c) < 0)
        goto out;
    step_done(&t, HS_STEP_LIST);
    if (add_function_records(&c) < 0 || alloc_per_function(&c) < 0)
        goto out;
    step_done(&t, HS_STEP_RECORDS);
    analyze_functions(&c);
    step_done(&t, HS_STEP_ANALYZE);
    size_stubs(&c);
    step_done(&t, HS_STEP_SIZE);
    emit_stubs(&c);
    free_analysis(&c);
    step_done(&t, HS_STEP_EMIT);
    if (build_mod_state(&c) < 0)
        goto out;
    register_arena(&c);
    step_done(&t, HS_STEP_UNWIND);
    c.mrec->install_ticks = t - t0;
    g_hs.hdr->install_ticks_total += c.mrec->install_ticks;
    patch_entries(&c);
    step_done(&t, HS_STEP_PATCH);
    rc = 0;
out:
    install_end(&c);
    return rc;
}
