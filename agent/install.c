/*
 * agent/install.c - hook every function of one module.
 *
 *  1. find the functions: the injector's list (its function service,
 *     session.h: .pdata, exports, COFF symbols and the PDB's procedures,
 *     with the filters applied to the names the reports show), else from
 *     the image (.pdata, exports, and the COFF symbols of the file on disk
 *     when it matches the mapped image);
 *  2. analyze each (hook/), and record every function in the session,
 *     hooked or not, with the reason when not;
 *  3. write all stubs and trampolines into one arena chunk near the module;
 *  4. patch every entry under a single freeze of the other threads, one
 *     protection change per code section, moving any thread that stopped
 *     inside a patched window to the same instruction in the trampoline
 *     (patch.c; the modules hooked when the agent starts are patched
 *     together, under one freeze, by hs_modules_init).
 *
 * Nothing is allocated from the heap between freeze and thaw.
 */
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "filter.h"
#include "names.h"
#include "pe.h"

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
static int wrap_reason(const hs_plan *p, const hs_pe *pe, const hs_pe_func *f, int named)
{
    if (named == HS_FNE_RETURNS_TWICE)
        return HS_WRAP_RETURNS_TWICE;
    if (named == HS_FNE_STACK_PROBE || (p->flags & HS_FN_STACK_PROBE))
        return HS_WRAP_STACK_PROBE;
    if (!(f->src & HS_SRC_PDATA) || !f->unwind_rva)
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

int hs_install_module(HMODULE module, const wchar_t *path, uint32_t flags, int pattern)
{
    const uint64_t t0 = hs_rdtsc();
    const uint64_t base = (uint64_t)(uintptr_t)module;
    const IMAGE_DOS_HEADER *dos = (const IMAGE_DOS_HEADER *)module;
    const IMAGE_NT_HEADERS64 *nt = (const IMAGE_NT_HEADERS64 *)((const char *)module + dos->e_lfanew);
    const uint32_t image_size = nt->OptionalHeader.SizeOfImage;
    hs_session_header *h = g_hs.hdr;
    int rc = -1;

    hs_pe pe;
    if (hs_pe_open_mapped(&pe, module, image_size) != HS_PE_OK) {
        hs_agent_fail(ERROR_BAD_EXE_FORMAT, "cannot hook %ls: its PE headers cannot be read", hs_file_name(path));
        return -1;
    }
    file_view fv;
    if (map_file(path, &fv) == 0) {
        hs_pe file_pe;
        /* use the file's COFF symbols only if it is the file that was mapped */
        if (hs_pe_load_file(&file_pe, fv.data, fv.size) == HS_PE_OK) {
            if (file_pe.timestamp == pe.timestamp && file_pe.size_of_image == pe.size_of_image)
                hs_pe_attach_file(&pe, fv.data, fv.size);
            hs_pe_close(&file_pe);
        }
    }

    hs_pe_func *funcs = NULL;
    uint8_t *fnflags = NULL;   /* HS_FNE_* per function of the injector's list, NULL: none */
    size_t nfuncs = 0;
    hs_hooked *hooks = NULL;

    uint32_t mi = hs_session_add_module(path, base, image_size, flags, pattern);
    if (mi == UINT32_MAX) {
        hs_agent_fail(ERROR_NOT_ENOUGH_MEMORY, "cannot hook %ls: the module table is full", hs_file_name(path));
        goto out;
    }
    hs_module_rec *mrec = hs_session_module(g_hs.view, mi);
    mrec->timestamp = pe.timestamp;
    if (listed_functions(mi, &funcs, &fnflags, &nfuncs) < 0 && hs_pe_functions(&pe, &funcs, &nfuncs) < 0)
        goto out;

    size_t n = 0;
    for (size_t i = 0; i < nfuncs; i++)
        if (!(funcs[i].src & HS_SRC_FRAGMENT))
            n++;

    uint32_t first;
    if (hs_session_add_functions((uint32_t)n, &first) < 0) {
        mrec->flags |= HS_MOD_FAILED;
        mrec->status = ERROR_NOT_ENOUGH_MEMORY;
        hs_agent_fail(ERROR_NOT_ENOUGH_MEMORY,
                      "cannot hook %ls: its %zu functions do not fit in the function table "
                      "(%u of %u used); raise --max-functions",
                      hs_file_name(path), n, h->n_functions, h->max_functions);
        goto out;
    }
    mrec->first_func = first;
    mrec->n_funcs = (uint32_t)n;

    hooks = calloc(n ? n : 1, sizeof *hooks);
    if (!hooks)
        goto out;

    /* analyze */
    const int is_self = module == g_hs.self;
    const int timed = (h->options & HS_OPT_TIME) != 0;
    unsigned opts = timed ? HS_ANALYZE_FULL : 0;
    hs_plan *plans = calloc(n ? n : 1, sizeof *plans);
    hs_func_input *inputs = calloc(n ? n : 1, sizeof *inputs);
    uint8_t *entry_only = calloc(n ? n : 1, 1);
    uint32_t *unwind = calloc(n ? n : 1, sizeof *unwind);
    int32_t *nslots = calloc(n ? n : 1, sizeof *nslots);
    hs_tail *tails = timed ? hs_tail_new() : NULL;
    if (!plans || !inputs || !entry_only || !unwind || !nslots || (timed && !tails)) {
        free(plans);
        free(inputs);
        free(entry_only);
        free(unwind);
        free(nslots);
        hs_tail_free(tails);
        goto out;
    }
    hs_pe_symtab syms = { 0 };
    if (!fnflags && (timed || h->n_filters))
        hs_pe_symbols(&pe, &syms);
    hs_filter flt;
    memset(&flt, 0, sizeof flt);
    for (uint32_t i = 0; i < h->n_filters && i < HS_FILTER_MAX; i++) {
        flt.pattern[flt.n] = h->filters[i];
        flt.exclude[flt.n++] = (h->filter_exclude >> i) & 1;
    }
    /* jump tables and the code around a function are read from the image */
    hs_image_view view = { &pe, base };
    hs_func_list list = { funcs, nfuncs, base };
    char modname[HS_PATH_LEN];
    if (!WideCharToMultiByte(CP_UTF8, 0, hs_file_name(path), -1, modname, sizeof modname, NULL, NULL))
        modname[0] = 0;
    size_t total = 0, k = 0;
    for (size_t i = 0; i < nfuncs; i++) {
        const hs_pe_func *f = &funcs[i];
        if (f->src & HS_SRC_FRAGMENT)
            continue;
        uint32_t fidx = first + (uint32_t)k;
        hs_func_rec *rec = hs_session_func(g_hs.view, fidx);
        rec->module = mi;
        rec->rva = f->rva;
        rec->size = f->size;
        hs_func_input *in = &inputs[k];
        unwind[k] = f->unwind_rva;
        in->code = (const uint8_t *)module + f->rva;
        in->addr = base + f->rva;
        in->size = f->size;
        in->gap_before = f->gap_before;
        in->gap_after = f->gap_after;
        in->image_lo = base;
        in->image_hi = base + image_size;
        in->read = hs_image_read;
        in->read_ctx = &view;
        in->part_at = hs_pe_part_at;
        in->part_ctx = &list;
        hs_skip_reason r = HS_OK;
        if (is_self)
            r = HS_SKIP_AGENT;
        else if (fnflags) {
            if (!(fnflags[i] & HS_FNE_ADMIT))
                r = HS_SKIP_FILTERED;
        } else if (flt.n) {
            const char *raw = hs_pe_symtab_at(&syms, f->rva);
            int st = 0;
            char *und = raw && raw[0] == '_' && raw[1] == 'Z' ? __cxa_demangle(raw, NULL, NULL, &st) : NULL;
            if (!hs_filter_admits(&flt, modname, raw, st == 0 ? und : NULL, f->rva))
                r = HS_SKIP_FILTERED;
            free(und);
        }
        if (r == HS_OK) {
            r = hs_analyze(g_hs.engine, in, opts, &plans[k]);
            if (tails) {
                /* every function analyzed, hooked or not, may be jumped to */
                int32_t own = hs_tail_own(&plans[k]);
                if (by_name(fnflags, i, &syms, f->rva) || entered_with_frame(&pe, f))
                    own = -1;
                const hs_exit *x;
                size_t nx = hs_analyze_exits(g_hs.engine, &x);
                hs_tail_add(tails, in->addr, own, x, nx);
            }
        }
        if (r == HS_OK) {
            if (timed)
                entry_only[k] = (uint8_t)wrap_reason(&plans[k], &pe, f, by_name(fnflags, i, &syms, f->rva));
        } else {
            plans[k].reason = r;
        }
        k++;
    }
    hs_pe_symtab_free(&syms);
    /* the slots each timed function's copy must hold for its tail jumps */
    if (tails)
        hs_tail_solve_module(tails, base);
    for (k = 0; k < n; k++) {
        if (plans[k].reason != HS_OK)
            continue;
        if (timed && entry_only[k] == HS_WRAP_OK) {
            int32_t need = tails ? hs_tail_need(tails, inputs[k].addr) : -1;
            if (need < 0 || need > HS_WRAP_MAX_SLOTS)
                entry_only[k] = HS_WRAP_TAIL_JUMP;
            else
                nslots[k] = need;
        }
        total += slot_size(&plans[k], timed && entry_only[k] == HS_WRAP_OK);
    }
    hs_tail_free(tails);
    if (flt.matched)
        InterlockedOr((volatile LONG *)&h->filter_matched, (LONG)flt.matched);

    /* stubs and trampolines, then their unwind info */
    size_t stubs_total = total;
    if (total)
        total += hs_unwind_space(n);
    uint8_t *arena = total ? hs_arena_alloc(&g_hs.arena, base, base + image_size, total) : NULL;
    size_t nh = 0;
    if (arena)
        hs_arena_protect(&g_hs.arena, 1);
    size_t used = 0;
    for (k = 0; k < n; k++) {
        hs_func_rec *rec = hs_session_func(g_hs.view, first + (uint32_t)k);
        hs_skip_reason why = plans[k].reason;
        if (why == HS_OK && !arena)
            why = HS_SKIP_NO_ARENA;
        if (why == HS_OK) {
            const int wrap = timed && entry_only[k] == HS_WRAP_OK;
            size_t cap = slot_size(&plans[k], wrap);
            uint8_t *slot = arena + used;
            uint8_t *at = slot;
            hs_wrap_desc *desc = NULL;
            memset(&hooks[nh], 0, sizeof hooks[nh]);
            if (wrap) {
                /* the descriptor first, then the stub */
                desc = (hs_wrap_desc *)at;
                desc->fidx = first + (uint32_t)k;
                desc->time_rel = (h->region_time_off - h->region_counters_off) +
                                 (uint64_t)desc->fidx * sizeof(hs_time_rec);
                desc->nslots = nslots[k] < 4 ? 4 : (uint32_t)nslots[k];
                hooks[nh].desc = (uint64_t)(uintptr_t)desc;
                at += DESC_SPACE;
            }
            size_t len = hs_stub_emit(at, (uint64_t)(uintptr_t)at, cap - (size_t)(at - (arena + used)),
                                      first + (uint32_t)k, &inputs[k], &plans[k], &hooks[nh], &why);
            if (len) {
                /* packed at the stub's real length (16-aligned), not its
                 * worst case: hot stubs share cache lines and pages */
                used += (size_t)(at - (arena + used)) + ((len + 15) & ~(size_t)15);
                if (desc)
                    desc->tramp = hooks[nh].tramp;
                if (hs_emit_patch(&inputs[k], &plans[k], hooks[nh].stub, hooks[nh].patch) == 0) {
                    hooks[nh].unwind_rva = unwind[k];
                    rec->slot_off = (uint32_t)(slot - arena);
                    rec->slot_len = (uint16_t)((size_t)(at - slot) + len);
                    rec->tramp_off = (uint16_t)(hooks[nh].tramp - (uint64_t)(uintptr_t)slot);
                    rec->entry_only = entry_only[k];
                    if (timed && entry_only[k] < 16)
                        mrec->entry_only_counts[entry_only[k]]++;
                    if (wrap)
                        rec->flags |= HS_FUNC_WRAPPED;
                    nh++;
                } else {
                    why = HS_SKIP_OUT_OF_RANGE;
                }
            } else if (why == HS_OK) {
                why = HS_SKIP_NO_ARENA;
            }
        }
        if (why != HS_OK) {
            rec->skip_reason = (uint8_t)why;
            if (why < 32)
                mrec->skip_counts[why]++;
        }
    }
    free(plans);
    free(inputs);
    free(entry_only);
    free(unwind);
    free(nslots);

    hs_mod_state *ms = add_mod_state();
    if (!ms) {
        if (arena)
            hs_arena_protect(&g_hs.arena, 0);
        goto out;
    }
    ms->index = mi;
    ms->base = base;
    ms->size = image_size;
    ms->hooks = hooks;
    ms->n_hooks = nh;
    hooks = NULL;   /* owned by the module state now */
    for (int s = 0; s < pe.nsections && ms->n_ranges < HS_MAX_CODE_RANGES; s++) {
        if (pe.sections[s].chars & (HS_SCN_EXEC | HS_SCN_CODE)) {
            ms->range_lo[ms->n_ranges] = base + pe.sections[s].rva;
            ms->range_hi[ms->n_ranges] = base + pe.sections[s].rva + pe.sections[s].vsize;
            ms->n_ranges++;
        }
    }

    if (arena) {
        /* after the stubs: their unwind info (a failure only costs exact
         * stack walks through hookscope's own code) */
        hs_unwind_register(ms, &pe, arena + stubs_total, total - stubs_total, (uint64_t)(uintptr_t)arena);
        mrec->arena_base = (uint64_t)(uintptr_t)arena;
        mrec->arena_size = (uint32_t)total;
        hs_arena_protect(&g_hs.arena, 0);
        FlushInstructionCache(GetCurrentProcess(), arena, total);
    }

    mrec->install_ticks = hs_rdtsc() - t0;
    h->install_ticks_total += mrec->install_ticks;
    /* patch now, or with the other modules of the first pass (one freeze) */
    if (!g_hs.defer_patch)
        hs_install_mark(ms, hs_patch_module(ms, 1));
    rc = 0;
out:
    free(hooks);
    free(funcs);
    free(fnflags);
    unmap_file(&fv);
    hs_pe_close(&pe);
    return rc;
}
