/*
 * agent/thunks.S - thunks from the generated entry stubs into C.
 *
 * A stub may interrupt any function at its entry, including code that
 * relies on registers the ABI calls volatile (gcc's -fipa-ra keeps values
 * in them across calls to functions it can see), so a thunk preserves all
 * general registers but rcx (its result), the flags, xmm0-xmm5, and the
 * thread's LastError. The stack is realigned: hand-written code may enter
 * a function with any alignment.
 *
 * Stub side:  mov rax, (PUSHED << 32) | fidx ; call [thunk]
 *   (rax was saved by the stub; PUSHED is what the stub pushed, so the
 *   stack pointer does not change inside the stub body and its unwind
 *   info can describe it)
 *   [rsp]    return into the stub; the hooked function's entry rsp (where
 *            its return address is) is rsp + 8 + PUSHED
 * C side:     uint64_t *fn(uint32_t fidx, uint64_t entry_rsp, const hs_saved_regs *regs)
 *   regs: rbx rbp rsi rdi r12 r13 r14 r15 as they were at the entry.
 *   The thunk returns the C result in rcx.
 *
 * The ticks from the thunk's entry to its return are added to the
 * thread's `excluded` (in the region header of the counters the C side
 * returns): the timing wrapper takes them out of every duration the slow
 * path falls in (a captured stack costs microseconds, which are
 * hookscope's and not the target's). The stack thunk adds them to the
 * thread's `stack_ticks` too, which the injector weighs against the
 * program's own time. Two rdtsc on a path that costs far more.
 */
    .intel_syntax noprefix
    .text
#include "agent/keep_xmm.inc"

    .set HDR_EXCLUDED, -4096 + 72   /* session.h: hs_region_hdr.excluded, from the counters */
    .set HDR_STACK_TICKS, -4096 + 80 /* hs_region_hdr.stack_ticks */

/* `also`: another field of the region header the ticks are added to (0: none) */
.macro PROBE_THUNK name, cfunc, also=0
    .globl \name
    .def \name; .scl 2; .type 32; .endef
    .seh_proc \name
\name:
    push rbp
    .seh_pushreg rbp
    mov rbp, rsp
    .seh_setframe rbp, 0
    .seh_endprologue
    /* [rbp] caller's rbp, +8 return into the stub; the flags are saved
     * below the frame, in the body, so that they are put back in the body
     * too: every instruction of the epilogue (pop rbp, ret) is one a stack
     * walker knows */
    pushfq
    /* [rbp-8] flags */
    push rax
    push rdx
    rdtsc
    shl rdx, 32
    or rax, rdx
    push rax                      /* [rbp-32]: when the slow path began */
    push r8
    push r9
    push r10
    push r11
    /* the callee-saved registers, for the stack walk (hs_saved_regs) */
    push r15
    push r14
    push r13
    push r12
    push rdi
    push rsi
    push qword ptr [rbp]
    push rbx
    mov r8, rsp
    and rsp, -16
    sub rsp, 144                  /* home(32) + xmm0-5(96) + LastError(16) */
    KEEP_XMM0_5 32
    mov eax, gs:[0x68]
    mov [rsp+128], eax
    mov rax, [rbp-16]             /* (PUSHED << 32) | fidx */
    mov ecx, eax
    shr rax, 32
    lea rdx, [rbp + 16 + rax]     /* entry rsp */
    call \cfunc
    mov rcx, rax
    mov eax, [rsp+128]
    mov gs:[0x68], eax
    RESTORE_XMM0_5 32
    lea rsp, [rbp-64]
    pop r11
    pop r10
    pop r9
    mov r8, [rbp-32]
    test rcx, rcx
    jz 2f
    rdtsc
    shl rdx, 32
    or rax, rdx
    sub rax, r8
    add [rcx + HDR_EXCLUDED], rax
    .if \also
    add [rcx + \also], rax
    .endif
2:
    pop r8
    add rsp, 8
    pop rdx
    pop rax
    popfq
    pop rbp
    ret
    .seh_endproc
.endm

/* no region yet: get one (or count in the overflow region) */
PROBE_THUNK hs_probe_slow, hs_on_slow
/* a (call site, callee) pair the thread's edge table does not have */
PROBE_THUNK hs_probe_edge, hs_on_edge
/* capture the entry stack */
PROBE_THUNK hs_probe_stack, hs_on_stack, HDR_STACK_TICKS
