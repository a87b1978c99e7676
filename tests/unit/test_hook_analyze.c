/*
 * tests/unit/test_hook_analyze.c - hs_analyze / hs_emit_trampoline /
 * hs_emit_patch on byte sequences, with the exact expected output worked
 * out by hand (see the comment of each case), the offset maps, the
 * prefilter, and jump tables read through the read callback.
 */
#include <stdio.h>
#include <string.h>

#include "hook/engine/hook.h"
#include "tests/unit/tap.h"

#define A 0x140001000ull            /* where the function runs */
#define T (A + 0x100000ull)         /* trampoline, +1 MB */
#define TFAR (A + 0x200000000ull)   /* trampoline, +8 GB: rel32 does not reach */

static hs_engine *eng;

static hs_func_input mk(const uint8_t *code, uint32_t size, uint32_t gb, uint32_t ga)
{
    hs_func_input f = { .code = code, .addr = A, .size = size, .gap_before = gb, .gap_after = ga,
                        .image_lo = A - 0x1000, .image_hi = A + 0x100000 };
    return f;
}

static void hexs(char *out, const uint8_t *b, size_t n)
{
    out[0] = 0;
    for (size_t i = 0; i < n && i < 48; i++)
        sprintf(out + 3 * i, "%02x ", b[i]);
}

/* analyze + emit at `tramp`, compare with `want`: from the window the
 * analysis kept (as the agent emits), and decoded again (NULL) */
static void tramp_case(const char *name, const uint8_t *code, uint32_t size, uint64_t tramp,
                       int want_win, const uint8_t *want, size_t want_len)
{
    hs_func_input f = mk(code, size, 0, 0);
    hs_plan p;
    uint8_t buf[HS_TRAMP_MAX];
    uint16_t toff[HS_MAX_WINDOW_INSNS + 1];
    hs_skip_reason why;
    if (hs_analyze(eng, &f, 0, &p) != HS_OK) {
        tap_fail(name, "not hooked: %s", hs_skip_reason_name(p.reason));
        return;
    }
    for (int kept = 1; kept >= 0; kept--) {
        memset(buf, 0, sizeof buf);
        size_t n = hs_emit_trampoline(eng, &f, &p, kept ? hs_analyze_window(eng) : NULL, tramp, buf, sizeof buf,
                                      toff, &why);
        char got[160], exp[160], nm[120];
        hexs(got, buf, n);
        hexs(exp, want, want_len);
        snprintf(nm, sizeof nm, "%s%s", name, kept ? "" : "/decoded");
        tap_check(p.kind == HS_PATCH_JMP32 && p.window_len == want_win && n == want_len &&
                      memcmp(buf, want, n) == 0 && n <= p.tramp_max && toff[p.n_insns] == n,
                  nm, "window %d, got [%s] want [%s]", p.window_len, got, exp);
    }
}

