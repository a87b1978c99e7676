/*
 * tests/unit/xrun.c - native execution harness for the differential tests
 * (see xrun.h). Linux, built as x86-64 or as 32-bit (-m32) code: the two
 * differ in the entry thunk, the registers of a signal context and the
 * segment that holds the TEB (gs, or fs in 32-bit code).
 *
 * Entering: xr_enter (below, in assembly) loads the vector registers, the
 * flags and the general registers from an xr_input and jumps to the entry
 * with `jmp [rip+x]` (32-bit: `jmp [abs]`), so no register is used for
 * the jump. Leaving: every
 * way a run can end raises a signal; the handler (on its own stack, since
 * rsp belongs to the code under test) copies the interrupted context
 * into the result and siglongjmps back to xr_run.
 */
#define _GNU_SOURCE
#include "tests/unit/xrun.h"

#if defined(__i386__)
#include <asm/ldt.h>
#else
#include <asm/prctl.h>
#endif
#include <cpuid.h>
#include <errno.h>
#include <setjmp.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* ---- the entry thunk ---------------------------------------------------- */

uint64_t xr_entry_addr;
int xr_vec_mode;   /* 0: xmm, 1: ymm, 2: zmm */
void xr_enter(const xr_input *in);

/* offsets in xr_input: gpr at 0, flags at 128, vec at 136, kmask at 1160,
 * x87 at 1224, mxcsr at 1304 */
_Static_assert(offsetof(xr_input, flags) == 128, "xr_input layout");
_Static_assert(offsetof(xr_input, vec) == 136, "xr_input layout");
_Static_assert(offsetof(xr_input, kmask) == 1160, "xr_input layout");
_Static_assert(offsetof(xr_input, x87) == 1224, "xr_input layout");
_Static_assert(offsetof(xr_input, mxcsr) == 1304, "xr_input layout");
#if defined(__i386__)
/* cdecl: the input at [esp+4]; st0 = x87[0], so loaded last */
__asm__(
    ".text\n"
    ".globl xr_enter\n"
    ".type xr_enter,@function\n"
    "xr_enter:\n"
    "  movl 4(%esp), %edi\n"
#define X(i) "  movdqu " #i "*64+136(%edi), %xmm" #i "\n"
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#undef X
    "  fninit\n"
#define F(i) "  fldt " #i "*10+1224(%edi)\n"
    F(7) F(6) F(5) F(4) F(3) F(2) F(1) F(0)
#undef F
    "  ldmxcsr 1304(%edi)\n"
    "  pushl 128(%edi)\n"
    "  popfl\n"
    "  movl 0(%edi), %eax\n"
    "  movl 8(%edi), %ecx\n"
    "  movl 16(%edi), %edx\n"
    "  movl 24(%edi), %ebx\n"
    "  movl 40(%edi), %ebp\n"
    "  movl 48(%edi), %esi\n"
    "  movl 32(%edi), %esp\n"
    "  movl 56(%edi), %edi\n"
    "  jmp *xr_entry_addr\n"
    ".size xr_enter, .-xr_enter\n");
#else
__asm__(
    ".text\n"
    ".globl xr_enter\n"
    ".type xr_enter,@function\n"
    "xr_enter:\n"
    "  cmpl $2, xr_vec_mode(%rip)\n"
    "  je 3f\n"
    "  cmpl $1, xr_vec_mode(%rip)\n"
    "  je 2f\n"
#define X(i) "  movdqu " #i "*64+136(%rdi), %xmm" #i "\n"
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#undef X
    "  jmp 9f\n"
    "2:\n"
#define Y(i) "  vmovdqu " #i "*64+136(%rdi), %ymm" #i "\n"
    Y(0) Y(1) Y(2) Y(3) Y(4) Y(5) Y(6) Y(7) Y(8) Y(9) Y(10) Y(11) Y(12) Y(13) Y(14) Y(15)
#undef Y
    "  jmp 9f\n"
    "3:\n"
#define Z(i) "  vmovdqu64 " #i "*64+136(%rdi), %zmm" #i "\n"
    Z(0) Z(1) Z(2) Z(3) Z(4) Z(5) Z(6) Z(7) Z(8) Z(9) Z(10) Z(11) Z(12) Z(13) Z(14) Z(15)
#undef Z
#define K(i) "  kmovq " #i "*8+1160(%rdi), %k" #i "\n"
    K(0) K(1) K(2) K(3) K(4) K(5) K(6) K(7)
#undef K
    "9:\n"
    "  fninit\n"
    "  ldmxcsr 1304(%rdi)\n"
    "  pushq 128(%rdi)\n"
    "  popfq\n"
    "  movq 0(%rdi), %rax\n"
    "  movq 8(%rdi), %rcx\n"
    "  movq 16(%rdi), %rdx\n"
    "  movq 24(%rdi), %rbx\n"
    "  movq 40(%rdi), %rbp\n"
    "  movq 48(%rdi), %rsi\n"
    "  movq 64(%rdi), %r8\n"
    "  movq 72(%rdi), %r9\n"
    "  movq 80(%rdi), %r10\n"
    "  movq 88(%rdi), %r11\n"
    "  movq 96(%rdi), %r12\n"
    "  movq 104(%rdi), %r13\n"
    "  movq 112(%rdi), %r14\n"
    "  movq 120(%rdi), %r15\n"
    "  movq 32(%rdi), %rsp\n"
    "  movq 56(%rdi), %rdi\n"
    "  jmp *xr_entry_addr(%rip)\n"
    ".size xr_enter, .-xr_enter\n");
