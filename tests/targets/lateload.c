/*
 * lateload: loads latedll.dll with LoadLibraryW after main has started,
 * calls its functions a known number of times, unloads it, loads it again
 * and calls dll_add 10 more times (the second copy stays loaded until the
 * process exits). Calls, by function, over both loads:
 *   dll_add  1234 + 5 (inside dll_poly) + 10 = 1249
 *   dll_mul  77 + 2 * 5 (inside dll_poly)     = 87
 *   dll_poly 5
 * Prints every result and whether the DLL was really gone in between;
 * exits 0 when every result was right, 1 otherwise.
 */
#include <stdio.h>
#include <windows.h>

typedef long long (*binop_fn)(long long, long long);
typedef long long (*unop_fn)(long long);

static int bad;

static HMODULE load(binop_fn *add, binop_fn *mul, unop_fn *poly)
{
    HMODULE m = LoadLibraryW(L"latedll.dll");
    if (!m) {
        printf("cannot load latedll.dll (%lu)\n", GetLastError());
        return NULL;
    }
    *add = (binop_fn)(void (*)(void))GetProcAddress(m, "dll_add");
    *mul = (binop_fn)(void (*)(void))GetProcAddress(m, "dll_mul");
    *poly = (unop_fn)(void (*)(void))GetProcAddress(m, "dll_poly");
    if (!*add || !*mul || !*poly) {
        printf("latedll.dll lacks an export\n");
        return NULL;
    }
    return m;
}

int main(void)
{
    binop_fn add, mul;
    unop_fn poly;
    if (GetModuleHandleW(L"latedll.dll")) {
        printf("latedll.dll is loaded before main\n");
        return 1;
    }
    HMODULE m = load(&add, &mul, &poly);
    if (!m)
        return 1;

    long long sum = 0, expect = 0;
    for (int i = 0; i < 1234; i++) {
        sum = add(sum, i);
        expect += i;
    }
    if (sum != expect)
        bad++;
    long long prod = 1;
    for (int i = 0; i < 77; i++) {
        long long p = mul(prod, 3);
        if (p != prod * 3)
            bad++;
        prod = p % 1000000007;
    }
    long long polys = 0;
    for (long long x = 1; x <= 5; x++) {
        long long p = poly(x);
        if (p != x * x + 3 * x)
            bad++;
        polys += p;
    }
    printf("first load: sum %lld product %lld polys %lld\n", sum, prod, polys);
    fflush(stdout);

    if (!FreeLibrary(m)) {
        printf("FreeLibrary failed (%lu)\n", GetLastError());
        return 1;
    }
    printf("unloaded %d\n", GetModuleHandleW(L"latedll.dll") == NULL);

    m = load(&add, &mul, &poly);
    if (!m)
        return 1;
    long long sum2 = 0;
    for (int i = 1; i <= 10; i++)
        sum2 = add(sum2, i * 100);
    if (sum2 != 5500)
        bad++;
    printf("second load: sum %lld\n", sum2);
    printf("bad %d\n", bad);
    return bad != 0;
}
