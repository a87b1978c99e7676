/*
 * regs_call.h - regs_call(fn, arg, out): call fn(arg) with the callee-saved
 * registers set to known values, and store their values after fn returns
 * (rbx, rbp, rsi, rdi, r12, r13, r14, r15) into out[0..7]; the caller's
 * registers are restored. With unwind info, so exceptions pass through it.
 * Shared by the exception tests (cxxexc.cpp, seh.c): an unwind through
 * hooked frames must give the catching frame its registers back.
 */
#ifndef HS_TEST_REGS_CALL_H
#define HS_TEST_REGS_CALL_H

#ifdef __cplusplus
extern "C" {
#endif

void regs_call(void (*fn)(int), int arg, unsigned long long *out);

__asm__(
    "    .text\n"
    "    .globl regs_call\n"
    "    .def regs_call; .scl 2; .type 32; .endef\n"
    "    .seh_proc regs_call\n"
    "regs_call:\n"
    "    pushq %rbp\n"
    "    .seh_pushreg %rbp\n"
    "    pushq %rbx\n"
    "    .seh_pushreg %rbx\n"
    "    pushq %rsi\n"
    "    .seh_pushreg %rsi\n"
    "    pushq %rdi\n"
    "    .seh_pushreg %rdi\n"
    "    pushq %r12\n"
    "    .seh_pushreg %r12\n"
    "    pushq %r13\n"
    "    .seh_pushreg %r13\n"
    "    pushq %r14\n"
    "    .seh_pushreg %r14\n"
    "    pushq %r15\n"
    "    .seh_pushreg %r15\n"
    "    subq $40, %rsp\n"
    "    .seh_stackalloc 40\n"
    "    .seh_endprologue\n"
    "    movq %r8, 32(%rsp)\n"
    "    movq %rcx, %rax\n"
    "    movl %edx, %ecx\n"
    "    movabsq $0x1111111111111111, %rbx\n"
    "    movabsq $0x2222222222222222, %rbp\n"
    "    movabsq $0x3333333333333333, %rsi\n"
    "    movabsq $0x4444444444444444, %rdi\n"
    "    movabsq $0x5555555555555555, %r12\n"
    "    movabsq $0x6666666666666666, %r13\n"
    "    movabsq $0x7777777777777777, %r14\n"
    "    movabsq $0x0888888888888888, %r15\n"
    "    callq *%rax\n"
    "    movq 32(%rsp), %r8\n"
    "    movq %rbx, 0(%r8)\n"
    "    movq %rbp, 8(%r8)\n"
    "    movq %rsi, 16(%r8)\n"
    "    movq %rdi, 24(%r8)\n"
    "    movq %r12, 32(%r8)\n"
    "    movq %r13, 40(%r8)\n"
    "    movq %r14, 48(%r8)\n"
    "    movq %r15, 56(%r8)\n"
    "    addq $40, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rdi\n"
    "    popq %rsi\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    "    .seh_endproc\n");

#ifdef __cplusplus
}
#endif

#endif
