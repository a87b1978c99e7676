/*
 * keepregs.c - a timed function's return leaves every register as the
 * function left it, even the volatile ones, whatever hookscope does at the
 * exit (a full --timeline buffer waited for in C among it).
 *
 * set_regs() puts known values into rcx, r8-r11, xmm0-xmm5 and LastError
 * and returns; call_set_regs(out) calls it and stores what those hold
 * after the return into out (code that knows its callee, as gcc's
 * -fipa-ra does, may keep values in them across the call). main does
 * that N times (argv[1], default 2000) and prints how many calls left
 * all twelve as set_regs did: "kept N of N".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#define NREGS 12   /* rcx, r8-r11, xmm0-xmm5 (low 64 bits), LastError */

void set_regs(void);
void call_set_regs(unsigned long long *out);

__asm__(
    "    .text\n"
    "    .globl set_regs\n"
    "    .def set_regs; .scl 2; .type 32; .endef\n"
    "    .seh_proc set_regs\n"
    "set_regs:\n"
    "    subq $8, %rsp\n"
    "    .seh_stackalloc 8\n"
    "    .seh_endprologue\n"
    "    movabsq $0x1111111111111111, %rcx\n"
    "    movabsq $0x8888888888888888, %r8\n"
    "    movabsq $0x9999999999999999, %r9\n"
    "    movabsq $0xaaaaaaaaaaaaaaaa, %r10\n"
    "    movabsq $0xbbbbbbbbbbbbbbbb, %r11\n"
    "    movabsq $0x0101010101010101, %rax\n"
    "    movq %rax, %xmm0\n"
    "    movabsq $0x0202020202020202, %rax\n"
    "    movq %rax, %xmm1\n"
    "    movabsq $0x0303030303030303, %rax\n"
    "    movq %rax, %xmm2\n"
    "    movabsq $0x0404040404040404, %rax\n"
    "    movq %rax, %xmm3\n"
    "    movabsq $0x0505050505050505, %rax\n"
    "    movq %rax, %xmm4\n"
    "    movabsq $0x0606060606060606, %rax\n"
    "    movq %rax, %xmm5\n"
    "    movl $0x1234abcd, %gs:0x68\n"   /* the TEB's LastErrorValue */
    "    xorl %eax, %eax\n"
    "    addq $8, %rsp\n"
    "    ret\n"
    "    .seh_endproc\n"
    "\n"
    "    .globl call_set_regs\n"
    "    .def call_set_regs; .scl 2; .type 32; .endef\n"
    "    .seh_proc call_set_regs\n"
    "call_set_regs:\n"
    "    pushq %rbx\n"
    "    .seh_pushreg %rbx\n"
    "    subq $32, %rsp\n"
    "    .seh_stackalloc 32\n"
    "    .seh_endprologue\n"
    "    movq %rcx, %rbx\n"
    "    call set_regs\n"
    "    movq %rcx, 0(%rbx)\n"
    "    movq %r8, 8(%rbx)\n"
    "    movq %r9, 16(%rbx)\n"
    "    movq %r10, 24(%rbx)\n"
    "    movq %r11, 32(%rbx)\n"
    "    movq %xmm0, 40(%rbx)\n"
    "    movq %xmm1, 48(%rbx)\n"
    "    movq %xmm2, 56(%rbx)\n"
    "    movq %xmm3, 64(%rbx)\n"
    "    movq %xmm4, 72(%rbx)\n"
    "    movq %xmm5, 80(%rbx)\n"
    "    movl %gs:0x68, %eax\n"
    "    movq %rax, 88(%rbx)\n"
    "    addq $32, %rsp\n"
    "    popq %rbx\n"
    "    ret\n"
    "    .seh_endproc\n");

static const unsigned long long expected[NREGS] = {
    0x1111111111111111ull, 0x8888888888888888ull, 0x9999999999999999ull, 0xaaaaaaaaaaaaaaaaull,
    0xbbbbbbbbbbbbbbbbull, 0x0101010101010101ull, 0x0202020202020202ull, 0x0303030303030303ull,
    0x0404040404040404ull, 0x0505050505050505ull, 0x0606060606060606ull, 0x1234abcdull,
};
static const char *const names[NREGS] = { "rcx", "r8", "r9", "r10", "r11", "xmm0", "xmm1",
                                          "xmm2", "xmm3", "xmm4", "xmm5", "LastError" };

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000, kept = 0;
    for (int i = 0; i < n; i++) {
        unsigned long long got[NREGS];
        memset(got, 0, sizeof got);
        call_set_regs(got);
        int ok = 1;
        for (int r = 0; r < NREGS; r++)
            if (got[r] != expected[r]) {
                if (ok && i - kept < 5)
                    printf("call %d: %s is 0x%llx, not 0x%llx\n", i, names[r], got[r], expected[r]);
                ok = 0;
            }
        kept += ok;
    }
    printf("kept %d of %d\n", kept, n);
    return kept == n ? 0 : 1;
}
