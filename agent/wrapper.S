/*
 * agent/wrapper.S - the return probe: a real frame around a timed call.
 *
 * A timed function's stub ends with
 *     push rbp ; push rbx ; mov rbp, <descriptor> ; mov rbx, <counters> ;
 *     jmp hs_wrapper
 * (the counters are the thread's, read from its TLS slot), so the wrapper
 * starts with the caller's rbp and rbx pushed, [rsp+16] = the return
 * address into the caller, and every other register as the caller left
 * it. The wrapper is an ordinary function with static unwind info (the
 * stub's two pushes are described at offset 0) and an
 * unwind handler (hs_wrapper_unwind in probes.c), so exceptions, longjmp
 * and every stack walker pass through it as through any other frame;
 * the caller's return address is never touched.
 *
 *   1. push a record on this thread's shadow stack: rdtsc, descriptor,
 *      frame (our rbp: it identifies the frame to the unwind handler);
 *   2. copy the caller's argument area (home slots and stack arguments,
 *      as many as the function reads; beyond the four home slots, which
 *      every caller allocates, clamped to the thread's StackBase)
 *      below our frame, restore rax/rdx, and call the trampoline;
 *   3. on return: duration = rdtsc - t0, less the ticks the thread spent
 *      meanwhile in hookscope's own slow paths (the region's `excluded`,
 *      which the thunks add to: entry stacks, new edges); add it to the
 *      function's time record (exits, sum, self = duration - timed
 *      children, min, max, log2 histogram in ns; total only when this is
 *      the function's outermost activation on the thread, so recursion is
 *      counted once) and to the parent record's children; with --timeline
 *      (the region's tl_base set) write the call into the thread's ring
 *      as an hs_tl_event (raw entry and exit, the duration, function,
 *      depth), unless the filters leave it out (shorter than tl_min_ticks,
 *      at tl_depths or deeper: counted in tl_filtered); when the ring is
 *      full, wait for the injector to take its events (hs_timeline_room,
 *      C, up to --timeline-wait; the calls around this one leave the wait
 *      out), or count the call dropped with its times; pop.
 *
 * No C is called here. Registers: rbx/rsi/rdi/r12 are saved and used
 * (rbx: counters, rsi: descriptor, rdi: shadow record);
 * rax and rdx are kept in frame slots around rdtsc, so the caller sees
 * what the function returned in them; rcx, r8-r11 and every xmm register
 * are not touched at all. The arithmetic flags change (they are not kept
 * across a call by the calling convention).
 *
 * When the thread's shadow stack is full (or it is the agent's own sink,
 * whose limit is 0), the call is made without timing. (A thread without
 * a region never gets here: its stub runs the function directly.)
 */
    .intel_syntax noprefix
    .text
#include "agent/keep_xmm.inc"
#include "agent/time_layout.inc"


    .globl hs_wrapper
    .def hs_wrapper; .scl 2; .type 32; .endef
    .seh_proc hs_wrapper
    .seh_handler hs_wrapper_unwind, @unwind
hs_wrapper:
    .seh_pushreg rbp            /* both done by the stub */
    .seh_pushreg rbx
    push rsi
    .seh_pushreg rsi
    push rdi
    .seh_pushreg rdi
    push r12
    .seh_pushreg r12
    mov rsi, rbp                /* descriptor */
    /* from here on rsi holds the descriptor (for a sampler: before, rbp) */
    .globl hs_wrapper_desc_rsi
hs_wrapper_desc_rsi:
    mov rbp, rsp
    .seh_setframe rbp, 0
    .seh_endprologue
    /* [rbp] r12, +8 rdi, +16 rsi, +24 rbx, +32 caller's rbp, +40 return,
     * +48 the caller's argument area (home slots first); rbx = counters */
    sub rsp, 16
    mov [rbp-8], rax
    mov [rbp-16], rdx

    mov rdi, [rbx + HDR_SHADOW_TOP]
    cmp rdi, [rbx + HDR_SHADOW_LIMIT]
    jae .Lshadow_full
    rdtsc
    shl rdx, 32
    or rax, rdx
    mov [rdi + SH_T0], rax
    mov rax, [rbx + HDR_EXCLUDED]
    mov [rdi + SH_EXCLUDED], rax
    mov [rdi + SH_DESC], rsi
    mov qword ptr [rdi + SH_CHILD], 0
    mov [rdi + SH_FRAME], rbp
    mov eax, [rsi + DESC_FIDX]
    mov [rdi + SH_FUNC], eax
    lea rax, [rdi + SH_SIZE]
    mov [rbx + HDR_SHADOW_TOP], rax
    /* one more activation of the function open on this thread */
    mov rax, [rsi + DESC_TIMEREL]
    add qword ptr [rbx + rax + T_ACTIVE], 1
    jmp .Lcopy