#endif

/* ---- state -------------------------------------------------------------- */

static sigjmp_buf xr_jb;
static volatile int xr_in_guest;
static xr_result *xr_cur;
static uint32_t xoff_ymm, xoff_kmask, xoff_zmmhi;   /* XSAVE component offsets */
static int have_avx, have_avx512;

int xr_have_avx(void) { return have_avx; }
int xr_have_avx512(void) { return have_avx512; }

static void fill_pattern(uint64_t addr, size_t n)
{
    uintptr_t *p = (uintptr_t *)(uintptr_t)addr;
    for (size_t i = 0; i < n / sizeof *p; i++)
        p[i] = (uintptr_t)addr + i * sizeof *p + 0x100;
}

static int map_fixed(uint64_t addr, size_t n, int prot)
{
    void *p = mmap((void *)(uintptr_t)addr, n, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    if ((uintptr_t)p != addr) {   /* old kernels ignore the flag */
        munmap(p, n);
        return -1;
    }
    return 0;
}

#if defined(__i386__)
static const int greg_of[XR_NGPR] = {
    REG_EAX, REG_ECX, REG_EDX, REG_EBX, REG_ESP, REG_EBP, REG_ESI, REG_EDI,
};
#define REG_PC REG_EIP
#define REG_SP REG_ESP
static uint16_t teb_selector;   /* fs: the TEB (glibc's TLS is gs) */
#else
static const int greg_of[XR_NGPR] = {
    REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
    REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
};
#define REG_PC REG_RIP
#define REG_SP REG_RSP
#endif

#if defined(__i386__)
uint16_t xr_fs_segment(uint32_t base, uint32_t size)
{
    struct user_desc d;
    memset(&d, 0, sizeof d);
    d.entry_number = (unsigned)-1;
    d.base_addr = base;
    d.limit = size - 1;
    d.seg_32bit = 1;
    d.useable = 1;
    if (syscall(SYS_set_thread_area, &d) < 0)
        return 0;
    uint16_t sel = (uint16_t)(d.entry_number * 8 + 3);
    __asm__ volatile("movw %0, %%fs" : : "r"(sel));
    return sel;
}
#endif

/* Point the TEB segment (gs; 32-bit: fs) at XR_TEB. 0 or -1. */
static int set_teb(void)
{
#if defined(__i386__)
    if (!teb_selector)
        teb_selector = xr_fs_segment((uint32_t)XR_TEB, XR_TEB_SZ);
    if (!teb_selector)
        return -1;
    __asm__ volatile("movw %0, %%fs" : : "r"(teb_selector));
    return 0;
#else
    return syscall(SYS_arch_prctl, ARCH_SET_GS, (unsigned long)XR_TEB) < 0 ? -1 : 0;
#endif
}

static void capture(const ucontext_t *uc, xr_result *r)
{
    for (int i = 0; i < XR_NGPR; i++)
        r->gpr[i] = (uint64_t)(uintptr_t)uc->uc_mcontext.gregs[greg_of[i]];
    r->flags = (uint64_t)(uintptr_t)uc->uc_mcontext.gregs[REG_EFL];
    memset(r->vec, 0, sizeof r->vec);
    memset(r->kmask, 0, sizeof r->kmask);
    const uint8_t *fx = (const uint8_t *)uc->uc_mcontext.fpregs;
    if (!fx)
        return;
#if defined(__i386__)
    /* the fnsave image (control, status, tag words, st0..7), then, when
     * its magic word is 0, the fxsave image at +112 (mxcsr, xmm0..7) */
    memcpy(&r->fcw, fx, 2);
    memcpy(&r->fsw, fx + 4, 2);
    memcpy(&r->ftw, fx + 8, 2);
    for (int i = 0; i < 8; i++)
        memcpy(r->x87[i], fx + 28 + 10 * i, 10);
    uint16_t magic;
    memcpy(&magic, fx + 110, 2);
    if (magic == 0) {
        memcpy(&r->mxcsr, fx + 112 + 24, 4);
        for (int i = 0; i < XR_NVEC; i++)
            memcpy(r->vec[i], fx + 112 + 160 + 16 * i, 16);
    }
#else
    memcpy(&r->fcw, fx, 2);
    memcpy(&r->fsw, fx + 2, 2);
    memcpy(&r->ftw, fx + 4, 2);
    memcpy(&r->mxcsr, fx + 24, 4);
    for (int i = 0; i < 8; i++)
        memcpy(r->x87[i], fx + 32 + 16 * i, 10);
    for (int i = 0; i < 16; i++)
        memcpy(r->vec[i], fx + 160 + 16 * i, 16);
    uint32_t magic;
    memcpy(&magic, fx + 464, 4);
    if (magic != 0x46505853u)   /* FP_XSTATE_MAGIC1: no XSAVE area */
        return;
    uint64_t bv;
    memcpy(&bv, fx + 512, 8);
    if ((bv & 4) && xoff_ymm)
        for (int i = 0; i < 16; i++)
            memcpy(r->vec[i] + 16, fx + xoff_ymm + 16 * i, 16);
    if ((bv & 32) && xoff_kmask)
        memcpy(r->kmask, fx + xoff_kmask, 64);
    if ((bv & 64) && xoff_zmmhi)
        for (int i = 0; i < 16; i++)
            memcpy(r->vec[i] + 32, fx + xoff_zmmhi + 32 * i, 32);
#endif
}

static void handler(int sig, siginfo_t *si, void *ctx)
{
    ucontext_t *uc = ctx;
    if (!xr_in_guest)
        return;
    xr_result *r = xr_cur;
    uint64_t rip = (uint64_t)(uintptr_t)uc->uc_mcontext.gregs[REG_PC];
    uint64_t addr = (uint64_t)(uintptr_t)si->si_addr;

    if (sig == SIGTRAP && rip - 1 == XR_CALLPAD) {
        /* record the return address, let the `ret` after the int3 run */
        if (r->n_calls < 4)
            r->call_ret[r->n_calls] = *(uintptr_t *)(uintptr_t)uc->uc_mcontext.gregs[REG_SP];
        r->n_calls++;
        return;
    }
    if ((sig == SIGSEGV || sig == SIGBUS) && addr != rip && si->si_code == SEGV_MAPERR &&
        addr >= 0x10000 && addr < (XR_BITS == 32 ? 0xF0000000ull : 0x7fffffff0000ull) &&
        r->n_demand < XR_MAX_DEMAND) {
        uint64_t page = addr & ~0xFFFull;
        if (map_fixed(page, 4096, PROT_READ | PROT_WRITE) == 0) {
            fill_pattern(page, 4096);
            r->demand_addr[r->n_demand++] = page;
            return;   /* retry the access */
        }
    }
    capture(uc, r);
    r->fault_addr = addr;
    switch (sig) {
    case SIGTRAP: r->end = XR_END_TRAP; r->at = rip - 1; break;
    case SIGSEGV:
    case SIGBUS:
        r->end = addr == rip ? XR_END_FETCH : XR_END_FAULT;
        r->at = rip;
        break;
    case SIGILL: r->end = XR_END_ILL; r->at = rip; break;
    case SIGVTALRM:
    case SIGALRM: r->end = XR_END_TIMEOUT; r->at = 0; break;
    default: r->end = XR_END_OTHER; r->at = rip; break;
    }
    xr_in_guest = 0;
    siglongjmp(xr_jb, 1);
}

int xr_init(void)
{
    static int done;
    if (done)
        return done > 0 ? 0 : -1;
    done = -1;

    unsigned a, b, c, d;
    if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 27)) && (c & (1u << 28))) {
        /* OSXSAVE and AVX; check the OS enabled the ymm state */
        uint32_t lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        if ((lo & 6) == 6) {
            have_avx = 1;
            __cpuid_count(0xD, 2, a, b, c, d);
            xoff_ymm = b;
            if ((lo & 0xE0) == 0xE0 && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 16)) && (b & (1u << 30))) {
                have_avx512 = 1;
                __cpuid_count(0xD, 5, a, b, c, d);
                xoff_kmask = b;
                __cpuid_count(0xD, 6, a, b, c, d);
                xoff_zmmhi = b;
            }
        }
    }