static void relocation_cases(void)
{
    /* cmp qword [rip-11], 0x11223344: the operand is the instruction
     * itself (A). At T: disp = A - (T+11) = -0x10000B; then jmp A+11 from
     * T+16: rel = -0x100005. The imm32 after the disp stays. */
    static const uint8_t c1[] = { 0x48, 0x81, 0x3D, 0xF5, 0xFF, 0xFF, 0xFF, 0x44, 0x33, 0x22, 0x11, 0xC3 };
    static const uint8_t w1[] = { 0x48, 0x81, 0x3D, 0xF5, 0xFF, 0xEF, 0xFF, 0x44, 0x33, 0x22, 0x11,
                                  0xE9, 0xFB, 0xFF, 0xEF, 0xFF };
    tramp_case("reloc/cmp-rip-minus-11-imm32", c1, sizeof c1, T, 11, w1, sizeof w1);

    /* push rbx; call A+0x1000: push rbx, then "push A+6" as
     * lea rsp,[rsp-8]; mov dword [rsp],0x40001006; mov dword [rsp+4],1,
     * then jmp A+0x1000 from T+21 (next T+26): rel = 0x1000 - 0x100000 - 26 */
    static const uint8_t c2[] = { 0x53, 0xE8, 0xFA, 0x0F, 0x00, 0x00, 0x5B, 0xC3 };
    static const uint8_t w2[] = { 0x53, 0x48, 0x8D, 0x64, 0x24, 0xF8, 0xC7, 0x04, 0x24, 0x06, 0x10, 0x00,
                                  0x40, 0xC7, 0x44, 0x24, 0x04, 0x01, 0x00, 0x00, 0x00, 0xE9, 0xE6,
                                  0x0F, 0xF0, 0xFF };
    tramp_case("reloc/push-call-rel32", c2, sizeof c2, T, 6, w2, sizeof w2);

    /* jz A+0x20 (rel8); mov eax,1: jz rel32 to A+0x20 from T+6
     * (rel -0xFFFE6), the mov, jmp A+7 from T+16 (rel -0x100009) */
    static const uint8_t c3[] = { 0x74, 0x1E, 0xB8, 0x01, 0x00, 0x00, 0x00, 0xC3 };
    static const uint8_t w3[] = { 0x0F, 0x84, 0x1A, 0x00, 0xF0, 0xFF, 0xB8, 0x01, 0x00, 0x00, 0x00,
                                  0xE9, 0xF7, 0xFF, 0xEF, 0xFF };
    tramp_case("reloc/jz8-widened", c3, sizeof c3, T, 7, w3, sizeof w3);

    /* the same out of rel32 reach: jnz +14 over jmp [rip+0]; dq A+0x20,
     * the mov, jmp [rip+0]; dq A+7 */
    static const uint8_t w4[] = { 0x75, 0x0E, 0xFF, 0x25, 0, 0, 0, 0, 0x20, 0x10, 0x00, 0x40, 0x01, 0, 0, 0,
                                  0xB8, 0x01, 0x00, 0x00, 0x00,
                                  0xFF, 0x25, 0, 0, 0, 0, 0x07, 0x10, 0x00, 0x40, 0x01, 0, 0, 0 };
    tramp_case("reloc/jz8-inverted-abs", c3, sizeof c3, TFAR, 7, w4, sizeof w4);

    /* dec ecx; jnz A (back to the entry, inside the window); mov eax,ecx:
     * the jnz goes to the copy at T+0: rel32 -8 from T+8 */
    static const uint8_t c5[] = { 0xFF, 0xC9, 0x75, 0xFC, 0x89, 0xC8, 0xC3 };
    static const uint8_t w5[] = { 0xFF, 0xC9, 0x0F, 0x85, 0xF8, 0xFF, 0xFF, 0xFF, 0x89, 0xC8,
                                  0xE9, 0xF7, 0xFF, 0xEF, 0xFF };
    tramp_case("reloc/jnz-to-window-start", c5, sizeof c5, T, 6, w5, sizeof w5);

    /* jrcxz A+0x40; mov eax,1: jrcxz +2; jmp short +5; jmp A+0x40
     * (from T+9: rel 0x40 - 0x100000 - 9 + ... = -0xFFFC9); mov; jmp A+7 */
    static const uint8_t c6[] = { 0xE3, 0x3E, 0xB8, 0x01, 0x00, 0x00, 0x00, 0xC3 };
    static const uint8_t w6[] = { 0xE3, 0x02, 0xEB, 0x05, 0xE9, 0x37, 0x00, 0xF0, 0xFF,
                                  0xB8, 0x01, 0x00, 0x00, 0x00, 0xE9, 0xF4, 0xFF, 0xEF, 0xFF };
    tramp_case("reloc/jrcxz", c6, sizeof c6, T, 7, w6, sizeof w6);

    /* vmovdqu64 zmm0,[rip+0x10] (EVEX): disp = A+10+0x10 - (T+10); jmp A+10 from T+15 */
    static const uint8_t c7[] = { 0x62, 0xF1, 0xFE, 0x48, 0x6F, 0x05, 0x10, 0, 0, 0, 0xC3 };
    static const uint8_t w7[] = { 0x62, 0xF1, 0xFE, 0x48, 0x6F, 0x05, 0x10, 0x00, 0xF0, 0xFF,
                                  0xE9, 0xFB, 0xFF, 0xEF, 0xFF };
    tramp_case("reloc/evex-rip", c7, sizeof c7, T, 10, w7, sizeof w7);

    /* lea rax,[rip+0x100] out of reach: mov rax, A+7+0x100 */
    static const uint8_t c8[] = { 0x48, 0x8D, 0x05, 0x00, 0x01, 0x00, 0x00, 0xC3 };
    static const uint8_t w8[] = { 0x48, 0xB8, 0x07, 0x11, 0x00, 0x40, 0x01, 0, 0, 0,
                                  0xFF, 0x25, 0, 0, 0, 0, 0x07, 0x10, 0x00, 0x40, 0x01, 0, 0, 0 };
    tramp_case("reloc/lea-far-to-mov-imm64", c8, sizeof c8, TFAR, 7, w8, sizeof w8);

    /* call [rip+0x20] -> push A+6 (20 bytes); jmp [rip+x], x = A+0x26 - (T+26) */
    static const uint8_t c9[] = { 0xFF, 0x15, 0x20, 0, 0, 0, 0xC3 };
    static const uint8_t w9[] = { 0x48, 0x8D, 0x64, 0x24, 0xF8, 0xC7, 0x04, 0x24, 0x06, 0x10, 0x00, 0x40,
                                  0xC7, 0x44, 0x24, 0x04, 0x01, 0x00, 0x00, 0x00,
                                  0xFF, 0x25, 0x0C, 0x00, 0xF0, 0xFF };
    tramp_case("reloc/call-rip-mem", c9, sizeof c9, T, 6, w9, sizeof w9);

    /* a rip-relative load out of reach cannot be relocated */
    static const uint8_t c10[] = { 0x48, 0x8B, 0x05, 0x10, 0, 0, 0, 0xC3 };
    hs_func_input f = mk(c10, sizeof c10, 0, 0);
    hs_plan p;
    uint8_t buf[HS_TRAMP_MAX];
    hs_skip_reason why = HS_OK;
    hs_analyze(eng, &f, 0, &p);
    size_t n = hs_emit_trampoline(eng, &f, &p, hs_analyze_window(eng), TFAR, buf, sizeof buf, NULL, &why);
    tap_check(n == 0 && why == HS_SKIP_OUT_OF_RANGE, "reloc/rip-load-out-of-range", "len %zu why %s", n,
              hs_skip_reason_name(why));
}

