/*
 * cxxexc32.cpp - a 32-bit (i686) C++ test program: exceptions thrown
 * through two functions and caught in a third, 10 times. g++ for i686
 * carries them by DWARF-2 unwinding, which steps from frame to frame by
 * return address: with --time the 32-bit agent gives the functions of an
 * image whose .eh_frame names a personality routine entry probes only
 * (`dwarf-exceptions`), so that no return thunk stands in an exception's
 * way. Linked statically (libstdc++ and libgcc in the exe).
 *
 * Calls (exact): catcher 1, middle 10, thrower 10.
 *
 * Output (exact, checked by tests/test_wow64_time.py), exit code 0:
 *   caught=10 sum=45
 */
#include <cstdio>

volatile int sink;

__attribute__((noinline)) void thrower(int i)
{
    sink = i;
    throw i;
}

__attribute__((noinline)) int middle(int i)
{
    thrower(i);
    return sink;   // (never reached: no tail call)
}

__attribute__((noinline)) void catcher()
{
    int caught = 0, sum = 0;
    for (int i = 0; i < 10; i++) {
        try {
            middle(i);
        } catch (int v) {
            caught++;
            sum += v;
        }
    }
    std::printf("caught=%d sum=%d\n", caught, sum);
}

int main()
{
    catcher();
    return 0;
}
