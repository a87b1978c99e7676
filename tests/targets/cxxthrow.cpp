// cxxthrow.cpp - throws a C++ exception that nothing catches (after
// calling work() 10 times): libstdc++ calls std::terminate, which calls
// abort(). Prints "throwing" first.
#include <cstdio>
#include <stdexcept>

volatile int sink;

__attribute__((noinline)) void work(int i)
{
    sink += i;
}

__attribute__((noinline)) void thrower()
{
    throw std::runtime_error("nobody catches this");
}

int main()
{
    for (int i = 0; i < 10; i++)
        work(i);
    std::printf("throwing\n");
    std::fflush(stdout);
    thrower();
    return 0;
}