static void patch_cases(void)
{
    /* hot-patch stub: 8 x int3, xchg ax,ax; dec rcx; jnz -> offset 2; ret */
    static const uint8_t c[] = { 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0xCC,
                                 0x66, 0x90, 0x48, 0xFF, 0xC9, 0x75, 0xFB, 0xC3 };
    hs_func_input f = mk(c + 8, 8, 8, 0);
    hs_plan p;
    hs_analyze(eng, &f, 0, &p);
    uint8_t out[HS_MAX_PATCH];
    int32_t pad = 0;
    int pr = hs_emit_patch(&f, &p, A + 0x1000, out);
    /* jmp rel32 at A-5 to A+0x1000 (rel 0x1000), jmp short -7 at A */
    static const uint8_t want[] = { 0xE9, 0x00, 0x10, 0x00, 0x00, 0xEB, 0xF9 };
    static const uint8_t orig[] = { 0xCC, 0xCC, 0xCC, 0xCC, 0xCC, 0x66, 0x90 };
    tap_check(p.reason == HS_OK && p.kind == HS_PATCH_SHORT_PAD && p.patch_off == -5 && p.patch_len == 7 &&
                  pr == 0 && memcmp(out, want, 7) == 0 && memcmp(p.orig, orig, 7) == 0 &&
                  hs_plan_pad_jmp(&p, &pad) == 1 && pad == -5,
              "patch/short-pad-hotpatch", "kind %s patch [%d,+%d) pad %d", hs_patch_kind_name(p.kind),
              p.patch_off, p.patch_len, pad);

    /* jmp32: E9 rel32 to dest, 5 bytes, orig kept */
    static const uint8_t c2[] = { 0x53, 0x48, 0x83, 0xEC, 0x20, 0xC3 };
    hs_func_input f2 = mk(c2, sizeof c2, 0, 0);
    hs_analyze(eng, &f2, 0, &p);
    pr = hs_emit_patch(&f2, &p, A - 0x1000, out);
    static const uint8_t want2[] = { 0xE9, 0xFB, 0xEF, 0xFF, 0xFF };
    tap_check(pr == 0 && p.patch_len == 5 && memcmp(out, want2, 5) == 0 && memcmp(p.orig, c2, 5) == 0 &&
                  hs_plan_pad_jmp(&p, NULL) == 0,
              "patch/jmp32", "bad patch");
    tap_check(hs_emit_patch(&f2, &p, A + 0x100000000ull, out) == -1, "patch/jmp32-out-of-reach",
              "a destination 4 GB away was accepted");

    /* offset maps of push rbx; call (tramp: push at 0, call emulation at 1) */
    static const uint8_t c3[] = { 0x53, 0xE8, 0xFA, 0x0F, 0x00, 0x00, 0x5B, 0xC3 };
    hs_func_input f3 = mk(c3, sizeof c3, 0, 0);
    hs_analyze(eng, &f3, 0, &p);
    uint16_t toff[HS_MAX_WINDOW_INSNS + 1];
    uint8_t buf[HS_TRAMP_MAX];
    size_t n = hs_emit_trampoline(eng, &f3, &p, hs_analyze_window(eng), T, buf, sizeof buf, toff, NULL);
    tap_check(n == 26 && toff[0] == 0 && toff[1] == 1 && toff[2] == 26 && hs_orig_to_tramp(&p, toff, 0) == 0 &&
                  hs_orig_to_tramp(&p, toff, 1) == 1 && hs_orig_to_tramp(&p, toff, 3) == -1 &&
                  hs_tramp_to_orig(&p, toff, 1) == 1 && hs_tramp_to_orig(&p, toff, 5) == -1 &&
                  (p.flags & HS_FN_HAS_CALL_IN_WINDOW),
              "patch/offset-maps", "len %zu toff %d %d %d", n, toff[0], toff[1], toff[2]);
}