.Lshadow_full:
    add qword ptr [rbx + HDR_TIME_DROPPED], 1
    xor edi, edi
    /* an untimed frame is not on any shadow stack: count it, so that a
     * detach knows the agent's code is still on some thread's stack */
    lock inc qword ptr [rip + hs_untimed_frames]

.Lcopy:
    mov r12d, [rsi + DESC_NSLOTS]
    cmp r12, 4
    jne .Lcopy_more
    /* the usual case: the four home slots, which every caller allocates */
    sub rsp, 32
    and rsp, -16
    mov rax, [rbp + 48]
    mov [rsp], rax
    mov rax, [rbp + 56]
    mov [rsp + 8], rax
    mov rax, [rbp + 64]
    mov [rsp + 16], rax
    mov rax, [rbp + 72]
    mov [rsp + 24], rax
    jmp 4f
.Lcopy_more:
    /* n = min(nslots, (StackBase - (rbp+48)) / 8) */
    mov rax, gs:[8]
    lea rdx, [rbp + 48]
    sub rax, rdx
    sar rax, 3
    cmp r12, rax
    jle 1f
    mov r12, rax
1:
    test r12, r12
    jge 2f
    xor r12d, r12d
2:
    mov rax, r12
    shl rax, 3
    mov rdx, rsp
    sub rdx, rax
    and rdx, -16
    mov rsp, rdx
3:
    test r12, r12
    jz 4f
    dec r12
    mov rax, [rbp + 48 + r12*8]
    mov [rsp + r12*8], rax
    jmp 3b
4:
    mov rax, [rbp-8]
    mov rdx, [rbp-16]
    call [rsi + DESC_TRAMP]
    /* the return address every timed call sees; a function the timed one
     * tail-calls sees it too (the stubs then take [rbp+40] as its caller) */
    .globl hs_wrapper_ret
hs_wrapper_ret:
    mov [rbp-8], rax
    mov [rbp-16], rdx
    test rdi, rdi
    jnz .Ltimed
    lock dec qword ptr [rip + hs_untimed_frames]
    jmp .Lout
.Ltimed:

    rdtsc
    shl rdx, 32
    or rax, rdx
    mov [rdi + SH_T1], rax
    sub rax, [rdi + SH_T0]
    sub rax, [rbx + HDR_EXCLUDED]
    add rax, [rdi + SH_EXCLUDED]
    mov r12, rax                /* r12 = duration in ticks, hookscope's slow paths taken out */
    /* --timeline: the call into the ring, [head & (cap - 1)], unless full
     * (head - tail >= cap: the injector has not taken the events yet) */
    cmp qword ptr [rbx + HDR_TL_BASE], 0
    je .Ltl_done
    /* the filters, decided now that the duration is known: too short or
     * too deep leaves no event (its time stays in its parent's) */
    cmp r12, [rbx + HDR_TL_MIN_TICKS]
    jb .Ltl_filtered
    mov rax, rdi
    sub rax, [rbx + HDR_SHADOW_BASE]
    shr rax, 6
    cmp rax, [rbx + HDR_TL_DEPTHS]
    jae .Ltl_filtered
.Ltl_write:
    mov rax, [rbx + HDR_TL_HEAD]
    mov rdx, rax
    sub rdx, [rbx + HDR_TL_TAIL]
    cmp rdx, [rbx + HDR_TL_CAP]
    jae .Ltl_full
    mov rdx, [rbx + HDR_TL_CAP]
    dec rdx
    and rdx, rax
    shl rdx, 5
    add rdx, [rbx + HDR_TL_BASE]
    mov rax, [rdi + SH_T0]
    mov [rdx], rax
    mov rax, [rdi + SH_T1]
    mov [rdx + 8], rax
    mov [rdx + 16], r12
    mov eax, [rdi + SH_FUNC]
    mov [rdx + 24], eax
    mov rax, rdi
    sub rax, [rbx + HDR_SHADOW_BASE]
    shr rax, 6
    mov [rdx + 28], eax
    /* the event before the head that publishes it (x86 keeps stores in order) */
    add qword ptr [rbx + HDR_TL_HEAD], 1
    jmp .Ltl_done
.Ltl_filtered:
    add qword ptr [rbx + HDR_TL_FILTERED], 1
    jmp .Ltl_done
