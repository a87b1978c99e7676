/*
 * cyg_profile.c - ground-truth call counter for -finstrument-functions builds.
 *
 * Link this file (compiled WITHOUT -finstrument-functions) into a program
 * whose own sources were compiled WITH -finstrument-functions. gcc then calls
 * __cyg_profile_func_enter(fn, call_site) at the entry of every instrumented
 * function; this file counts, exactly:
 *
 *   - calls per function        (key: fn)
 *   - calls per edge            (key: call_site, fn)
 *
 * and writes them to a text file when the process exits. hookscope's counts
 * for the non-instrumented twin of the program are compared against these.
 *
 * Output
 * ------
 * File: %HS_CYG_OUT% if set and non-empty, else "cyg-counts.txt" in the
 * current directory. Under Wine a relative path or a Windows path is safest
 * (a Unix absolute path such as /tmp/x works while the cwd is on drive Z:).
 * Lines, all numbers relative to the exe's image base (GetModuleHandle(NULL),
 * i.e. __ImageBase of the exe this file is linked into):
 *
 *   F <fn_rva_hex> <count>
 *   E <call_site_rva_hex> <fn_rva_hex> <count>
 *
 * hex is lowercase without 0x, count is decimal. F lines come first, sorted
 * by rva; then E lines sorted by (call_site, fn). call_site is the return
 * address in the caller (what gcc passes), so it points just *after* the
 * call instruction. A call site outside the exe image (a callback called
 * from a DLL, e.g. msvcrt's qsort calling a comparator, or a thread start
 * routine called by kernel32) is reported as the pseudo site "ffffffff".
 * If anything was lost (a table full, fn outside the image) one extra line
 * "# dropped <n>" is written at the end; it never appears in normal use.
 *
 * When the file is written
 * ------------------------
 * A constructor (priority 101, i.e. before the program's own constructors)
 * registers the dump with atexit(). atexit handlers run in reverse order of
 * registration, so the dump runs after main returns or exit() is called, and
 * after every atexit handler, C++ static destructor and gcc destructor that
 * was registered later - which is practically all of them. Counting itself
 * needs no initialisation, so calls from constructors that run before ours
 * are counted too. A TLS callback dumps at DLL_PROCESS_DETACH when the
 * atexit path did not run (the program called ExitProcess or _exit
 * directly) - on Windows; Wine 8 does not call an exe's TLS callbacks at
 * process exit (checked), so under Wine those exits write no file. The dump
 * happens once.
 *
 * Not captured: calls made after the dump (atexit handlers registered before
 * ours, code still running in other threads, the CRT's own shutdown);
 * anything when the process is killed (TerminateProcess, a crash) - then no
 * file is written at all. Exits are not counted (__cyg_profile_func_exit is
 * empty): longjmp and exceptions skip them.
 *
 * Hot path rules: the hooks call no CRT and no Win32 function, take no lock
 * and allocate nothing. Tables are preallocated (.bss), open addressing with
 * linear probing; a slot is claimed with one 64-bit compare-and-swap and
 * counted with an atomic add, so concurrent threads never lose a count.
 * Keys are built from 32-bit RVAs: fn for F, (site << 32 | fn) for E; an RVA
 * of a function is never 0, so 0 marks an empty slot.
 */
#include <windows.h>
#include <stdint.h>
#include <stdlib.h>

#define NOINSTR __attribute__((no_instrument_function))

#define FN_BITS    16                 /* 65536 functions            */
#define EDGE_BITS  18                 /* 262144 (site, fn) edges    */
#define EXTERNAL_SITE 0xffffffffull

struct hs_cyg_slot {
    uint64_t key;
    uint64_t count;
};

static struct hs_cyg_slot hs_cyg_fn_tab[1u << FN_BITS];
static struct hs_cyg_slot hs_cyg_edge_tab[1u << EDGE_BITS];
static uint64_t hs_cyg_dropped;
static LONG hs_cyg_dump_done;
static uint32_t hs_cyg_image_size_cache;

extern unsigned char __ImageBase[]; /* linker-provided: the exe's base */

/* ------------------------------------------------------------------------ */
/* hot path                                                                  */

static NOINSTR inline uint32_t hs_cyg_image_size(void)
{
    uint32_t n = __atomic_load_n(&hs_cyg_image_size_cache, __ATOMIC_RELAXED);
    if (n == 0) {
        const unsigned char *base = __ImageBase;
        const IMAGE_DOS_HEADER *dos = (const IMAGE_DOS_HEADER *)base;
        const IMAGE_NT_HEADERS *nt =     /* the build's own width: PE32 or PE32+ */
            (const IMAGE_NT_HEADERS *)(base + dos->e_lfanew);
        n = nt->OptionalHeader.SizeOfImage;
        __atomic_store_n(&hs_cyg_image_size_cache, n, __ATOMIC_RELAXED);
    }
    return n;
}