static void analysis_cases(void)
{
    hs_plan p;
    /* xor eax,eax; call rax; ret, no padding: the call would return into
     * the patched bytes; no short patch possible */
    static const uint8_t c1[] = { 0x31, 0xC0, 0xFF, 0xD0, 0xC3, 0x90, 0x90, 0x90 };
    hs_func_input f = mk(c1, 5, 0, 0);
    hs_analyze(eng, &f, 0, &p);
    tap_check(p.reason == HS_SKIP_UNRELOCATABLE, "analyze/call-returns-into-patch", "reason %s",
              hs_skip_reason_name(p.reason));

    /* ret; 3 bytes of padding after only: too short, no slot */
    static const uint8_t c2[] = { 0xC3, 0xCC, 0xCC, 0xCC };
    f = mk(c2, 1, 0, 3);
    hs_analyze(eng, &f, 0, &p);
    tap_check(p.reason == HS_SKIP_TOO_SHORT, "analyze/ret-3-pad", "reason %s", hs_skip_reason_name(p.reason));
    /* ...with int3 allowed: a 1-byte patch */
    hs_analyze(eng, &f, HS_ANALYZE_ALLOW_INT3, &p);
    tap_check(p.reason == HS_OK && p.kind == HS_PATCH_INT3 && p.patch_len == 1 && p.window_len == 1,
              "analyze/ret-int3", "reason %s kind %s", hs_skip_reason_name(p.reason), hs_patch_kind_name(p.kind));

    /* padding that is not padding: ret followed by "add [rax],al" */
    static const uint8_t c3[] = { 0xC3, 0x00, 0x00, 0x00, 0x00, 0x00 };
    f = mk(c3, 1, 0, 5);
    hs_analyze(eng, &f, 0, &p);
    tap_check(p.reason == HS_SKIP_TOO_SHORT, "analyze/zeros-are-not-padding", "reason %s",
              hs_skip_reason_name(p.reason));

    /* undecodable first byte */
    static const uint8_t c4[] = { 0x06, 0x90, 0x90, 0x90, 0x90, 0xC3 };
    f = mk(c4, sizeof c4, 0, 0);
    hs_analyze(eng, &f, 0, &p);
    tap_check(p.reason == HS_SKIP_UNDECODABLE, "analyze/undecodable", "reason %s", hs_skip_reason_name(p.reason));

    /* endbr64; push rbp; mov rbp,rsp */
    static const uint8_t c5[] = { 0xF3, 0x0F, 0x1E, 0xFA, 0x55, 0x48, 0x89, 0xE5, 0xC3 };
    f = mk(c5, sizeof c5, 0, 0);
    hs_analyze(eng, &f, 0, &p);
    tap_check(p.reason == HS_OK && p.window_len == 5 && p.n_insns == 2 && (p.flags & HS_FN_ENDBR),
              "analyze/endbr64", "reason %s window %d", hs_skip_reason_name(p.reason), p.window_len);

    /* rex.w jmp [rip+x]: an import thunk */
    static const uint8_t c6[] = { 0x48, 0xFF, 0x25, 0x10, 0, 0, 0, 0xCC };
    f = mk(c6, 7, 0, 1);
    hs_analyze(eng, &f, 0, &p);
    tap_check(p.reason == HS_OK && p.window_len == 7 && (p.flags & HS_FN_IMPORT_THUNK) &&
                  (p.flags & HS_FN_ENDS_IN_WINDOW),
              "analyze/import-thunk-rexw", "reason %s flags %#x", hs_skip_reason_name(p.reason), p.flags);

    /* a branch to the entry (loop head at offset 0) is allowed, and FULL says so */
    static const uint8_t c7[] = { 0x48, 0x83, 0xC1, 0x01, 0x90, 0x80, 0x39, 0x00, 0x75, 0xF6, 0xC3 };
    f = mk(c7, sizeof c7, 0, 0);
    hs_analyze(eng, &f, HS_ANALYZE_FULL, &p);
    tap_check(p.reason == HS_OK && (p.flags & HS_FN_BRANCH_TO_ENTRY), "analyze/branch-to-entry",
              "reason %s flags %#x", hs_skip_reason_name(p.reason), p.flags);
}

/* ---- jump tables -------------------------------------------------------- */

/* push rbx; sub rsp,0x20; cmp ecx,3; ja L; lea rdx,[rip+A+0x1000];
 * movsxd rax,[rdx+rcx*4]; add rax,rdx; jmp rax; L: add rsp,0x20; pop rbx; ret */
static const uint8_t jt_code[] = {
    0x53, 0x48, 0x83, 0xEC, 0x20, 0x83, 0xF9, 0x03, 0x77, 0x10, 0x48, 0x8D, 0x15, 0xEF, 0x0F, 0x00, 0x00,
    0x48, 0x63, 0x04, 0x8A, 0x48, 0x01, 0xD0, 0xFF, 0xE0, 0x48, 0x83, 0xC4, 0x20, 0x5B, 0xC3,
};
static int32_t jt_table[6];

static int jt_read(void *ctx, uint64_t addr, void *out, size_t n)
{
    (void)ctx;
    if (addr < A + 0x1000 || addr + n > A + 0x1000 + sizeof jt_table)
        return -1;
    memcpy(out, (const uint8_t *)jt_table + (addr - A - 0x1000), n);
    return 0;
}

