/*
 * manyargs.c - functions with many stack arguments and varargs, called
 * several times with different values; prints every result.
 *
 *   sum20     20 arguments (16 on the stack): every one weighted by its
 *             position, so a stack slot copied to the wrong place or not
 *             at all changes the result
 *   mix20     20 arguments of mixed types (int, double, long long, pointer,
 *             float): doubles and floats in the 4 register positions travel
 *             in xmm registers, on the stack in integer slots
 *   vsum      varargs: vsum(n, ...) sums n long longs, weighted; called
 *             with 25 arguments (24 values)
 *   vfmt      varargs with mixed types through vsnprintf (25 arguments)
 *   sum70     70 arguments: more stack slots than a timing wrapper copies
 */
#include <stdarg.h>
#include <stdio.h>

#define A20(T) T a1, T a2, T a3, T a4, T a5, T a6, T a7, T a8, T a9, T a10, T a11, T a12, T a13, \
               T a14, T a15, T a16, T a17, T a18, T a19, T a20

__attribute__((noinline)) long long sum20(A20(long long))
{
    return a1 * 1 + a2 * 2 + a3 * 3 + a4 * 4 + a5 * 5 + a6 * 6 + a7 * 7 + a8 * 8 + a9 * 9 +
           a10 * 10 + a11 * 11 + a12 * 12 + a13 * 13 + a14 * 14 + a15 * 15 + a16 * 16 + a17 * 17 +
           a18 * 18 + a19 * 19 + a20 * 20;
}

__attribute__((noinline)) double mix20(int a1, double a2, long long a3, float a4, const int *a5,
                                       double a6, int a7, float a8, long long a9, double a10,
                                       const int *a11, int a12, double a13, float a14, long long a15,
                                       int a16, double a17, const int *a18, float a19, int a20)
{
    return a1 + 2 * a2 + 3.0 * a3 + 4 * a4 + 5.0 * *a5 + 6 * a6 + 7.0 * a7 + 8 * a8 + 9.0 * a9 +
           10 * a10 + 11.0 * *a11 + 12.0 * a12 + 13 * a13 + 14 * a14 + 15.0 * a15 + 16.0 * a16 +
           17 * a17 + 18.0 * *a18 + 19 * a19 + 20.0 * a20;
}

__attribute__((noinline)) long long vsum(int n, ...)
{
    va_list ap;
    long long s = 0;
    va_start(ap, n);
    for (int i = 1; i <= n; i++)
        s += (long long)i * va_arg(ap, long long);
    va_end(ap);
    return s;
}

static char fmt_buf[512];

__attribute__((noinline)) int vfmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(fmt_buf, sizeof fmt_buf, fmt, ap);
    va_end(ap);
    return n;
}

#define A70(T)                                                                                  \
    T b1, T b2, T b3, T b4, T b5, T b6, T b7, T b8, T b9, T b10, T b11, T b12, T b13, T b14,     \
        T b15, T b16, T b17, T b18, T b19, T b20, T b21, T b22, T b23, T b24, T b25, T b26,      \
        T b27, T b28, T b29, T b30, T b31, T b32, T b33, T b34, T b35, T b36, T b37, T b38,      \
        T b39, T b40, T b41, T b42, T b43, T b44, T b45, T b46, T b47, T b48, T b49, T b50,      \
        T b51, T b52, T b53, T b54, T b55, T b56, T b57, T b58, T b59, T b60, T b61, T b62,      \
        T b63, T b64, T b65, T b66, T b67, T b68, T b69, T b70

__attribute__((noinline)) long long sum70(A70(long long))
{
    return b1 + 2 * b2 + 3 * b10 + 5 * b33 + 7 * b64 + 11 * b65 + 13 * b69 + 17 * b70;
}

int main(void)
{
    static const int p1 = 1000, p2 = 2000, p3 = 3000;
    for (long long k = 0; k < 3; k++) {
        long long b = 1 + k * 1000;
        printf("sum20(%lld) = %lld\n", k,
               sum20(b, b + 1, b + 2, b + 3, b + 4, b + 5, b + 6, b + 7, b + 8, b + 9, b + 10, b + 11,
                     b + 12, b + 13, b + 14, b + 15, b + 16, b + 17, b + 18, b + 19));
        printf("mix20(%lld) = %.6f\n", k,
               mix20(1 + (int)k, 2.5, 3 + k, 4.25f, &p1, 6.125, 7, 8.5f, 9 - k, 10.75, &p2, 12, 13.5,
                     14.25f, 15, 16, 17.125 * (double)k, &p3, 19.5f, 20));
        printf("vsum(%lld) = %lld\n", k,
               vsum(24, b, b + 1, b + 2, b + 3, b + 4, b + 5, b + 6, b + 7, b + 8, b + 9, b + 10,
                    b + 11, b + 12, b + 13, b + 14, b + 15, b + 16, b + 17, b + 18, b + 19, b + 20,
                    b + 21, b + 22, b + 23));
        int n = vfmt("%d %s %.3f %lld %c %x %d %s %.1f %lld %c %x %d %s %.2f %lld %c %x %d %s %.4f "
                     "%lld %c %x",
                     (int)k, "two", 3.5, 4LL + k, 'e', 0xf0 + (int)k, 7, "eight", 9.25, 10LL, 'k', 0xc,
                     13, "fourteen", 15.5 * (double)k, 16LL, 'q', 0x11, 19, "twenty", 21.0625, 22LL,
                     'w', 0x17);
        printf("vfmt(%lld) = %d \"%s\"\n", k, n, fmt_buf);
        printf("sum70(%lld) = %lld\n", k,
               sum70(b, 2, 3, 4, 5, 6, 7, 8, 9, b + 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                     22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, b + 33, 34, 35, 36, 37, 38, 39, 40,
                     41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60,
                     61, 62, 63, b + 64, 65, 66, 67, 68, b + 69, b + 70));
    }
    fflush(stdout);
    return 0;
}
