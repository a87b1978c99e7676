/*
 * injector/trace/target.c - the target program (see target.h).
 */
#include "injector/trace/target.h"

#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "hook/base/util.h"
#include "hook/pe/pe.h"
#include "hookscope/path.h"

static int is_file(const wchar_t *p)
{
    DWORD a = GetFileAttributesW(p);
    return a != INVALID_FILE_ATTRIBUTES && !(a & FILE_ATTRIBUTE_DIRECTORY);
}

static wchar_t *full_path(const wchar_t *p)
{
    DWORD n = GetFullPathNameW(p, 0, NULL, NULL);
    if (!n)
        return NULL;
    wchar_t *out = hs_xmalloc((n + 1) * sizeof(wchar_t));
    if (!GetFullPathNameW(p, n + 1, out, NULL)) {
        free(out);
        return NULL;
    }
    return out;
}

wchar_t *hs_target_resolve(const wchar_t *name)
{
    if (!name[0])
        return NULL;
    int has_sep = wcschr(name, L'\\') || wcschr(name, L'/') || wcschr(name, L':');
    if (has_sep) {
        if (is_file(name))
            return full_path(name);
        const wchar_t *base = hs_file_name(name);
        if (!wcschr(base, L'.')) {
            size_t n = wcslen(name);
            wchar_t *with = hs_xmalloc((n + 5) * sizeof(wchar_t));
            memcpy(with, name, n * sizeof(wchar_t));
            memcpy(with + n, L".exe", 5 * sizeof(wchar_t));
            wchar_t *r = is_file(with) ? full_path(with) : NULL;
            free(with);
            return r;
        }
        return NULL;
    }
    wchar_t buf[MAX_PATH * 2];
    DWORD n = SearchPathW(NULL, name, L".exe", MAX_PATH * 2, buf, NULL);
    if (n == 0 || n >= MAX_PATH * 2 || !is_file(buf))
        return NULL;
    return full_path(buf);
}

int hs_target_check(const wchar_t *path, const char *shown, int *bits)
{
    size_t size = 0;
    unsigned long err = 0;
    uint8_t *data = hs_read_file(path, &size, &err);
    if (!data) {
        hs_err("cannot read '%s': %s", shown, hs_win_error(err));
        return -1;
    }
    hs_pe pe;
    int st = hs_pe_load_file(&pe, data, size);
    int rc = -1;
    if (st == HS_PE_NOT_PE)
        hs_err("'%s' is not a Windows program (not a PE file)", shown);
    else if (st != HS_PE_OK)
        hs_err("'%s': %s", shown, hs_pe_status_text(st));
    else if (hs_pe_is_dll(&pe))
        hs_err("'%s' is a DLL, not a program", shown);
    else
        rc = 0;
    if (rc == 0)
        *bits = pe.bits;
    if (st == HS_PE_OK)
        hs_pe_close(&pe);
    free(data);
    return rc;
}

wchar_t *hs_build_cmdline(wchar_t **argv, int argc)
{
    size_t cap = 16;
    for (int i = 0; i < argc; i++)
        cap += wcslen(argv[i]) * 2 + 3;
    wchar_t *out = hs_xmalloc(cap * sizeof(wchar_t));
    size_t n = 0;
    for (int i = 0; i < argc; i++) {
        const wchar_t *a = argv[i];
        if (i)
            out[n++] = L' ';
        if (a[0] && !wcspbrk(a, L" \t\n\v\"")) {
            size_t l = wcslen(a);
            memcpy(out + n, a, l * sizeof(wchar_t));
            n += l;
            continue;
        }
        out[n++] = L'"';
        for (const wchar_t *p = a;; p++) {
            size_t bs = 0;
            while (*p == L'\\') {
                bs++;
                p++;
            }
            if (*p == 0) {
                for (size_t k = 0; k < bs * 2; k++)
                    out[n++] = L'\\';
                break;
            }
            if (*p == L'"') {
                for (size_t k = 0; k < bs * 2 + 1; k++)
                    out[n++] = L'\\';
            } else {
                for (size_t k = 0; k < bs; k++)
                    out[n++] = L'\\';
            }
            out[n++] = *p;
        }
        out[n++] = L'"';
    }
    out[n] = 0;
    return out;
}