static void table_cases(void)
{
    hs_plan p;
    hs_func_input f = mk(jt_code, sizeof jt_code, 0, 0);
    f.read = jt_read;
    /* entries relative to the table (A+0x1000): cases at 0x1A and 0x05, then
     * a value that points outside the function ends the table */
    jt_table[0] = 0x1A - 0x1000;
    jt_table[1] = 0x05 - 0x1000;
    jt_table[2] = 0x1A - 0x1000;
    jt_table[3] = 0x7FFFFFF0;
    hs_analyze(eng, &f, 0, &p);
    tap_check(p.reason == HS_OK && p.kind == HS_PATCH_JMP32 && (p.flags & HS_FN_JUMP_TABLE),
              "table/gcc-resolved", "reason %s flags %#x", hs_skip_reason_name(p.reason), p.flags);

    /* one entry targets offset 1 (the sub, inside the patch) */
    jt_table[1] = 0x01 - 0x1000;
    hs_analyze(eng, &f, 0, &p);
    tap_check(p.reason == HS_SKIP_BRANCH_INTO_PATCH, "table/entry-into-patch", "reason %s",
              hs_skip_reason_name(p.reason));

    /* without the read callback the table cannot be read: two instructions
     * in the 5 patched bytes, so the entry could be a case label */
    f.read = NULL;
    hs_analyze(eng, &f, 0, &p);
    tap_check(p.reason == HS_SKIP_JUMP_TABLE, "table/unreadable", "reason %s", hs_skip_reason_name(p.reason));

    /* ...but with one 5-byte instruction in the patch there is nothing to hit */
    uint8_t one[sizeof jt_code + 3];
    static const uint8_t sub7[] = { 0x48, 0x81, 0xEC, 0x28, 0x00, 0x00, 0x00 };   /* sub rsp,0x28 */
    memcpy(one, sub7, 7);
    memcpy(one + 7, jt_code + 5, sizeof jt_code - 5);
    hs_func_input f2 = mk(one, sizeof jt_code + 2, 0, 0);
    hs_analyze(eng, &f2, 0, &p);
    tap_check(p.reason == HS_OK && p.window_len == 7, "table/unreadable-single-insn-window", "reason %s",
              hs_skip_reason_name(p.reason));

    /* jmp rax right after an epilogue is a tail call, not a table */
    static const uint8_t tail[] = { 0x53, 0x48, 0x83, 0xEC, 0x20, 0x48, 0x8B, 0x41, 0x08, 0x48, 0x83, 0xC4,
                                    0x20, 0x5B, 0x48, 0xFF, 0xE0 };
    hs_func_input f3 = mk(tail, sizeof tail, 0, 0);
    hs_analyze(eng, &f3, HS_ANALYZE_FULL, &p);
    tap_check(p.reason == HS_OK && (p.flags & HS_FN_INDIRECT_JUMP) && !(p.flags & HS_FN_UNRESOLVED_TABLE),
              "table/tail-call", "reason %s flags %#x", hs_skip_reason_name(p.reason), p.flags);
}

/* ---- data inside a function ------------------------------------------- */

/* clang's shape: the jump table right after the function's code, inside its
 * .pdata range, then bytes that are no code at all:
 *   0 push rsi; push rdi; push rbx; cmp ecx,2; ja L; lea rdx,[rip+T];
 *     movsxd rax,[rdx+rcx*4]; add rax,rdx; jmp rax
 *   C0..C2: mov eax,N; jmp R   L: xor eax,eax   R: pop rbx; pop rdi; pop rsi; ret
 *   0x34 T: .long C0-T, C1-T, C2-T; then eb bf (a jmp short to offset 1 if it
 *   were code) and 06 06 06 (undecodable in 64-bit mode) */
static const uint8_t tab_inside[] = {
    0x56, 0x57, 0x53, 0x83, 0xf9, 0x02, 0x77, 0x25, 0x48, 0x8d, 0x15, 0x25, 0x00, 0x00, 0x00, 0x48,
    0x63, 0x04, 0x8a, 0x48, 0x01, 0xd0, 0xff, 0xe0, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xeb, 0x10, 0xb8,
    0x02, 0x00, 0x00, 0x00, 0xeb, 0x09, 0xb8, 0x03, 0x00, 0x00, 0x00, 0xeb, 0x02, 0x31, 0xc0, 0x5b,
    0x5f, 0x5e, 0xc3, 0x90, 0xe4, 0xff, 0xff, 0xff, 0xeb, 0xff, 0xff, 0xff, 0xf2, 0xff, 0xff, 0xff,
    0xeb, 0xbf, 0x06, 0x06, 0x06,
};

/* hand-written code with its constants after it (libgcrypt's SHA-512):
 *   push rbx; push rsi; sub rsp,0x20; movdqa xmm1,[rip+K]; movdqu xmm0,[rcx];
 *   pshufb xmm0,xmm1; movdqu [rcx],xmm0; add rsp,0x20; pop rsi; pop rbx; ret;
 *   padding; 0x30 K: 0f 85 cd ff ff ff (a jnz to offset 3 if it were code),
 *   then bytes that do not decode */
static const uint8_t const_inside[] = {
    0x53, 0x56, 0x48, 0x83, 0xec, 0x20, 0x66, 0x0f, 0x6f, 0x0d, 0x22, 0x00, 0x00, 0x00, 0xf3, 0x0f,
    0x6f, 0x01, 0x66, 0x0f, 0x38, 0x00, 0xc1, 0xf3, 0x0f, 0x7f, 0x01, 0x48, 0x83, 0xc4, 0x20, 0x5e,
    0x5b, 0xc3, 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x1f, 0x00,
    0x0f, 0x85, 0xcd, 0xff, 0xff, 0xff, 0x06, 0x07, 0x0e, 0x0f, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x60,
};

