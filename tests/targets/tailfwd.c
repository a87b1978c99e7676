/*
 * tailfwd.c - functions that hand stack arguments (the fifth and later)
 * on to another function by a tail jump, which then reads them from the
 * stack its caller's caller left: at the entry (a bare `jmp`), in the
 * middle of a body after a call, through one and two levels, for ints,
 * doubles and pointers; built at -O2, -O3 and -Os (tailfwd-O2.exe ...).
 * Each result depends on every argument, so a wrong stack slot shows.
 *
 *   thunk5i, thunk5i_2      -> f5i        ints; one level, two levels
 *   mid5i, mid5i_call       -> f5i        after a loop / a call, on one path
 *   thunk6d, thunk6d_2      -> f6d        doubles (the 5th and 6th on the stack)
 *   thunk5p                 -> f5p        pointers the callee dereferences
 *   via_ptr                 -> *fp        through a function pointer (unknown target)
 *   mid5_asm   -> thunk5i   -> f5i        mid-body, past a branch, leaving slot 4 alone
 *   jcc5_asm                -> f5i        a conditional tail jump (jns f5i)
 *   frame5_asm              -> f5i        after a call and its frame's epilogue
 *   (the last three in assembly, so that no compiler touches the fifth slot)
 *   to_import               -> _snprintf  a C runtime import (varargs)
 *
 * Prints one line per call; exit 0.
 */
#include <stdio.h>
#include <string.h>

#define NOIPA __attribute__((noinline, noipa))

NOIPA int f5i(int a, int b, int c, int d, int e)
{
    return a + 10 * b + 100 * c + 1000 * d + 10000 * e;
}

NOIPA int thunk5i(int a, int b, int c, int d, int e) { return f5i(a, b, c, d, e); }

NOIPA int thunk5i_2(int a, int b, int c, int d, int e) { return thunk5i(a, b, c, d, e); }

static volatile int sink;

NOIPA int helper(int x)
{
    sink += x;
    return x * 2;
}

NOIPA int mid5i(int a, int b, int c, int d, int e)
{
    if (a > 1000)
        return a;
    int s = 0;
    for (int i = 0; i < a; i++)
        s += (i * b) ^ c;
    return f5i(s, b, c, d, e);
}

NOIPA int mid5i_call(int a, int b, int c, int d, int e)
{
    int x = helper(a);
    if (x > 1000)
        return x;
    return f5i(x, b, c, d, e);
}

NOIPA double f6d(double a, double b, double c, double d, double e, double f)
{
    return a + 2 * b + 4 * c + 8 * d + 16 * e + 32 * f;
}

NOIPA double thunk6d(double a, double b, double c, double d, double e, double f)
{
    return f6d(a, b, c, d, e, f);
}

NOIPA double thunk6d_2(double a, double b, double c, double d, double e, double f)
{
    return thunk6d(a, b, c, d, e, f);
}

NOIPA int f5p(const int *a, const int *b, const int *c, const int *d, const char *e)
{
    return *a + *b + *c + *d + (int)strlen(e);
}

NOIPA int thunk5p(const int *a, const int *b, const int *c, const int *d, const char *e)
{
    return f5p(a, b, c, d, e);
}

int mid5_asm(int a, int b, int c, int d, int e);
int jcc5_asm(int a, int b, int c, int d, int e);
int frame5_asm(int a, int b, int c, int d, int e);
__asm__(".intel_syntax noprefix\n"
        "    .text\n"
        "    .globl mid5_asm\n"
        "    .def mid5_asm; .scl 2; .type 32; .endef\n"
        "    .seh_proc mid5_asm\n"
        "mid5_asm:\n"
        "    .seh_endprologue\n"
        "    test ecx, ecx\n"
        "    js 1f\n"
        "    lea ecx, [rcx+rcx*2]\n"
        "    jmp thunk5i\n"
        "1:  mov eax, -1\n"
        "    ret\n"
        "    .seh_endproc\n"
        "    .globl jcc5_asm\n"
        "    .def jcc5_asm; .scl 2; .type 32; .endef\n"
        "    .seh_proc jcc5_asm\n"
        "jcc5_asm:\n"
        "    .seh_endprologue\n"
        "    add ecx, 1\n"
        "    jns f5i\n"
        "    xor eax, eax\n"
        "    ret\n"
        "    .seh_endproc\n"
        "    .globl frame5_asm\n"
        "    .def frame5_asm; .scl 2; .type 32; .endef\n"
        "    .seh_proc frame5_asm\n"
        "frame5_asm:\n"
        "    push rsi\n"
        "    .seh_pushreg rsi\n"
        "    push rdi\n"
        "    .seh_pushreg rdi\n"
        "    sub rsp, 40\n"
        "    .seh_stackalloc 40\n"
        "    .seh_endprologue\n"
        "    mov rsi, rdx\n"
        "    mov rdi, r8\n"
        "    mov [rsp+88], r9\n"   /* its own home slot 3 */
        "    call helper\n"
        "    mov ecx, eax\n"
        "    mov rdx, rsi\n"
        "    mov r8, rdi\n"
        "    mov r9, [rsp+88]\n"
        "    add rsp, 40\n"
        "    pop rdi\n"
        "    pop rsi\n"
        "    jmp f5i\n"
        "    .seh_endproc\n"
        ".att_syntax\n");

typedef int (*fn5)(int, int, int, int, int);

NOIPA int via_ptr(fn5 fp, int a, int b, int c, int d) { return fp(a, b, c, d, 7); }

NOIPA int to_import(char *buf, size_t n, const char *fmt, int a, int b)
{
    return _snprintf(buf, n, fmt, a, b);
}

/* Fill the stack below the caller with a pattern, so that a slot a
 * callee reads from a copy too short holds it rather than what an earlier
 * call happened to leave there. */
NOIPA void scribble(void)
{
    volatile unsigned char junk[4096];
    for (unsigned i = 0; i < sizeof junk; i++)
        junk[i] = 0x77;
}

int main(void)
{
    int one = 1, two = 2, three = 3, four = 4;
    char buf[64];
    for (int i = 0; i < 3; i++) {
        scribble();
        printf("thunk5i %d\n", thunk5i(1 + i, 2, 3, 4, 5 + i));
        scribble();
        printf("thunk5i_2 %d\n", thunk5i_2(2, 3 + i, 4, 5, 6));
        scribble();
        printf("mid5i %d\n", mid5i(3, 4, 5 + i, 6, 7));
        scribble();
        printf("mid5i_call %d\n", mid5i_call(3, 4, 5 + i, 6, 7));
        scribble();
        printf("thunk6d %.1f\n", thunk6d(1, 2, 3, 4, 5.5 + i, 6.25));
        scribble();
        printf("thunk6d_2 %.1f\n", thunk6d_2(0.5, 1, 1.5, 2, 2.5, 3 + i));
        scribble();
        printf("thunk5p %d\n", thunk5p(&one, &two, &three, &four, i ? "pointer" : "ptr"));
        scribble();
        printf("via_ptr %d\n", via_ptr(f5i, 9, 8 + i, 7, 6));
        scribble();
        printf("mid5_asm %d\n", mid5_asm(4 + i, 3, 2, 1, 9));
        scribble();
        printf("jcc5_asm %d\n", jcc5_asm(5, 6 + i, 7, 8, 3));
        scribble();
        printf("frame5_asm %d\n", frame5_asm(6, 7, 8 + i, 9, 4));
        scribble();
        int len = to_import(buf, sizeof buf, "%d-%d", 40 + i, 2);
        printf("to_import %d %s\n", len, buf);
    }
    return 0;
}
