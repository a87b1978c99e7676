/*
 * agent/probes.S - hand-written thunks between generated entry stubs and
 * the agent's C code.
 *
 * A stub may interrupt any function at its entry, including code that
 * relies on registers the ABI calls volatile (gcc's -fipa-ra keeps values
 * in them across calls to functions it knows), so every thunk that calls
 * C preserves all general registers, the flags, xmm0-xmm5, and the
 * thread's LastError. The stack is realigned, since a function may be
 * entered with any alignment by hand-written code.
 */
    .intel_syntax noprefix
    .text

/*
 * hs_probe_slow: the stub found the thread's counter slot empty.
 *   in:  [rsp] = return address into the stub, [rsp+8] = function index
 *   out: rcx = the thread's counters, or 0 if the call was counted here.
 *   Everything else is preserved.
 */
    .globl hs_probe_slow
    .def hs_probe_slow; .scl 2; .type 32; .endef
    .seh_proc hs_probe_slow
hs_probe_slow:
    pushfq
    .seh_stackalloc 8
    push rbp
    .seh_pushreg rbp
    mov rbp, rsp
    .seh_setframe rbp, 0
    .seh_endprologue
    push rax
    push rdx
    push r8
    push r9
    push r10
    push r11
    and rsp, -16
    sub rsp, 144                  /* home(32) + xmm0-5(96) + LastError(16) */
    movdqa [rsp+32], xmm0
    movdqa [rsp+48], xmm1
    movdqa [rsp+64], xmm2
    movdqa [rsp+80], xmm3
    movdqa [rsp+96], xmm4
    movdqa [rsp+112], xmm5
    mov eax, gs:[0x68]
    mov [rsp+128], eax
    mov ecx, [rbp+24]             /* rbp+8 flags, +16 return, +24 index */
    call hs_slow_count
    mov rcx, rax
    mov eax, [rsp+128]
    mov gs:[0x68], eax
    movdqa xmm0, [rsp+32]
    movdqa xmm1, [rsp+48]
    movdqa xmm2, [rsp+64]
    movdqa xmm3, [rsp+80]
    movdqa xmm4, [rsp+96]
    movdqa xmm5, [rsp+112]
    lea rsp, [rbp-48]
    pop r11
    pop r10
    pop r9
    pop r8
    pop rdx
    pop rax
    pop rbp
    popfq
    ret
    .seh_endproc
