/*
 * tests/unit/xrun.h - run a few x86 instructions natively and capture
 * the machine state where they stop (Linux only; used by the differential
 * tests of the relocator). Built as x86-64 code it runs x86-64 code; built
 * with -m32 (build/native32) it runs 32-bit code, with its own addresses
 * below 4 GB (XR_BITS says which) and fs as the Windows TEB.
 *
 * Fixed layout, the same for every run:
 *
 *   XR_CODE .. +128K   RWX, int3 everywhere except what the test puts
 *                      there; the entry under test is XR_A (the middle).
 *   XR_RD   .. +64K    RW data right after the code, for [rip+x] operands
 *   XR_STACK..+64K     the stack (rsp starts at XR_STACK+0x8000, [rsp] is
 *                      XR_RETPAD: a `ret` out of the code lands on int3)
 *   XR_SCRATCH..+64K   what the other general registers point into
 *   XR_TEB  .. +8K     gs base (Windows code reads gs:[0x30] etc.)
 *   XR_CALLPAD         `int3; ret` in the code region: records the return
 *                      address it was called with, then returns
 *   trampolines        64K RWX at XR_T_NEAR (+1 GB), XR_T_NEG (-1 GB),
 *                      XR_T_FAR (+12 GB: rel32 cannot reach the code)
 *
 * Memory is filled so that every pointer-sized word at address X holds X + 0x100, so
 * loaded values are usable pointers. A data access to an unmapped page
 * maps it (same fill) and retries, so real prologues that touch their
 * module's data run. A run ends at the first int3 outside XR_CALLPAD, an
 * instruction fetch from unmapped memory, any other fault, or a timeout.
 */
#ifndef HS_TEST_XRUN_H
#define HS_TEST_XRUN_H

#include <stddef.h>
#include <stdint.h>

#if defined(__i386__)
/* 32-bit code: everything below 4 GB, away from where Linux puts a 32-bit
 * PIE program (0x565xxxxx), its libraries and stack (0xf7..., 0xff...);
 * XR_T_FAR is reached from the code, and the code from it, only by the
 * wrap-around of the instruction pointer at 4 GB (more than 2 GB apart) */
#define XR_BITS     32
#define XR_NGPR     8            /* eax..edi */
#define XR_NVEC     8            /* xmm0..7 */
#define XR_A        0x41000000ull
#define XR_STACK    0x42000000ull
#define XR_SCRATCH  0x43000000ull
#define XR_TEB      0x45000000ull
#define XR_T_NEAR   (XR_A + 0x07000000ull)
#define XR_T_NEG    (XR_A - 0x08000000ull)
#define XR_T_FAR    0xC8000000ull
static inline uint64_t xr_moved(uint64_t a) { return a; }
#else
#define XR_BITS     64
#define XR_NGPR     16
#define XR_NVEC     16
/* AddressSanitizer keeps [0x8fff7000, 0x10007fff8000) for its shadow: its
 * build of the units puts the harness in high memory instead, everything
 * at the same distances, and the cases' addresses (written for XR_BASE 0)
 * move with it (xr_moved) */
#ifdef __SANITIZE_ADDRESS__
#define XR_BASE     0x500000000000ull
#else
#define XR_BASE     0ull
#endif
#define XR_A        (XR_BASE + 0x3000000000ull)
#define XR_STACK    (XR_BASE + 0x3100000000ull)
#define XR_SCRATCH  (XR_BASE + 0x3200000000ull)
#define XR_TEB      (XR_BASE + 0x3500000000ull)
#define XR_T_NEAR   (XR_A + 0x40000000ull)
#define XR_T_NEG    (XR_A - 0x40000000ull)
#define XR_T_FAR    (XR_A + 0x300000000ull)

/* An address of a case's table (made for XR_BASE 0) where the harness has it. */
static inline uint64_t xr_moved(uint64_t a)
{
    return a >= 0x2F00000000ull && a < 0x3600000000ull ? a + XR_BASE : a;
}
#endif

