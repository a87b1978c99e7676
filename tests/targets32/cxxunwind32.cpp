// cxxunwind32.cpp - a 32-bit (i686) test program: C++ exceptions of the i686
// mingw runtime (DWARF-2 unwinding, libgcc's dw2 personality, linked
// statically) thrown through hooked functions. The unwinder walks the
// hooked frames by their .eh_frame CFI: a counting stub leaves no frame of
// its own, so the frames it has passed through must unwind as they would
// unhooked, destructors and all. The throwing functions clobber ebx, esi
// and edi, which the unwinder restores from their frames; each catch
// checks that the values it keeps in them survived.
//
// Scenarios:
//   direct     thrower caught in its direct caller (catch_direct), 10 times
//   two_up     thrower caught two frames up (catch_two_up, mid_frame), 10
//   nested     thrown four frames down (lvl1..lvl4, a destructor in each)
//   rethrow    rethrower catches, counts and rethrows to catch_rethrow
//   recurse    thrown at the bottom of a 20-deep recursion (recurse)
//
// Calls (exact): main 1, catch_direct 10, thrower 23, catch_two_up 10,
// mid_frame 10, run_nested 1, lvl1 1, lvl2 1, lvl3 1, lvl4 1,
// catch_rethrow 1, rethrower 1, run_recurse 1, recurse 21
//
// Edges (exact): main->catch_direct 10, catch_direct->thrower 10,
// main->catch_two_up 10, catch_two_up->mid_frame 10, mid_frame->thrower 10,
// main->run_nested 1, run_nested->lvl1 1, lvl1->lvl2 1, lvl2->lvl3 1,
// lvl3->lvl4 1, lvl4->thrower 1, main->catch_rethrow 1,
// catch_rethrow->rethrower 1, rethrower->thrower 1, main->run_recurse 1,
// run_recurse->recurse 1, recurse->recurse 20, recurse->thrower 1
//
// Output (exact, checked by tests/test_wow64_hard.py), exit code 0, no args:
//   direct caught 10, sum 45
//   two_up caught 10, sum 145
//   nested caught 100, destructors 4
//   rethrow seen 1, caught 7
//   recurse caught 20
//   registers kept 3 of 3
#include <cstdio>

#define NOINLINE __attribute__((noinline, noclone))

static int dtors;
static int kept;

struct Counted {
    ~Counted() { dtors++; }
};

// the callee-saved registers of i386 changed, so that the unwinder has to
// restore them from the thrower's frame
#define CLOBBER_CALLEE_SAVED() \
    __asm__ volatile("movl $-1, %%ebx\n\tmovl $-1, %%esi\n\tmovl $-1, %%edi" : : : "ebx", "esi", "edi")

// values held in ebx, esi and edi across a call that ends by exception,
// caught here: kept counts the catches that found them intact
static int caught;
#define HOLD_AND_CATCH(call)                                                                  \
    do {                                                                                      \
        register int b asm("ebx") = 0x1111;                                                   \
        register int s asm("esi") = 0x2222;                                                   \
        register int d asm("edi") = 0x3333;                                                   \
        __asm__ volatile("" : "+r"(b), "+r"(s), "+r"(d));                                     \
        try {                                                                                 \
            call;                                                                             \
        } catch (int e) {                                                                     \
            caught = e;                                                                       \
        }                                                                                     \
        __asm__ volatile("" : "+r"(b), "+r"(s), "+r"(d));                                     \
        if (b == 0x1111 && s == 0x2222 && d == 0x3333)                                        \
            kept++;                                                                           \
    } while (0)

extern "C" {

static volatile int armed = 1;   // (so that gcc does not take thrower for noreturn)

NOINLINE void thrower(int v)
{
    CLOBBER_CALLEE_SAVED();
    if (armed)
        throw v;
}

NOINLINE int catch_direct(int v)
{
    try {
        thrower(v);
    } catch (int e) {
        return e;
    }
    return -1;
}

NOINLINE int mid_frame(int v)
{
    Counted c;
    thrower(v + 10);
    return 0;
}

NOINLINE int catch_two_up(int v)
{
    try {
        mid_frame(v);
    } catch (int e) {
        return e;
    }
    return -1;
}

NOINLINE void lvl4(int v)
{
    Counted c;
    thrower(v);
}

NOINLINE void lvl3(int v)
{
    Counted c;
    lvl4(v);
}

NOINLINE void lvl2(int v)
{
    Counted c;
    lvl3(v);
}

NOINLINE void lvl1(int v)
{
    Counted c;
    lvl2(v);
}

NOINLINE int run_nested(void)
{
    dtors = 0;
    HOLD_AND_CATCH(lvl1(100));
    return caught;
}

static int rethrow_seen;

NOINLINE void rethrower(int v)
{
    try {
        thrower(v);
    } catch (int) {
        rethrow_seen++;
        throw;
    }
}

NOINLINE int catch_rethrow(void)
{
    HOLD_AND_CATCH(rethrower(7));
    return caught;
}

NOINLINE int recurse(int n)
{
    if (n == 0) {
        thrower(20);
        return 0;   // not reached while armed
    }
    return recurse(n - 1) + 1;
}

NOINLINE int run_recurse(void)
{
    HOLD_AND_CATCH(recurse(20));
    return caught;
}

}  // extern "C"

int main()
{
    int sum = 0;
    for (int i = 0; i < 10; i++)
        sum += catch_direct(i);
    std::printf("direct caught 10, sum %d\n", sum);
    sum = 0;
    for (int i = 0; i < 10; i++)
        sum += catch_two_up(i);
    std::printf("two_up caught 10, sum %d\n", sum);
    int n = run_nested();
    std::printf("nested caught %d, destructors %d\n", n, dtors);
    int r = catch_rethrow();
    std::printf("rethrow seen %d, caught %d\n", rethrow_seen, r);
    std::printf("recurse caught %d\n", run_recurse());
    std::printf("registers kept %d of 3\n", kept);
    return 0;
}