#if defined(__i386__)
    have_avx = have_avx512 = 0;   /* the 32-bit entry loads xmm0..7 only */
#endif
    xr_vec_mode = have_avx512 ? 2 : have_avx ? 1 : 0;
    /* HS_XR_HIDE=avx512 (or avx): tell the cases the CPU lacks it (the
     * harness still saves what the CPU has), to see the cases that need it
     * take their plan-only path here */
    const char *hide = getenv("HS_XR_HIDE");
    if (hide && strstr(hide, "avx512"))
        have_avx512 = 0;
    if (hide && !strcmp(hide, "avx"))
        have_avx = have_avx512 = 0;

    struct { uint64_t addr; size_t n; int prot; } regions[] = {
        { XR_CODE, XR_CODE_SZ, PROT_READ | PROT_WRITE | PROT_EXEC },
        { XR_RD, XR_RD_SZ, PROT_READ | PROT_WRITE },
        { XR_STACK, XR_STACK_SZ, PROT_READ | PROT_WRITE },
        { XR_SCRATCH, XR_SCRATCH_SZ, PROT_READ | PROT_WRITE },
        { XR_TEB, XR_TEB_SZ, PROT_READ | PROT_WRITE },
        { XR_T_NEAR, XR_T_SZ, PROT_READ | PROT_WRITE | PROT_EXEC },
        { XR_T_NEG, XR_T_SZ, PROT_READ | PROT_WRITE | PROT_EXEC },
        { XR_T_FAR, XR_T_SZ, PROT_READ | PROT_WRITE | PROT_EXEC },
    };
    for (size_t i = 0; i < sizeof regions / sizeof regions[0]; i++)
        if (map_fixed(regions[i].addr, regions[i].n, regions[i].prot) < 0) {
            fprintf(stderr, "xrun: cannot map %#llx: %s\n", (unsigned long long)regions[i].addr,
                    strerror(errno));
            return -1;
        }

    static uint8_t altstack[1 << 16];
    stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0 };
    if (sigaltstack(&ss, NULL) < 0)
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    int sigs[] = { SIGTRAP, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGALRM, SIGVTALRM };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    if (set_teb() < 0)
        return -1;
    done = 1;
    xr_reset_code();
    return 0;
}

