// cxxexc.cpp - C++ exceptions through hooked (and, with --time, wrapped)
// frames. Every scenario runs inside regs_call (assembly, below), which
// loads rbx, rbp, rsi, rdi and r12-r15 with known values, calls the
// scenario's catching function, and hands back what those registers hold
// when it returns: after an exception has been thrown through hooked
// frames and caught, the catching frame's callee-saved registers must be
// what the unwinder restored - and every register the catching function
// does not save itself comes straight from the unwind of the frames
// between the throw and the catch (including hookscope's wrapper frames).
// The throwing functions clobber every callee-saved register, so the
// unwinder has to restore them from their frames too.
//
// Scenarios (the test knows how many calls of each function end by
// exception; with -fno-inline every function below is a real call):
//   direct     caught in the thrower's direct caller
//   two_up     caught two frames up (mid_frame between)
//   self       thrown and caught inside the hooked function itself
//   nested     caught four hooked frames up (lvl1..lvl4), a destructor in each
//   rethrow    an intermediate frame catches, prints and rethrows
//   recurse    thrown at the bottom of a 50-deep recursion
//   loop       two_up 100 times (counts must add up exactly)
// Output is deterministic; exit 0 when every register check passed, 1 if not.
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "regs_call.h"

static const unsigned long long expected_regs[8] = {
    0x1111111111111111ull, 0x2222222222222222ull, 0x3333333333333333ull, 0x4444444444444444ull,
    0x5555555555555555ull, 0x6666666666666666ull, 0x7777777777777777ull, 0x0888888888888888ull,
};
static const char *const reg_names[8] = { "rbx", "rbp", "rsi", "rdi", "r12", "r13", "r14", "r15" };

static int bad_regs;
static int quiet;   // the loop scenario prints only its totals
static long dtors;  // destructors run, all scenarios

struct Noisy {
    const char *name;
    explicit Noisy(const char *n) : name(n) {}
    ~Noisy()
    {
        dtors++;
        if (!quiet)
            std::printf("  ~%s\n", name);
    }
};

// Make the compiler save and restore every callee-saved register in the
// function that calls this (their values are changed here).
#define CLOBBER_CALLEE_SAVED()                                                                 \
    __asm__ volatile("movq $-1, %%rbx\n\tmovq $-1, %%rsi\n\tmovq $-1, %%rdi\n\t"              \
                     "movq $-1, %%r12\n\tmovq $-1, %%r13\n\tmovq $-1, %%r14\n\tmovq $-1, %%r15" \
                     : : : "rbx", "rsi", "rdi", "r12", "r13", "r14", "r15")

extern "C" {

__attribute__((noinline)) void thrower(int v)
{
    Noisy n("thrower");
    CLOBBER_CALLEE_SAVED();
    if (v >= 0)
        throw v;
    std::printf("  not thrown\n");
}

__attribute__((noinline)) void mid_frame(int v)
{
    Noisy n("mid_frame");
    CLOBBER_CALLEE_SAVED();
    thrower(v);
    std::printf("  mid_frame: not reached\n");
}

__attribute__((noinline)) void lvl4(int v)
{
    Noisy n("lvl4");
    CLOBBER_CALLEE_SAVED();
    throw std::runtime_error("from lvl4");
}

__attribute__((noinline)) void lvl3(int v)
{
    Noisy n("lvl3");
    lvl4(v + 1);
}

__attribute__((noinline)) void lvl2(int v)
{
    Noisy n("lvl2");
    CLOBBER_CALLEE_SAVED();
    lvl3(v + 1);
}

__attribute__((noinline)) void lvl1(int v)
{
    Noisy n("lvl1");
    lvl2(v + 1);
}

__attribute__((noinline)) void rethrower(int v)
{
    Noisy n("rethrower");
    try {
        thrower(v);
    } catch (...) {
        std::printf("  rethrower: caught, rethrowing\n");
        throw;
    }
}

__attribute__((noinline)) int recurse(int depth)
{
    Noisy n("recurse");
    if (depth == 0)
        throw depth;
    return recurse(depth - 1) + 1;
}

// ---- the catching functions (each is fn for regs_call) ----

__attribute__((noinline)) void catch_direct(int v)
{
    try {
        thrower(v);
    } catch (int e) {
        std::printf("  catch_direct: caught %d\n", e);
    }
}

__attribute__((noinline)) void catch_two_up(int v)
{
    try {
        mid_frame(v);
    } catch (int e) {
        if (!quiet)
            std::printf("  catch_two_up: caught %d\n", e);
    }
}

__attribute__((noinline)) void self_catch(int v)
{
    Noisy n("self_catch");
    try {
        if (v >= 0)
            throw v * 2;
    } catch (int e) {
        std::printf("  self_catch: caught %d\n", e);
    }
}

__attribute__((noinline)) void catch_nested(int v)
{
    try {
        lvl1(v);
    } catch (const std::exception &e) {
        std::printf("  catch_nested: caught \"%s\"\n", e.what());
    }
}

__attribute__((noinline)) void catch_rethrow(int v)
{
    try {
        rethrower(v);
    } catch (int e) {
        std::printf("  catch_rethrow: caught %d\n", e);
    }
}

__attribute__((noinline)) void catch_recurse(int v)
{
    try {
        std::printf("  recurse returned %d\n", recurse(v));
    } catch (int e) {
        std::printf("  catch_recurse: caught %d\n", e);
    }
}

__attribute__((noinline)) void loop_two_up(int v)
{
    quiet = 1;
    for (int i = 0; i < v; i++)
        catch_two_up(i);
    quiet = 0;
}

}  // extern "C"

static void scenario(const char *name, void (*fn)(int), int arg)
{
    unsigned long long regs[8];
    std::printf("%s:\n", name);
    regs_call(fn, arg, regs);
    for (int i = 0; i < 8; i++) {
        if (regs[i] != expected_regs[i]) {
            std::printf("  %s is 0x%016llx, expected 0x%016llx\n", reg_names[i], regs[i],
                        expected_regs[i]);
            bad_regs++;
        }
    }
    std::printf("  registers ok: %s\n", bad_regs ? "no" : "yes");
}

int main()
{
    scenario("direct", catch_direct, 7);
    scenario("no throw", catch_direct, -1);
    scenario("two_up", catch_two_up, 8);
    scenario("self", self_catch, 21);
    scenario("nested", catch_nested, 1);
    scenario("rethrow", catch_rethrow, 9);
    scenario("recurse", catch_recurse, 49);
    scenario("loop", loop_two_up, 100);
    std::printf("destructors run: %ld\n", dtors);
    std::printf("%s\n", bad_regs ? "FAILED" : "all ok");
    return bad_regs ? 1 : 0;
}