/* the same in both widths, around XR_A and of the same sizes */
#define XR_CODE     (XR_A - 0x10000)
#define XR_CODE_SZ  0x20000u
#define XR_RD       (XR_A + 0x10000)
#define XR_RD_SZ    0x10000u
#define XR_RETPAD   (XR_A - 0x8000)
#define XR_CALLPAD  (XR_A + 0x8000)
#define XR_STACK_SZ 0x10000u
#define XR_SCRATCH_SZ 0x10000u
#define XR_TEB_SZ   0x2000u
#define XR_T_SZ     0x10000u

/* The stack pointer at the entry: as after a call (x86-64: 16n+8), with
 * XR_RETPAD as the return address at it. */
#define XR_ENTRY_SP (XR_STACK + 0x8000 - XR_BITS / 8)

enum { XR_END_TRAP = 1, XR_END_FETCH, XR_END_FAULT, XR_END_ILL, XR_END_TIMEOUT, XR_END_OTHER };

#define XR_MAX_POKE 6

typedef struct xr_input {
    uint64_t gpr[16];        /* rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8..r15
                                (32-bit: the low halves of the first 8) */
    uint64_t flags;
    uint8_t vec[16][64];     /* zmm0..15 (as much as the CPU has; 32-bit: xmm0..7) */
    uint64_t kmask[8];       /* k0..k7 (k1..k7 loaded with AVX-512) */
    uint8_t x87[8][10];      /* 32-bit: st0..st7 loaded (80-bit values) */
    uint32_t mxcsr;          /* loaded (x86-64: with an empty x87 stack) */
    uint64_t zero_at;        /* a range cleared after memory is filled, before the pokes */
    uint32_t zero_len;
    int npoke;               /* pointer-sized words written after memory is filled */
    uint64_t poke_addr[XR_MAX_POKE], poke_val[XR_MAX_POKE];
} xr_input;

#define XR_MAX_DEMAND 16

typedef struct xr_result {
    int end;                 /* XR_END_* */
    uint64_t at;             /* where: the int3, the fetched address, the faulting insn */
    uint64_t fault_addr;
    uint64_t gpr[16];
    uint64_t flags;
    uint8_t vec[16][64];
    uint64_t kmask[8];
    uint8_t x87[8][10];      /* st0..st7 as the state holds them (physical order) */
    uint16_t fcw, fsw, ftw;  /* x87 control, status, abridged tag words */
    uint32_t mxcsr;
    int n_calls;             /* XR_CALLPAD visits, with the return address seen */
    uint64_t call_ret[4];
    int n_demand;            /* pages mapped on demand, with their final content */
    uint64_t demand_addr[XR_MAX_DEMAND];
    uint8_t *demand_data;    /* XR_MAX_DEMAND pages */
    uint8_t *rd, *stack, *scratch, *teb;   /* final contents */
} xr_result;

/* Map the regions and install the signal handlers. 0 or -1. */
int xr_init(void);
/* CPU features for vector tests. */
int xr_have_avx(void);
int xr_have_avx512(void);

/* Fill the code region with int3 (and XR_CALLPAD); clear a trampoline region. */
void xr_reset_code(void);
void xr_reset_tramp(uint64_t t);
/* Copy bytes into the code region / a trampoline region. */
void xr_put(uint64_t addr, const void *p, size_t n);

/* A default input: registers point into XR_SCRATCH, rsp = XR_STACK+0x8000,
 * flags from `variant` (0: arithmetic flags clear, 1: all set, 2: ZF|CF,
 * 3: SF|PF, then again). */
void xr_default_input(xr_input *in, int variant);

/* Run from `entry` with `in`. The result owns buffers: xr_result_free. */
int xr_run(uint64_t entry, const xr_input *in, xr_result *out);
void xr_result_free(xr_result *r);

#if defined(__i386__)
/* Point the calling thread's fs at [base, base + size) (a TLS entry of its
 * own in the GDT), as Windows points it at the thread's TEB. Returns the
 * selector, or 0. */
uint16_t xr_fs_segment(uint32_t base, uint32_t size);
#endif

/* Compare two results; 0 if equal, else writes the first difference. */
int xr_compare(const xr_result *a, const xr_result *b, int cmp_vec, char *why, size_t n);

#endif