void xr_reset_code(void)
{
    memset((void *)(uintptr_t)XR_CODE, 0xCC, XR_CODE_SZ);
    static const uint8_t pad[2] = { 0xCC, 0xC3 };   /* int3; ret */
    memcpy((void *)(uintptr_t)XR_CALLPAD, pad, 2);
}

void xr_reset_tramp(uint64_t t)
{
    memset((void *)(uintptr_t)t, 0xCC, XR_T_SZ);
}

void xr_put(uint64_t addr, const void *p, size_t n)
{
    memcpy((void *)(uintptr_t)addr, p, n);
}

void xr_default_input(xr_input *in, int variant)
{
    memset(in, 0, sizeof *in);
    for (int i = 0; i < 16; i++)
        in->gpr[i] = XR_SCRATCH + 0x1000 + 0x700 * (uint64_t)i + 8 * (uint64_t)variant;
    in->gpr[4] = XR_ENTRY_SP;
    if (XR_BITS == 32)
        for (int i = 0; i < 16; i++)
            in->gpr[i] &= 0xFFFFFFFFu;
    static const uint64_t fl[4] = { 0x202, 0x202 | 0x8D5, 0x202 | 0x041 /* ZF CF */,
                                    0x202 | 0x084 /* SF PF */ };
    in->flags = fl[variant % 4];
    for (int i = 0; i < 16; i++)
        for (int k = 0; k < 64; k++)
            in->vec[i][k] = (uint8_t)(i * 16 + k * 7 + variant);
    for (int i = 0; i < 8; i++)
        in->kmask[i] = 0x5A5A5A5A5A5A5A5Aull * (uint64_t)(i + 1) + (uint64_t)variant;
    in->mxcsr = 0x1F80;   /* the default: every exception masked, none raised */
    for (int i = 0; i < 8; i++) {
        long double v = (long double)(i + 1) * 1.25L + (long double)variant;
        memcpy(in->x87[i], &v, 10);
    }
}

