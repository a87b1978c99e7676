/*
 * pingpong: tiny functions that spend the CPU in a few nanoseconds per
 * call, under a call path through main: ping and pong call each other
 * (mutual recursion, 24 deep), and each does a little arithmetic of its
 * own. For samples taken anywhere in hookscope's code around such calls:
 * every sampled stack must reach main, and every sampled caller -> callee
 * pair of hooked functions must be a counted edge.
 *
 *   pingpong.exe [ROUNDS]   (default 400000) prints "pingpong <checksum>"
 *
 * Call tree per round: main -> round -> ping(24) -> pong(23) -> ping(22)
 * ... -> pong(1) -> ping(0).
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long long sink;

unsigned long long pong(int n, unsigned long long x);

__attribute__((noinline)) unsigned long long ping(int n, unsigned long long x)
{
    for (int i = 0; i < 8; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return n ? pong(n - 1, x) + 1 : x;
}

__attribute__((noinline)) unsigned long long pong(int n, unsigned long long x)
{
    for (int i = 0; i < 5; i++)
        x = x * 2862933555777941757ull + 3037000493ull;
    return n ? ping(n - 1, x) + 3 : x;
}

__attribute__((noinline)) unsigned long long round_of(unsigned long long x)
{
    return ping(24, x);
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 400000;
    unsigned long long x = 1;
    for (long r = 0; r < rounds; r++)
        x = round_of(x);
    sink = x;
    printf("pingpong %llu\n", x);
    return 0;
}