static void data_cases(void)
{
    static const struct { const char *name; const uint8_t *code; uint32_t size; } fns[] = {
        { "data/jump-table-inside", tab_inside, sizeof tab_inside },
        { "data/constants-inside", const_inside, sizeof const_inside },
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        hs_func_input f = mk(fns[i].code, fns[i].size, 0, 0);
        hs_plan p, q;
        hs_analyze(eng, &f, 0, &p);
        hs_analyze(eng, &f, HS_ANALYZE_FULL, &q);
        /* the data is never taken for code: hooked with a 5-byte jump either
         * way, and the full analysis follows the whole frame */
        tap_check(p.reason == HS_OK && p.kind == HS_PATCH_JMP32 && q.reason == HS_OK &&
                      q.kind == HS_PATCH_JMP32 && q.window_len == p.window_len &&
                      !(q.flags & (HS_FN_NO_FRAME_INFO | HS_FN_UNRESOLVED_TABLE)) && q.stack_arg_slots == 4,
                  fns[i].name, "plain %s, full %s (flags %#x, slots %d)", hs_skip_reason_name(p.reason),
                  hs_skip_reason_name(q.reason), q.flags, q.stack_arg_slots);
    }
    /* the table inside is resolved: its three cases are branches */
    hs_func_input f = mk(tab_inside, sizeof tab_inside, 0, 0);
    hs_plan q;
    hs_analyze(eng, &f, HS_ANALYZE_FULL, &q);
    tap_check((q.flags & HS_FN_JUMP_TABLE) != 0, "data/jump-table-inside-resolved", "flags %#x", q.flags);
}

/* ---- jumps out of a function ---------------------------------------------- */

/* f (0x19 bytes): push rbx; sub rsp,32; mov ebx,ecx; test ecx,ecx;
 *   jne cold; add rsp,32; pop rbx; jmp A+0x8000 (a tail call)
 * cold (at 0x100, a part of its own, entered with f's frame):
 *   mov eax,[rsp+88] (f's sixth argument); add eax,ebx; add rsp,32;
 *   pop rbx; jmp A+0x9000 (a tail call from the cold part) */
static uint8_t split[0x120];
static const uint8_t split_f[] = { 0x53, 0x48, 0x83, 0xec, 0x20, 0x89, 0xcb, 0x85, 0xc9, 0x0f, 0x85, 0xf1,
                                   0x00, 0x00, 0x00, 0x48, 0x83, 0xc4, 0x20, 0x5b, 0xe9, 0xe7, 0x7f, 0x00, 0x00 };
static const uint8_t split_cold[] = { 0x8b, 0x44, 0x24, 0x58, 0x01, 0xd8, 0x48, 0x83,
                                      0xc4, 0x20, 0x5b, 0xe9, 0xf0, 0x8e, 0x00, 0x00 };

static int split_read(void *ctx, uint64_t addr, void *out, size_t n)
{
    (void)ctx;
    if (addr < A || addr + n > A + sizeof split)
        return -1;
    memcpy(out, split + (addr - A), n);
    return 0;
}

static int split_part(void *ctx, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
    (void)ctx;
    if (addr >= A + 0x100 && addr < A + 0x110) {
        *lo = A + 0x100;
        *hi = A + 0x110;
        return 0;
    }
    return -1;
}

/* the same bytes with the function at split + 0x100 running at A */
static int before_read(void *ctx, uint64_t addr, void *out, size_t n)
{
    (void)ctx;
    if (addr < A - 0x100 || addr + n > A - 0x100 + sizeof split)
        return -1;
    memcpy(out, split + (addr - (A - 0x100)), n);
    return 0;
}

static int before_part(void *ctx, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
    (void)ctx;
    if (addr >= A - 0x100 && addr < A - 0x100 + 12) {
        *lo = A - 0x100;
        *hi = A - 0x100 + 12;
        return 0;
    }
    return -1;
}