static void reset_data(void)
{
    fill_pattern(XR_RD, XR_RD_SZ);
    fill_pattern(XR_STACK, XR_STACK_SZ);
    fill_pattern(XR_SCRATCH, XR_SCRATCH_SZ);
    fill_pattern(XR_TEB, XR_TEB_SZ);
    *(uintptr_t *)(uintptr_t)XR_ENTRY_SP = (uintptr_t)XR_RETPAD;
}

int xr_run(uint64_t entry, const xr_input *in, xr_result *out)
{
    memset(out, 0, sizeof *out);
    out->rd = malloc(XR_RD_SZ);
    out->stack = malloc(XR_STACK_SZ);
    out->scratch = malloc(XR_SCRATCH_SZ);
    out->teb = malloc(XR_TEB_SZ);
    out->demand_data = malloc(XR_MAX_DEMAND * 4096);
    if (!out->rd || !out->stack || !out->scratch || !out->teb || !out->demand_data)
        return -1;
    reset_data();
    if (in->zero_len)
        memset((void *)(uintptr_t)in->zero_at, 0, in->zero_len);
    for (int i = 0; i < in->npoke && i < XR_MAX_POKE; i++)
        *(uintptr_t *)(uintptr_t)in->poke_addr[i] = (uintptr_t)in->poke_val[i];
    set_teb();

    xr_cur = out;
    xr_entry_addr = entry;
    /* a run that loops: 200 ms of this process's CPU time, whatever the
     * machine's load (a time slice lost to other work is not the code's);
     * one that blocks: 20 s of real time */
    struct itimerval cpu = { { 0, 0 }, { 0, 200000 } }, wall = { { 0, 0 }, { 20, 0 } };
    if (sigsetjmp(xr_jb, 1) == 0) {
        xr_in_guest = 1;
        setitimer(ITIMER_VIRTUAL, &cpu, NULL);
        setitimer(ITIMER_REAL, &wall, NULL);
        xr_enter(in);
        /* not reached */
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_VIRTUAL, &off, NULL);
    setitimer(ITIMER_REAL, &off, NULL);
    xr_in_guest = 0;

    memcpy(out->rd, (void *)(uintptr_t)XR_RD, XR_RD_SZ);
    memcpy(out->stack, (void *)(uintptr_t)XR_STACK, XR_STACK_SZ);
    memcpy(out->scratch, (void *)(uintptr_t)XR_SCRATCH, XR_SCRATCH_SZ);
    memcpy(out->teb, (void *)(uintptr_t)XR_TEB, XR_TEB_SZ);
    for (int i = 0; i < out->n_demand; i++) {
        memcpy(out->demand_data + 4096 * i, (void *)(uintptr_t)out->demand_addr[i], 4096);
        munmap((void *)(uintptr_t)out->demand_addr[i], 4096);
    }
    return 0;
}

void xr_result_free(xr_result *r)
{
    free(r->rd);
    free(r->stack);
    free(r->scratch);
    free(r->teb);
    free(r->demand_data);
    memset(r, 0, sizeof *r);
}

static int mem_diff(const char *what, uint64_t base, const uint8_t *a, const uint8_t *b, size_t n,
                    char *why, size_t wn)
{
    if (memcmp(a, b, n) == 0)
        return 0;
    size_t i = 0;
    while (a[i] == b[i])
        i++;
    snprintf(why, wn, "%s differs at %#llx: %02x vs %02x", what, (unsigned long long)(base + i), a[i], b[i]);
    return 1;
}

/* Does st(i) hold a value (its tag is not empty)? The tags are by
 * physical register: st(i) is register (TOP + i) mod 8. The signal frame
 * holds the full tag word in 32-bit code, the abridged one (a bit per
 * register) in x86-64 code. */
