/*
 * switchtab.c - switches that clang (x86_64-w64-mingw32) compiles into jump
 * tables placed inside the function's own code, after its instructions
 * and within its .pdata range, as in bzip2's testf and uncompress:
 *
 *   classify(c)      a switch over 8 cases in a small function
 *   process(n, ops)  a large frame (a __chkstk prologue, pushes of
 *                    r15/r14/... first), a loop around a switch
 *
 * `switchtab N` runs process over N generated operations and prints the
 * result and the classification counts; exit 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) int classify(int c)
{
    switch (c & 7) {
    case 0: return c * 3;
    case 1: return c + 11;
    case 2: return c ^ 0x55;
    case 3: return c - 7;
    case 4: return c << 2;
    case 5: return c >> 1;
    case 6: return ~c;
    default: return 42;
    }
}

__attribute__((noinline)) long process(int n, const unsigned char *ops)
{
    volatile unsigned char buf[10000];
    long acc = 0, a = 1, b = 2, c = 3, d = 4;
    for (unsigned i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)i;
    for (int i = 0; i < n; i++) {
        buf[i % sizeof buf] = ops[i];
        switch (ops[i] % 9) {
        case 0: acc += a; a = a * 3 + 1; break;
        case 1: acc -= b; b ^= acc; break;
        case 2: acc ^= c; c += 17; break;
        case 3: acc += d * 2; d = d * 5 % 1009; break;
        case 4: acc += classify(ops[i]); break;
        case 5: acc = acc * 7 % 1000003; break;
        case 6: a += buf[(i * 7) % sizeof buf]; break;
        case 7: b -= a; c ^= b; break;
        default: d += acc & 0xff; break;
        }
    }
    return acc + a + b + c + d;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    unsigned char *ops = malloc((size_t)n + 1);
    if (!ops)
        return 2;
    unsigned x = 12345;
    int counts[8];
    memset(counts, 0, sizeof counts);
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        ops[i] = (unsigned char)(x >> 16);
        counts[(unsigned)classify(ops[i]) & 7]++;
    }
    printf("process = %ld\n", process(n, ops));
    for (int k = 0; k < 8; k++)
        printf("class %d: %d\n", k, counts[k]);
    free(ops);
    return 0;
}