static void exit_cases(void)
{
    memset(split, 0xCC, sizeof split);
    memcpy(split, split_f, sizeof split_f);
    memcpy(split + 0x100, split_cold, sizeof split_cold);
    hs_func_input f = mk(split, sizeof split_f, 0, 0);
    f.read = split_read;
    f.part_at = split_part;
    hs_plan p;
    hs_analyze(eng, &f, HS_ANALYZE_FULL, &p);
    const hs_exit *x;
    size_t n = hs_analyze_exits(eng, &x);
    int want = n == 2;
    for (size_t i = 0; i < n; i++)
        want &= x[i].rsp == 0 && x[i].slot == 0 &&
                ((x[i].target == A + 0x8000 && x[i].off == 0x14) || (x[i].target == A + 0x9000 && x[i].off == 0x10B));
    /* the cold part reads the sixth argument: six slots, and its tail call
     * is one of the function's exits */
    tap_check(p.reason == HS_OK && p.stack_arg_slots == 6 && !(p.flags & HS_FN_NO_FRAME_INFO) && want,
              "exits/cold-part-followed", "slots %d flags %#x, %zu exits", p.stack_arg_slots, p.flags, n);
    f.part_at = NULL;
    hs_analyze(eng, &f, HS_ANALYZE_FULL, &p);
    tap_check(p.reason == HS_OK && p.stack_arg_slots == -1 && (p.flags & HS_FN_NO_FRAME_INFO),
              "exits/cold-part-unknown", "without part_at: slots %d flags %#x", p.stack_arg_slots, p.flags);

    /* the cold part before the function (0x100 bytes lower): push rbx;
     * sub rsp,32; mov ebx,ecx; test ecx,ecx; jne cold; add rsp,32; pop rbx;
     * ret / cold: mov eax,[rsp+96] (the seventh argument); add eax,ebx;
     * add rsp,32; pop rbx; ret */
    static const uint8_t before_f[] = { 0x53, 0x48, 0x83, 0xec, 0x20, 0x89, 0xcb, 0x85, 0xc9, 0x0f, 0x85,
                                        0xf1, 0xfe, 0xff, 0xff, 0x48, 0x83, 0xc4, 0x20, 0x5b, 0xc3 };
    static const uint8_t before_cold[] = { 0x8b, 0x44, 0x24, 0x60, 0x01, 0xd8, 0x48, 0x83, 0xc4, 0x20, 0x5b, 0xc3 };
    memset(split, 0xCC, sizeof split);
    memcpy(split, before_cold, sizeof before_cold);
    memcpy(split + 0x100, before_f, sizeof before_f);
    hs_func_input b = mk(split + 0x100, sizeof before_f, 0, 0);
    b.read = before_read;
    b.part_at = before_part;
    hs_analyze(eng, &b, HS_ANALYZE_FULL, &p);
    n = hs_analyze_exits(eng, &x);
    tap_check(p.reason == HS_OK && p.stack_arg_slots == 7 && !(p.flags & HS_FN_NO_FRAME_INFO) && n == 0,
              "exits/cold-part-before", "slots %d flags %#x, %zu exits", p.stack_arg_slots, p.flags, n);
    memset(split, 0xCC, sizeof split);
    memcpy(split, split_f, sizeof split_f);
    memcpy(split + 0x100, split_cold, sizeof split_cold);

    /* the tail-jump rule: g = `jmp f`; f reads six slots through its cold
     * part; h = `jmp [rip+slot]` through an import; k = `jmp rax` */
    hs_tail *t = hs_tail_new();
    static const hs_exit gx = { A, 0, 0, 0 }, hx = { 0, A + 0x50000, 0, 0 }, kx = { 0, 0, 0, 3 };
    f.part_at = split_part;
    hs_analyze(eng, &f, HS_ANALYZE_FULL, &p);
    n = hs_analyze_exits(eng, &x);
    hs_tail_add(t, A, hs_tail_own(&p), x, n);
    hs_tail_add(t, A + 0x8000, 4, NULL, 0);
    hs_tail_add(t, A + 0x9000, 5, NULL, 0);
    hs_tail_add(t, A - 0x100, 4, &gx, 1);
    hs_tail_add(t, A - 0x200, 4, &hx, 1);
    hs_tail_add(t, A - 0x300, 4, &kx, 1);
    hs_tail_solve(t, eng, NULL, 0);
    tap_check(hs_tail_need(t, A) == 6 && hs_tail_need(t, A - 0x100) == 6 && hs_tail_need(t, A - 0x200) == -1 &&
                  hs_tail_need(t, A - 0x300) == -1 && hs_tail_need(t, A + 0x1234) == -2,
              "exits/tail-need", "need f %d, g %d, h %d, k %d", hs_tail_need(t, A), hs_tail_need(t, A - 0x100),
              hs_tail_need(t, A - 0x200), hs_tail_need(t, A - 0x300));
    hs_tail_free(t);

    /* unknown and never: m = `jmp rax` then reaches f too (still the widest
     * copy); q leaves with its frame set up (rsp -8: never); r jumps to
     * q; s reads a stack probe's need; u jumps to a setjmp-like node */
    t = hs_tail_new();
    static const hs_exit mx[] = { { 0, 0, 0, 3 }, { A + 0x8000, 0, 0, 9 } }, qx = { A + 0x9000, 0, -8, 5 },
                         rx = { A - 0x500, 0, 0, 0 }, ux = { A + 0xA000, 0, 0, 0 };
    hs_tail_add(t, A + 0x8000, 4, NULL, 0);
    hs_tail_add(t, A + 0x9000, 4, NULL, 0);
    hs_tail_add(t, A + 0xA000, HS_TAIL_NEVER, NULL, 0);
    hs_tail_add(t, A - 0x400, 4, mx, 2);
    hs_tail_add(t, A - 0x500, 5, &qx, 1);
    hs_tail_add(t, A - 0x600, 4, &rx, 1);
    hs_tail_add(t, A - 0x700, 4, &ux, 1);
    hs_tail_solve(t, eng, NULL, 0);
    tap_check(hs_tail_need(t, A - 0x400) == HS_TAIL_WIDE && hs_tail_need(t, A - 0x500) == HS_TAIL_NEVER &&
                  hs_tail_need(t, A - 0x600) == HS_TAIL_NEVER && hs_tail_need(t, A - 0x700) == HS_TAIL_NEVER,
              "exits/tail-wide-never", "need m %d, q %d, r %d, u %d", hs_tail_need(t, A - 0x400),
              hs_tail_need(t, A - 0x500), hs_tail_need(t, A - 0x600), hs_tail_need(t, A - 0x700));
    hs_tail_free(t);

    /* own: a varargs function is read as wide, a stack probe never */
    hs_plan vp = { 0 };
    vp.stack_arg_slots = 4;
    vp.flags = HS_FN_VARARGS;
    int32_t own_va = hs_tail_own(&vp);
    vp.flags = HS_FN_STACK_PROBE;
    tap_check(own_va == HS_TAIL_WIDE && hs_tail_own(&vp) == HS_TAIL_NEVER, "exits/tail-own",
              "varargs %d, stack probe %d", own_va, hs_tail_own(&vp));

    /* a flat leaf (rsp never moves, no call) and functions that move rsp */
    static const uint8_t flat[] = { 0x8b, 0x44, 0x24, 0x28, 0x01, 0xc8, 0xc3, 0xcc };        /* mov eax,[rsp+40]; add eax,ecx; ret */
    static const uint8_t pushes[] = { 0x53, 0x89, 0xcb, 0x89, 0xd8, 0x5b, 0xc3, 0xcc };      /* push rbx; mov ebx,ecx; mov eax,ebx; pop rbx; ret */
    static const uint8_t calls[] = { 0xe8, 0x00, 0x01, 0x00, 0x00, 0x90, 0x90, 0xc3 };       /* call +0x100; nop; nop; ret */
    hs_func_input lf = mk(flat, 7, 0, 1);
    hs_analyze(eng, &lf, HS_ANALYZE_FULL, &p);
    int flat_ok = !(p.flags & HS_FN_MOVES_RSP) && p.stack_arg_slots == 5;
    lf = mk(pushes, 7, 0, 1);
    hs_analyze(eng, &lf, HS_ANALYZE_FULL, &p);
    int push_ok = (p.flags & HS_FN_MOVES_RSP) != 0;
    lf = mk(calls, 8, 0, 0);
    hs_analyze(eng, &lf, HS_ANALYZE_FULL, &p);
    tap_check(flat_ok && push_ok && (p.flags & HS_FN_MOVES_RSP), "exits/flat-leaf", "flat %d, push %d, call %#x",
              flat_ok, push_ok, p.flags);

    /* a cycle of tail calls: a -> b -> c -> a; c reads 9 slots */
    t = hs_tail_new();
    static const hs_exit ab = { A + 0x10, 0, 0, 0 }, bc = { A + 0x20, 0, 0, 0 }, ca = { A, 0, 0, 0 };
    hs_tail_add(t, A, 4, &ab, 1);
    hs_tail_add(t, A + 0x10, 5, &bc, 1);
    hs_tail_add(t, A + 0x20, 9, &ca, 1);
    hs_tail_solve(t, eng, NULL, 0);
    tap_check(hs_tail_need(t, A) == 9 && hs_tail_need(t, A + 0x10) == 9 && hs_tail_need(t, A + 0x20) == 9,
              "exits/tail-cycle", "need %d %d %d", hs_tail_need(t, A), hs_tail_need(t, A + 0x10),
              hs_tail_need(t, A + 0x20));
    hs_tail_free(t);
}