static int st_valid(const xr_result *r, int i)
{
    int phys = (((r->fsw >> 11) & 7) + i) & 7;
    if (XR_BITS == 32)
        return ((r->ftw >> (2 * phys)) & 3) != 3;
    return (r->ftw >> phys) & 1;
}

int xr_compare(const xr_result *a, const xr_result *b, int cmp_vec, char *why, size_t n)
{
    static const char *const names[16] = { "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                           "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" };
    static const char *const names32[8] = { "eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi" };
    if (a->end != b->end || a->at != b->at) {
        snprintf(why, n, "ended differently: kind %d at %#llx vs kind %d at %#llx", a->end,
                 (unsigned long long)a->at, b->end, (unsigned long long)b->at);
        return 1;
    }
    if (a->end == XR_END_FAULT && a->fault_addr != b->fault_addr) {
        snprintf(why, n, "fault address %#llx vs %#llx", (unsigned long long)a->fault_addr,
                 (unsigned long long)b->fault_addr);
        return 1;
    }
    for (int i = 0; i < XR_NGPR; i++)
        if (a->gpr[i] != b->gpr[i]) {
            snprintf(why, n, "%s: %#llx vs %#llx", XR_BITS == 32 ? names32[i] : names[i], (unsigned long long)a->gpr[i],
                     (unsigned long long)b->gpr[i]);
            return 1;
        }
    if ((a->flags & 0x8D5) != (b->flags & 0x8D5)) {
        snprintf(why, n, "flags: %#llx vs %#llx", (unsigned long long)(a->flags & 0x8D5),
                 (unsigned long long)(b->flags & 0x8D5));
        return 1;
    }
    if (a->n_calls != b->n_calls) {
        snprintf(why, n, "call pad visits: %d vs %d", a->n_calls, b->n_calls);
        return 1;
    }
    for (int i = 0; i < a->n_calls && i < 4; i++)
        if (a->call_ret[i] != b->call_ret[i]) {
            snprintf(why, n, "call pad saw return address %#llx vs %#llx",
                     (unsigned long long)a->call_ret[i], (unsigned long long)b->call_ret[i]);
            return 1;
        }
    if (a->fcw != b->fcw || a->fsw != b->fsw || a->ftw != b->ftw || a->mxcsr != b->mxcsr) {
        snprintf(why, n, "x87/SSE state differs: control %#x vs %#x, status %#x vs %#x, tags %#x vs %#x, "
                 "mxcsr %#x vs %#x", a->fcw, b->fcw, a->fsw, b->fsw, a->ftw, b->ftw, a->mxcsr, b->mxcsr);
        return 1;
    }
    for (int i = 0; i < 8; i++)
        if (st_valid(a, i) && memcmp(a->x87[i], b->x87[i], 10)) {
            snprintf(why, n, "st%d differs", i);
            return 1;
        }
    if (cmp_vec) {
        for (int i = 0; i < XR_NVEC; i++)
            if (memcmp(a->vec[i], b->vec[i], 64) != 0) {
                snprintf(why, n, "zmm%d differs", i);
                return 1;
            }
        if (memcmp(a->kmask, b->kmask, sizeof a->kmask) != 0) {
            snprintf(why, n, "opmask registers differ");
            return 1;
        }
    }
    if (mem_diff("data", XR_RD, a->rd, b->rd, XR_RD_SZ, why, n) ||
        mem_diff("stack", XR_STACK, a->stack, b->stack, XR_STACK_SZ, why, n) ||
        mem_diff("scratch", XR_SCRATCH, a->scratch, b->scratch, XR_SCRATCH_SZ, why, n) ||
        mem_diff("teb", XR_TEB, a->teb, b->teb, XR_TEB_SZ, why, n))
        return 1;
    if (a->n_demand != b->n_demand) {
        snprintf(why, n, "pages touched: %d vs %d", a->n_demand, b->n_demand);
        return 1;
    }
    for (int i = 0; i < a->n_demand; i++) {
        int j = 0;
        while (j < b->n_demand && b->demand_addr[j] != a->demand_addr[i])
            j++;
        if (j == b->n_demand) {
            snprintf(why, n, "page %#llx touched by one run only", (unsigned long long)a->demand_addr[i]);
            return 1;
        }
        if (mem_diff("page", a->demand_addr[i], a->demand_data + 4096 * i, b->demand_data + 4096 * j,
                     4096, why, n))
            return 1;
    }
    return 0;
}
