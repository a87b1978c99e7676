/*
 * zstdwork: Zstandard's compressor and decompressor at work, from the
 * fixture's libzstd.dll (build/fixtures/zstd, -O2 code without frame
 * pointers), for sampled stacks through optimised code of a DLL.
 *
 *   zstdwork.exe DLL ROUNDS   loads DLL, then ROUNDS times compresses 1 MB
 *                             of generated text (level 3) and decompresses
 *                             it; prints "zstdwork rounds R in B out C ok"
 *                             (exit 1 if a round trip differs, 2 if the DLL
 *                             or one of its functions is missing)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

typedef size_t (*compress_fn)(void *, size_t, const void *, size_t, int);
typedef size_t (*decompress_fn)(void *, size_t, const void *, size_t);
typedef size_t (*bound_fn)(size_t);
typedef unsigned (*is_error_fn)(size_t);

#define INPUT_SIZE (1u << 20)

/* Text of repeated words with a pseudo-random order: compressible, but
 * not trivially. */
__attribute__((noinline)) static void make_input(unsigned char *p, size_t n)
{
    static const char *words[] = {"sample", "stack", "frame", "hook", "caller", "callee",
                                  "unwind", "thread", "profile", "count", "window", "clock"};
    unsigned long long x = 88172645463325252ull;
    size_t i = 0;
    while (i < n) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const char *w = words[x % 12];
        while (*w && i < n)
            p[i++] = (unsigned char)*w++;
        if (i < n)
            p[i++] = (x >> 20) % 9 ? ' ' : '\n';
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: zstdwork.exe DLL ROUNDS\n");
        return 2;
    }
    HMODULE dll = LoadLibraryA(argv[1]);
    if (!dll) {
        fprintf(stderr, "zstdwork: cannot load %s (error %lu)\n", argv[1], GetLastError());
        return 2;
    }
    compress_fn compress = (compress_fn)(void *)GetProcAddress(dll, "ZSTD_compress");
    decompress_fn decompress = (decompress_fn)(void *)GetProcAddress(dll, "ZSTD_decompress");
    bound_fn bound = (bound_fn)(void *)GetProcAddress(dll, "ZSTD_compressBound");
    is_error_fn is_error = (is_error_fn)(void *)GetProcAddress(dll, "ZSTD_isError");
    if (!compress || !decompress || !bound || !is_error) {
        fprintf(stderr, "zstdwork: %s lacks ZSTD_compress, ZSTD_decompress, ZSTD_compressBound or ZSTD_isError\n",
                argv[1]);
        return 2;
    }
    int rounds = atoi(argv[2]);
    unsigned char *in = malloc(INPUT_SIZE), *back = malloc(INPUT_SIZE);
    size_t cap = bound(INPUT_SIZE);
    unsigned char *packed = malloc(cap);
    if (!in || !back || !packed)
        return 2;
    make_input(in, INPUT_SIZE);
    size_t out = 0;
    for (int r = 0; r < rounds; r++) {
        size_t c = compress(packed, cap, in, INPUT_SIZE, 3);
        if (is_error(c))
            return 1;
        size_t d = decompress(back, INPUT_SIZE, packed, c);
        if (is_error(d) || d != INPUT_SIZE || memcmp(in, back, INPUT_SIZE))
            return 1;
        out = c;
    }
    printf("zstdwork rounds %d in %u out %zu ok\n", rounds, INPUT_SIZE, out);
    return 0;
}
