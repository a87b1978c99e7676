/*
 * injector/trace/remote32.c - the 32-bit modules of a WOW64 process and
 * their exports (see remote32.h).
 */
#include "injector/trace/remote32.h"

#include <stdlib.h>
#include <string.h>
#include <psapi.h>
#include <wchar.h>

#include "hook/base/bytes.h"
#include "hook/base/util.h"
#include "hook/pe/pe.h"

#define FORWARD_DEPTH 4

static int read_remote(void *ctx, uint64_t addr, void *buf, size_t len)
{
    SIZE_T got = 0;
    return ReadProcessMemory((HANDLE)ctx, (void *)(uintptr_t)addr, buf, len, &got) && got == len ? 0 : -1;
}

/* Is the image at `base` of `process` an i386 one? */
static int is_i386_image(HANDLE process, uint64_t base)
{
    hs_pe pe;
    if (hs_pe_read_headers(&pe, read_remote, process, base) != HS_PE_OK)
        return 0;
    int bits = pe.bits;
    hs_pe_close(&pe);
    return bits == 32;
}

int hs_remote_module(HANDLE process, bool x86, const wchar_t *name, uint64_t *base)
{
    HMODULE mods[1024];
    DWORD needed = 0;
    if (!K32EnumProcessModulesEx(process, mods, sizeof mods, &needed, x86 ? LIST_MODULES_32BIT : LIST_MODULES_64BIT))
        return -1;
    DWORD n = needed / sizeof(HMODULE);
    for (DWORD i = 0; i < n && i < 1024; i++) {
        wchar_t file[MAX_PATH];
        if (K32GetModuleBaseNameW(process, mods[i], file, MAX_PATH) && !_wcsicmp(file, name)) {
            *base = (uint64_t)(uintptr_t)mods[i];
            return 1;
        }
    }
    return 0;
}

uint64_t hs_remote32_ntdll(HANDLE process)
{
    MEMORY_BASIC_INFORMATION m;
    uint64_t a = 0;
    /* (a 32-bit process's images lie below 4 GiB; Windows maps the 64-bit
     * ntdll of a WOW64 process above it) */
    while (a < 0x100000000ull && VirtualQueryEx(process, (void *)(uintptr_t)a, &m, sizeof m) == sizeof m) {
        uint64_t base = (uint64_t)(uintptr_t)m.BaseAddress;
        if (m.Type == MEM_IMAGE && m.AllocationBase == m.BaseAddress) {
            wchar_t path[MAX_PATH * 2];
            DWORD n = K32GetMappedFileNameW(process, m.BaseAddress, path, MAX_PATH * 2);
            const wchar_t *slash = n ? wcsrchr(path, L'\\') : NULL;
            if (slash && !_wcsicmp(slash + 1, L"ntdll.dll") && is_i386_image(process, base))
                return base;
        }
        if (base + m.RegionSize <= a)
            break;
        a = base + m.RegionSize;
    }
    return 0;
}

/* The export directory's bytes, read whole: a forwarder's text lies in it
 * (that is how one is told from code), and so, as linkers lay it out, do
 * the tables and names. */
typedef struct exports {
    uint8_t *dir;
    uint32_t rva, size;
} exports;

static const uint8_t *in_dir(const exports *x, uint32_t rva, uint32_t len)
{
    if (rva < x->rva || rva - x->rva > x->size || x->size - (rva - x->rva) < len)
        return NULL;
    return x->dir + (rva - x->rva);
}

/* The name `name`'s function rva (0 if none); *forward gets its forwarder
 * text when it is one. */
static uint32_t find_export(const exports *x, const char *name, const char **forward)
{
    const uint8_t *d = in_dir(x, x->rva, 40);
    if (!d)
        return 0;
    uint32_t nfuncs = hs_le32(d + 20), nnames = hs_le32(d + 24);
    uint32_t funcs = hs_le32(d + 28), names = hs_le32(d + 32), ords = hs_le32(d + 36);
    size_t want = strlen(name);
    for (uint32_t i = 0; i < nnames; i++) {
        const uint8_t *np = in_dir(x, names + 4 * i, 4), *op = in_dir(x, ords + 2 * i, 2);
        if (!np || !op)
            return 0;
        const uint8_t *s = in_dir(x, hs_le32(np), (uint32_t)want + 1);
        if (!s || memcmp(s, name, want + 1))
            continue;
        uint32_t ord = hs_le16(op);
        const uint8_t *fp = ord < nfuncs ? in_dir(x, funcs + 4 * ord, 4) : NULL;
        if (!fp)
            return 0;
        uint32_t rva = hs_le32(fp);
        const uint8_t *text = in_dir(x, rva, 1);
        if (text) {
            /* a forwarder: "MODULE.Name", NUL-terminated inside the directory */
            size_t left = x->size - (rva - x->rva);
            *forward = memchr(text, 0, left) ? (const char *)text : NULL;
        }
        return rva;
    }
    return 0;
}

static uint64_t export_at(HANDLE process, uint64_t base, const char *name, int depth)
{
    hs_pe pe;
    if (hs_pe_read_headers(&pe, read_remote, process, base) != HS_PE_OK)
        return 0;
    exports x = { NULL, pe.dir_rva[0], pe.dir_size[0] };
    hs_pe_close(&pe);
    if (!x.rva || x.size < 40 || x.size > (64u << 20))
        return 0;
    x.dir = malloc(x.size + 1);
    if (!x.dir || read_remote(process, base + x.rva, x.dir, x.size) < 0) {
        free(x.dir);
        return 0;
    }
    x.dir[x.size] = 0;
    const char *forward = NULL;
    uint32_t rva = find_export(&x, name, &forward);
    uint64_t addr = 0;
    if (rva && !in_dir(&x, rva, 1)) {
        addr = base + rva;
    } else if (forward && depth < FORWARD_DEPTH) {
        const char *dot = strchr(forward, '.');
        if (dot && dot != forward && dot[1] != '#' && dot - forward < MAX_PATH - 5) {
            wchar_t module[MAX_PATH];
            size_t n = 0;
            for (const char *c = forward; c < dot; c++)
                module[n++] = (wchar_t)(unsigned char)*c;
            wcscpy(module + n, L".dll");
            uint64_t next = 0;
            if (hs_remote_module(process, true, module, &next) > 0)
                addr = export_at(process, next, dot + 1, depth + 1);
        }
    }
    free(x.dir);
    return addr;
}

uint64_t hs_remote32_export(HANDLE process, uint64_t base, const char *name)
{
    return export_at(process, base, name, 0);
}