static void prefilter_cases(void)
{
    /* 5 nops, then jmp short to offset 2, call to 3, jmp short to 6 */
    static const uint8_t c[] = { 0x90, 0x90, 0x90, 0x90, 0x90, 0xEB, 0xFB, 0xE8, 0xF7, 0xFF, 0xFF, 0xFF,
                                 0xEB, 0xF8, 0xC3 };
    hs_func_input f = mk(c, sizeof c, 0, 0);
    tap_check(hs_may_branch_into(&f, 5, 7, 0, 5) == 1, "prefilter/rel8-into", "missed jmp short -> 2");
    tap_check(hs_may_branch_into(&f, 5, 7, 2, 5) == 0, "prefilter/open-interval", "target 2 is not in (2,5)");
    tap_check(hs_may_branch_into(&f, 7, 12, 2, 5) == 1, "prefilter/rel32-into", "missed call -> 3");
    tap_check(hs_may_branch_into(&f, 12, 15, 0, 5) == 0, "prefilter/outside", "jmp -> 6 is not in (0,5)");
    /* jcc rel32 (0F 8x) into offset 4 */
    static const uint8_t d[] = { 0x90, 0x90, 0x90, 0x90, 0x90, 0x0F, 0x84, 0xF9, 0xFF, 0xFF, 0xFF, 0xC3 };
    hs_func_input g = mk(d, sizeof d, 0, 0);
    tap_check(hs_may_branch_into(&g, 5, 12, 0, 5) == 1, "prefilter/jcc32-into", "missed jz -> 4");
}

int main(void)
{
    eng = hs_engine_new();
    relocation_cases();
    patch_cases();
    analysis_cases();
    table_cases();
    data_cases();
    exit_cases();
    prefilter_cases();
    hs_engine_free(eng);
    return tap_status();
}
