/*
 * hook/pe/functions.h - the functions of an image: from .pdata (non-chained
 * entries), exports into executable sections, COFF function symbols and,
 * where given, the procedures of the debug information (exact extents).
 */
#ifndef HOOKSCOPE_PE_FUNCTIONS_H
#define HOOKSCOPE_PE_FUNCTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "hook/pe/pe.h"

/* Functions, from .pdata (non-chained entries), an i386 image's .eh_frame
 * (eh_frame.h) and hot-patchable entries, exports into executable
 * sections and COFF function symbols; sorted by rva, unique. */
enum {
    HS_SRC_PDATA = 1, HS_SRC_EXPORT = 2, HS_SRC_SYMBOL = 4,
    HS_SRC_FRAGMENT = 8, /* chained .pdata entry: part of another function, never hooked */
    HS_SRC_DEBUG = 16,   /* a procedure of the debug information (PDB): exact extent */
    HS_SRC_EHFRAME = 32, /* an FDE of .eh_frame (i386 gcc builds): exact extent */
    HS_SRC_CALL = 64,    /* a call's or tail jump's target found by decoding (hook/engine/calls.h):
                            a start only */
    HS_SRC_HOTPATCH = 128, /* an i386 hot-patchable entry (5 padding bytes, then `mov edi,edi;
                              push ebp; mov ebp,esp`, as MSVC's /hotpatch and system DLLs
                              have it): a start only */
};
typedef struct hs_pe_func {
    uint32_t rva, size;
    uint32_t unwind_rva;       /* UNWIND_INFO of the .pdata entry, 0 if none */
    uint32_t gap_before, gap_after; /* bytes to the neighbouring code or section edge */
    uint16_t src;              /* HS_SRC_* */
} hs_pe_func;

/* The functions of one image running at `base`, as hs_pe_functions gives
 * them, and a hs_func_input.part_at over them (ctx: a hs_func_list). */
typedef struct hs_func_list {
    const hs_pe_func *f;
    size_t n;
    uint64_t base;
} hs_func_list;
int hs_pe_part_at(void *ctx, uint64_t addr, uint64_t *lo, uint64_t *hi);

/* Are f's bounds known well enough to hook it? Always in an x64 image
 * (.pdata, or the next start where a leaf function has none, as the
 * engine's analysis expects); in an i386 one an exact extent (a debug
 * procedure, an .eh_frame FDE), or an import thunk (`jmp dword ptr
 * [iat]`, its one instruction its whole extent): a function known only by
 * its start otherwise (a call's target, a hot-patch entry, a symbol or
 * export bounded by the next start) is skipped as HS_SKIP_BOUNDS, never
 * guessed. `pe` laid out by rva (a file loaded, or a module mapped). */
int hs_pe_func_bounded(const hs_pe *pe, const hs_pe_func *f);

/* Fills a malloc'd array (free with free()). Fragments are included with
 * HS_SRC_FRAGMENT so that callers can see what surrounds a function. */
int hs_pe_functions(const hs_pe *pe, hs_pe_func **out, size_t *count);

/* The same, with the procedures of the image's debug information (exact
 * extents, leaf functions without .pdata included): a procedure's extent
 * wins over .pdata's (which can cover data after the code, e.g. a jump
 * table), and export or COFF entries inside it are dropped. */
typedef struct hs_pe_extent {
    uint32_t rva, size;
} hs_pe_extent;
int hs_pe_functions_ex(const hs_pe *pe, const hs_pe_extent *procs, size_t nprocs, hs_pe_func **out,
                       size_t *count);
/* The same, with the starts of functions found by decoding the others'
 * calls (HS_SRC_CALL), each bounded by the next start. */
int hs_pe_functions_calls(const hs_pe *pe, const hs_pe_extent *procs, size_t nprocs, const uint32_t *calls,
                          size_t ncalls, hs_pe_func **out, size_t *count);

#endif
