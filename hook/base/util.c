/*
 * hook/base/util.c - the portable helpers of util.h.
 */
#include "hook/base/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _WIN32
#include <fcntl.h>
#include <io.h>
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#endif

#include "hook/base/text.h"

void hs_err(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("hookscope: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

int hs_verbose;

void hs_log(const char *fmt, ...)
{
    static double t0;
    if (!hs_verbose)
        return;
    if (t0 == 0)
        t0 = hs_now();
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "hookscope: [%7.3f s] ", hs_now() - t0);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

void hs_out_of_memory(void)
{
    fputs("hookscope: out of memory\n", stderr);
    exit(HS_EXIT_FAILED);
}

void *hs_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        hs_out_of_memory();
    return p;
}

void *hs_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        hs_out_of_memory();
    return p;
}

void *hs_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        hs_out_of_memory();
    return p;
}

char *hs_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(hs_xmalloc(n), s, n);
}

char *hs_xstrndup(const char *s, size_t n)
{
    char *d = hs_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *hs_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = hs_xmalloc(n > 0 ? (size_t)n + 1 : 1);
    va_start(ap, fmt);
    vsnprintf(s, n > 0 ? (size_t)n + 1 : 1, fmt, ap);
    va_end(ap);
    return s;
}

void hs_xgrow(void *v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return;
    size_t n = *cap ? *cap : 16;
    while (n < need)
        n *= 2;
    *(void **)v = hs_xrealloc(*(void **)v, n * size);
    *cap = n;
}

const char *hs_basename(const char *path)
{
    const char *b = path;
    for (const char *p = path; *p; p++)
        if (*p == '\\' || *p == '/')
            b = p + 1;
    return b;
}

char *hs_path_join(const char *dir, const char *name)
{
#ifdef _WIN32
    char sep = strchr(dir, '/') && !strchr(dir, '\\') ? '/' : '\\';
#else
    char sep = '/';
#endif
    size_t n = strlen(dir);
    bool ends = n && (dir[n - 1] == '/' || dir[n - 1] == '\\');
    return hs_xasprintf("%s%.*s%s", dir, n && !ends ? 1 : 0, &sep, name);
}

/* One element: the usual sizes (indices, pointers, small records) copied
 * without a call. */
static inline void copy_elem(char *dst, const char *src, size_t size)
{
    if (size == 4)
        memcpy(dst, src, 4);
    else if (size == 8)
        memcpy(dst, src, 8);
    else if (size == 16)
        memcpy(dst, src, 16);
    else
        memcpy(dst, src, size);
}

static void merge_pass(char *src, char *dst, size_t n, size_t size, size_t width,
                       int (*cmp)(const void *, const void *, void *), void *ctx)
{
    for (size_t lo = 0; lo < n; lo += 2 * width) {
        size_t mid = lo + width < n ? lo + width : n;
        size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
        size_t i = lo, j = mid, k = lo;
        while (i < mid && j < hi) {
            if (cmp(src + j * size, src + i * size, ctx) < 0)
                copy_elem(dst + k++ * size, src + j++ * size, size);
            else
                copy_elem(dst + k++ * size, src + i++ * size, size);
        }
        if (i < mid)
            memcpy(dst + k * size, src + i * size, (mid - i) * size), k += mid - i;
        if (j < hi)
            memcpy(dst + k * size, src + j * size, (hi - j) * size);
    }
}

/* Stable without memory to spare: an insertion sort (slow, but only when
 * memory is short). */
static void insertion_sort(char *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *),
                           void *ctx)
{
    char t[256];
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && cmp(base + (j - 1) * size, base + j * size, ctx) > 0; j--)
            for (size_t k = 0; k < size; k += sizeof t) {
                size_t c = size - k < sizeof t ? size - k : sizeof t;
                memcpy(t, base + (j - 1) * size + k, c);
                memcpy(base + (j - 1) * size + k, base + j * size + k, c);
                memcpy(base + j * size + k, t, c);
            }
}

void hs_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *),
             void *ctx)
{
    if (n < 2)
        return;
    /* already in order (tables built in the order of their key): done */
    size_t k = 1;
    while (k < n && cmp((char *)base + (k - 1) * size, (char *)base + k * size, ctx) <= 0)
        k++;
    if (k == n)
        return;
    char *tmp = n <= SIZE_MAX / size ? malloc(n * size) : NULL;
    if (!tmp) {
        insertion_sort(base, n, size, cmp, ctx);
        return;
    }
    char *src = base, *dst = tmp;
    for (size_t width = 1; width < n; width *= 2) {
        merge_pass(src, dst, n, size, width, cmp, ctx);
        char *t = src;
        src = dst;
        dst = t;
        if (width > SIZE_MAX / 4)
            break;
    }
    if (src != base)
        memcpy(base, src, n * size);
    free(tmp);
}