.Ltl_full:
    cmp qword ptr [rbx + HDR_TL_WAIT_LIMIT], 0
    je .Ltl_drop
    /* wait for room in C: rax/rdx are in the frame already; rcx, r8-r11,
     * xmm0-5 and LastError are kept as the thunks keep them (a caller
     * may hold values in them across a call it can see into); rbx, rsi,
     * rdi and r12 are the C code's to keep. rsp is 16-aligned here (as
     * it was at the call into the function) */
    sub rsp, 176
    mov [rsp + 128], rcx
    mov [rsp + 136], r8
    mov [rsp + 144], r9
    mov [rsp + 152], r10
    mov [rsp + 160], r11
    KEEP_XMM0_5 32
    lea rcx, [rbx - 4096]
    call hs_timeline_room
    RESTORE_XMM0_5 32
    mov rcx, [rsp + 128]
    mov r8, [rsp + 136]
    mov r9, [rsp + 144]
    mov r10, [rsp + 152]
    mov r11, [rsp + 160]
    add rsp, 176
    test eax, eax
    jnz .Ltl_write
.Ltl_drop:
    add qword ptr [rbx + HDR_TL_DROPPED], 1
    mov rax, [rdi + SH_T0]
    cmp qword ptr [rbx + HDR_TL_DROPPED], 1
    je 16f
    cmp rax, [rbx + HDR_TL_DROP_FIRST]
    jae 17f
16:
    mov [rbx + HDR_TL_DROP_FIRST], rax
17:
    mov rax, [rdi + SH_T1]
    cmp rax, [rbx + HDR_TL_DROP_LAST]
    jbe .Ltl_done
    mov [rbx + HDR_TL_DROP_LAST], rax
.Ltl_done:
    /* records above ours were left by a longjmp that did not unwind: those
     * activations are over (before ours is counted: it may be one of them) */
    lea rdx, [rdi + SH_SIZE]
    cmp rdx, [rbx + HDR_SHADOW_TOP]
    jae 5f
14:
    mov rax, [rdx + SH_DESC]
    mov rax, [rax + DESC_TIMEREL]
    sub qword ptr [rbx + rax + T_ACTIVE], 1
    add rdx, SH_SIZE
    cmp rdx, [rbx + HDR_SHADOW_TOP]
    jb 14b
5:
    cmp rdi, [rbx + HDR_SHADOW_BASE]
    jbe 13f
    add [rdi - SH_SIZE + SH_CHILD], r12
13:
    mov rdx, [rsi + DESC_TIMEREL]
    add rdx, rbx
    add qword ptr [rdx + T_EXITS], 1
    add [rdx + T_SUM], r12
    /* inclusive time: the outermost activation only */
    sub qword ptr [rdx + T_ACTIVE], 1
    jnz 15f
    add [rdx + T_TOTAL], r12
15:
    mov rax, r12
    sub rax, [rdi + SH_CHILD]
    add [rdx + T_SELF], rax
    cmp r12, [rdx + T_MAX]
    jbe 6f
    mov [rdx + T_MAX], r12
6:
    mov rax, [rdx + T_MIN]
    test rax, rax
    jz 7f
    cmp r12, rax
    jae 8f
7:
    mov [rdx + T_MIN], r12
8:
    /* histogram: file the previous duration (this one waits in pending),
     * so the bucket's address does not depend on the rdtsc just read.
     * Bucket: floor(log2(ns)), ns = ticks * mult >> 32; below 2^32 ticks
     * (about a second) one 64-bit multiply is exact (mult < 2^32). */
    mov rax, [rdx + T_PENDING]
    mov [rdx + T_PENDING], r12
    test rax, rax
    jz .Lhist_done
    mov r12, rax
    shr rax, 32
    jnz 11f
    mov rax, r12
    imul rax, [rip + hs_tsc_ns_mult]
    shr rax, 32
12:
    or rax, 1
    bsr rax, rax
    cmp rax, HIST_LAST
    jbe 10f
9:
    mov eax, HIST_LAST
    jmp 10f
11:
    /* long calls: the full 128-bit product (rdx: the time record, kept) */
    push rdx
    mov rax, r12
    mul qword ptr [rip + hs_tsc_ns_mult]
    shrd rax, rdx, 32
    shr rdx, 32
    pop rdx
    jnz 9b
    jmp 12b
10:
    add qword ptr [rdx + T_HIST + rax*8], 1
.Lhist_done:
    /* pop this record (and any a longjmp without unwinding left above) */
    mov [rbx + HDR_SHADOW_TOP], rdi

.Lout:
    mov rax, [rbp-8]
    mov rdx, [rbp-16]
    lea rsp, [rbp]
    pop r12
    pop rdi
    pop rsi
    /* from here on no register holds the descriptor: the function returned */
    .globl hs_wrapper_desc_gone
hs_wrapper_desc_gone:
    pop rbx
    pop rbp
    ret
    .globl hs_wrapper_end
hs_wrapper_end:
    .seh_endproc