static NOINSTR inline uint64_t hs_cyg_mix64(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    return x;
}

static NOINSTR void hs_cyg_bump(struct hs_cyg_slot *tab, uint64_t mask, uint64_t key)
{
    uint64_t i = hs_cyg_mix64(key) & mask;
    for (uint64_t n = 0; n <= mask; n++, i = (i + 1) & mask) {
        uint64_t k = __atomic_load_n(&tab[i].key, __ATOMIC_ACQUIRE);
        if (k == 0) {
            uint64_t expected = 0;
            if (__atomic_compare_exchange_n(&tab[i].key, &expected, key, 0,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                k = key;
            else
                k = expected;
        }
        if (k == key) {
            __atomic_fetch_add(&tab[i].count, 1, __ATOMIC_RELAXED);
            return;
        }
    }
    __atomic_fetch_add(&hs_cyg_dropped, 1, __ATOMIC_RELAXED);
}

NOINSTR void __cyg_profile_func_enter(void *fn, void *call_site)
{
    uint64_t base = (uint64_t)(uintptr_t)__ImageBase;
    uint64_t size = hs_cyg_image_size();
    uint64_t f = (uint64_t)(uintptr_t)fn - base;
    uint64_t s = (uint64_t)(uintptr_t)call_site - base;

    if (f == 0 || f >= size) {
        __atomic_fetch_add(&hs_cyg_dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    if (s >= size)
        s = EXTERNAL_SITE;
    hs_cyg_bump(hs_cyg_fn_tab, (1u << FN_BITS) - 1, f);
    hs_cyg_bump(hs_cyg_edge_tab, (1u << EDGE_BITS) - 1, (s << 32) | f);
}

NOINSTR void __cyg_profile_func_exit(void *fn, void *call_site)
{
    (void)fn;
    (void)call_site;
}

/* ------------------------------------------------------------------------ */
/* dump (runs once, at exit; uses only kernel32)                             */

struct hs_cyg_rec {
    uint64_t key;
    uint64_t count;
};

/* heapsort by key: no CRT, no recursion, O(n log n) */
static NOINSTR void hs_cyg_sift(struct hs_cyg_rec *a, size_t root, size_t n)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && a[c + 1].key > a[c].key)
            c++;
        if (a[root].key >= a[c].key)
            return;
        struct hs_cyg_rec t = a[root];
        a[root] = a[c];
        a[c] = t;
        root = c;
    }
}

static NOINSTR void hs_cyg_sort_recs(struct hs_cyg_rec *a, size_t n)
{
    if (n < 2)
        return;
    for (size_t i = n / 2; i-- > 0;)
        hs_cyg_sift(a, i, n);
    for (size_t end = n - 1; end > 0; end--) {
        struct hs_cyg_rec t = a[0];
        a[0] = a[end];
        a[end] = t;
        hs_cyg_sift(a, 0, end);
    }
}

static NOINSTR size_t hs_cyg_collect(const struct hs_cyg_slot *tab, size_t nslots, struct hs_cyg_rec *out)
{
    size_t n = 0;
    for (size_t i = 0; i < nslots; i++) {
        uint64_t k = __atomic_load_n(&tab[i].key, __ATOMIC_ACQUIRE);
        uint64_t c = __atomic_load_n(&tab[i].count, __ATOMIC_RELAXED);
        if (k != 0 && c != 0) {
            out[n].key = k;
            out[n].count = c;
            n++;
        }
    }
    return n;
}

struct hs_cyg_outbuf {
    HANDLE h;
    char buf[1 << 16];
    size_t len;
    int failed;
};

static NOINSTR void hs_cyg_ob_flush(struct hs_cyg_outbuf *o)
{
    size_t off = 0;
    while (off < o->len && !o->failed) {
        DWORD wrote = 0;
        if (!WriteFile(o->h, o->buf + off, (DWORD)(o->len - off), &wrote, NULL) || wrote == 0)
            o->failed = 1;
        off += wrote;
    }
    o->len = 0;
}

static NOINSTR void hs_cyg_ob_putc(struct hs_cyg_outbuf *o, char c)
{
    if (o->len == sizeof o->buf)
        hs_cyg_ob_flush(o);
    o->buf[o->len++] = c;
}

static NOINSTR void hs_cyg_ob_puts(struct hs_cyg_outbuf *o, const char *s)
{
    while (*s)
        hs_cyg_ob_putc(o, *s++);
}

static NOINSTR void hs_cyg_ob_hex(struct hs_cyg_outbuf *o, uint64_t v)
{
    char t[17];
    int n = 0;
    do {
        t[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    while (n)
        hs_cyg_ob_putc(o, t[--n]);
}

static NOINSTR void hs_cyg_ob_dec(struct hs_cyg_outbuf *o, uint64_t v)
{
    char t[21];
    int n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        hs_cyg_ob_putc(o, t[--n]);
}

static NOINSTR void hs_cyg_dump(void)
{
    if (InterlockedExchange(&hs_cyg_dump_done, 1) != 0)
        return;

    const size_t nfn = 1u << FN_BITS, nedge = 1u << EDGE_BITS;
    SIZE_T bytes = (nfn + nedge) * sizeof(struct hs_cyg_rec) + sizeof(struct hs_cyg_outbuf);
    unsigned char *mem = VirtualAlloc(NULL, bytes, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
    if (!mem)
        return;
    struct hs_cyg_rec *fns = (struct hs_cyg_rec *)mem;
    struct hs_cyg_rec *edges = fns + nfn;
    struct hs_cyg_outbuf *o = (struct hs_cyg_outbuf *)(edges + nedge);

    size_t nf = hs_cyg_collect(hs_cyg_fn_tab, nfn, fns);
    size_t ne = hs_cyg_collect(hs_cyg_edge_tab, nedge, edges);
    hs_cyg_sort_recs(fns, nf);
    hs_cyg_sort_recs(edges, ne);

    WCHAR path[MAX_PATH + 1];
    DWORD plen = GetEnvironmentVariableW(L"HS_CYG_OUT", path, MAX_PATH + 1);
    if (plen == 0 || plen > MAX_PATH)
        lstrcpyW(path, L"cyg-counts.txt");

    o->h = CreateFileW(path, GENERIC_WRITE, FILE_SHARE_READ, NULL, CREATE_ALWAYS,
                       FILE_ATTRIBUTE_NORMAL, NULL);
    if (o->h == INVALID_HANDLE_VALUE) {
        VirtualFree(mem, 0, MEM_RELEASE);
        return;
    }
    for (size_t i = 0; i < nf; i++) {
        hs_cyg_ob_puts(o, "F ");
        hs_cyg_ob_hex(o, fns[i].key);
        hs_cyg_ob_putc(o, ' ');
        hs_cyg_ob_dec(o, fns[i].count);
        hs_cyg_ob_putc(o, '\n');
    }
    for (size_t i = 0; i < ne; i++) {
        hs_cyg_ob_puts(o, "E ");
        hs_cyg_ob_hex(o, edges[i].key >> 32);
        hs_cyg_ob_putc(o, ' ');
        hs_cyg_ob_hex(o, edges[i].key & 0xffffffffull);
        hs_cyg_ob_putc(o, ' ');
        hs_cyg_ob_dec(o, edges[i].count);
        hs_cyg_ob_putc(o, '\n');
    }
    uint64_t d = __atomic_load_n(&hs_cyg_dropped, __ATOMIC_RELAXED);
    if (d) {
        hs_cyg_ob_puts(o, "# hs_cyg_dropped ");
        hs_cyg_ob_dec(o, d);
        hs_cyg_ob_putc(o, '\n');
    }
    hs_cyg_ob_flush(o);
    CloseHandle(o->h);
    VirtualFree(mem, 0, MEM_RELEASE);
}

static NOINSTR void hs_cyg_atexit(void)
{
    hs_cyg_dump();
}

__attribute__((constructor(101))) static NOINSTR void hs_cyg_init(void)
{
    hs_cyg_image_size();
    atexit(hs_cyg_atexit);
}

/* Fallback for ExitProcess/_exit: Windows also calls the exe's TLS
 * callbacks at process detach (Wine 8 does not). mingw-w64's CRT links the
 * TLS directory (_tls_used) into every exe and runs the callbacks placed
 * in the .CRT$XL? sections, in name order. */
static NOINSTR void WINAPI hs_cyg_tls(PVOID module, DWORD reason, PVOID reserved)
{
    (void)module;
    (void)reserved;
    if (reason == DLL_PROCESS_DETACH)
        hs_cyg_dump();
}

extern const IMAGE_TLS_DIRECTORY _tls_used;
__attribute__((used)) static const void *const hs_cyg_tls_ref = &_tls_used;
__attribute__((used, section(".CRT$XLY"))) const PIMAGE_TLS_CALLBACK hs_cyg_tls_cb = hs_cyg_tls;