size_t hs_sort_top(void *base, size_t n, size_t size, size_t top,
                   int (*cmp)(const void *, const void *, void *), void *ctx)
{
    if (top >= n || size > 256) {
        hs_sort(base, n, size, cmp, ctx);
        return n;
    }
    /* base[0..k) holds the first k of those seen, in order; an element
     * goes after every one that is not after it, as a stable sort puts it */
    char *v = base, t[256];
    size_t k = 0;
    for (size_t i = 0; i < n && top; i++) {
        char *e = v + i * size;
        if (k == top && cmp(e, v + (k - 1) * size, ctx) >= 0)
            continue;
        size_t lo = 0, hi = k;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (cmp(e, v + mid * size, ctx) < 0)
                hi = mid;
            else
                lo = mid + 1;
        }
        memcpy(t, e, size);
        if (k < top) {
            /* base[k] (where e may be) goes to e's place, and base[k] is free */
            if (i != k)
                memcpy(e, v + k * size, size);
            k++;
        } else {
            /* the last one leaves: it goes to e's place */
            memcpy(e, v + (k - 1) * size, size);
        }
        memmove(v + (lo + 1) * size, v + lo * size, (k - 1 - lo) * size);
        memcpy(v + lo * size, t, size);
    }
    return top < n ? top : n;
}

uint8_t *hs_load_file(const char *path, size_t *size, const char **why)
{
#ifdef _WIN32
    wchar_t *w = hs_wide(path);
    unsigned long err = 0;
    uint8_t *data = hs_read_file(w, size, &err);
    free(w);
    if (!data && why)
        *why = hs_win_error(err);
    return data;
#else
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (why)
            *why = strerror(errno);
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        if (why)
            *why = "it is a directory";
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = hs_xmalloc(cap + 1);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = hs_xrealloc(buf, (cap *= 2) + 1);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        if (why)
            *why = "read error";
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *size = n;
    return buf;
#endif
}

FILE *hs_fopen(const char *path, const char *mode)
{
#ifdef _WIN32
    wchar_t *w = hs_wide(path), wm[8];
    size_t i = 0;
    for (; mode[i] && i < 7; i++)
        wm[i] = (wchar_t)mode[i];
    wm[i] = 0;
    FILE *f = _wfopen(w, wm);
    free(w);
    return f;
#else
    return fopen(path, mode);
#endif
}

FILE *hs_fopen_out(const char *path, const char **why)
{
#ifdef _WIN32
    /* one open that does not follow a reparse point at the name (the link
     * itself is opened), then what was opened is checked */
    wchar_t *w = hs_wide(path);
    HANDLE h = CreateFileW(w, GENERIC_WRITE, FILE_SHARE_READ, NULL, OPEN_ALWAYS,
                           FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
    free(w);
    if (h == INVALID_HANDLE_VALUE) {
        *why = hs_win_error(GetLastError());
        return NULL;
    }
    BY_HANDLE_FILE_INFORMATION fi;
    *why = NULL;
    if (!GetFileInformationByHandle(h, &fi))
        *why = hs_win_error(GetLastError());
    else if (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)
        *why = "it is a junction or symbolic link (never written through)";
    else if (fi.nNumberOfLinks > 1)
        *why = "it is a hard link to another file (never written through)";
    else if (!SetEndOfFile(h))
        *why = hs_win_error(GetLastError());
    int fd = *why ? -1 : _open_osfhandle((intptr_t)h, _O_WRONLY | _O_BINARY);
    FILE *f = fd >= 0 ? _fdopen(fd, "wb") : NULL;
    if (!f) {
        if (fd >= 0)
            _close(fd);
        else
            CloseHandle(h);
        if (!*why)
            *why = "cannot open it";
    }
    return f;
#else
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    struct stat st;
    *why = NULL;
    if (fd < 0)
        *why = errno == ELOOP ? "it is a symbolic link (never written through)" : strerror(errno);
    else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        *why = "it is not a regular file";
    else if (st.st_nlink > 1)
        *why = "it is a hard link to another file (never written through)";
    else if (ftruncate(fd, 0) != 0)
        *why = strerror(errno);
    FILE *f = *why ? NULL : fdopen(fd, "wb");
    if (!f && fd >= 0)
        close(fd);
    if (!f && !*why)
        *why = strerror(errno);
    return f;
#endif
}

int hs_remove_file(const char *path, const char **why)
{
#ifdef _WIN32
    wchar_t *w = hs_wide(path);
    BOOL ok = DeleteFileW(w);
    DWORD err = GetLastError();
    free(w);
    if (ok || err == ERROR_FILE_NOT_FOUND || err == ERROR_PATH_NOT_FOUND)
        return 0;
    *why = hs_win_error(err);
    return -1;
#else
    if (remove(path) == 0 || errno == ENOENT)
        return 0;
    *why = strerror(errno);
    return -1;
#endif
}

double hs_now(void)
{
#ifdef _WIN32
    static LARGE_INTEGER freq;
    LARGE_INTEGER t;
    if (!freq.QuadPart)
        QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&t);
    return (double)t.QuadPart / (double)freq.QuadPart;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
#endif
}

char *hs_utf8_n(const uint16_t *w, size_t max)
{
    size_t len = 0;
    while (len < max && w[len])
        len++;
    size_t cap = len * 3 + 1;
    char *s = hs_xmalloc(cap);
    hs_utf16le_to_utf8((const uint8_t *)w, len * 2, s, cap);
    return s;
}
