/*
 * sampler/suspend/modules_win.c - the modules loaded in the target, from its own
 * loader list (EnumProcessModulesEx, read from outside), into the code
 * map: new ones are read (headers, .pdata), the ones no longer listed are
 * marked unloaded. Works without any agent in the target (--no-hooks).
 *
 * A WOW64 target's 32-bit modules are the ones its 32-bit code runs in
 * (LIST_MODULES_32BIT; on Windows its 64-bit ntdll and wow64*.dll are
 * listed too otherwise). Their paths are what the 32-bit program sees:
 * the system directory for DLLs that the file-system redirector serves
 * from SysWOW64, so hookscope (64-bit, not redirected) would read the
 * 64-bit DLL of that name for their symbols; such a path is named in
 * SysWOW64 instead (under Wine 8 too: a 32-bit program's ntdll.dll is
 * listed as C:\windows\system32\ntdll.dll; the 32-bit agent records
 * them so too). An i386 image's frame data for the x86 walker (gcc's
 * `.eh_frame` in that file, and the FPO and FrameData records of its
 * PDB, through the sampler's pdb_frames) is read once, when it is first
 * listed.
 */
#include "sampler/suspend/modules_win.h"

#include <psapi.h>
#include <stdlib.h>

#include "hook/base/util.h"
#include "hook/pe/pe.h"
#include "hook/unwind/cfi32.h"

/* An i386 image's frame data, from its file's call-frame information
 * and its PDB (once). */
static void read_frames(hs_codemap *m, hs_image *im, const wchar_t *path, const char *upath)
{
    size_t size = 0;
    uint8_t *data = hs_read_file(path, &size, NULL);
    hs_pe pe;
    hs_cfi32 *cfi = NULL;
    if (data && hs_pe_load_file(&pe, data, size) == HS_PE_OK) {
        if (pe.size_of_image == im->size || !im->size)
            cfi = hs_cfi32_from_pe(&pe);
        hs_pe_close(&pe);
    }
    free(data);
    hs_codemap_set_frames(m, im, cfi, hs_codemap_pdb_frames(m, upath));
}

void hs_target_module_add(hs_codemap *m, int bits, uint64_t base, uint32_t size, const char *path, bool agent)
{
    wchar_t *w = hs_wide(path ? path : "");
    wchar_t *wow = bits == 32 ? hs_wow64_file(w) : NULL;
    const wchar_t *file = wow ? wow : w;
    char *u = wow ? hs_utf8(wow) : NULL;
    hs_image *im = hs_codemap_add_image(m, base, size, u ? u : path ? path : "", agent);
    if (im && bits == 32 && !im->frames_tried && !agent)
        read_frames(m, im, file, u ? u : path ? path : "");
    free(u);
    free(wow);
    free(w);
}

int hs_target_modules(HANDLE process, int bits, hs_codemap *m, uint64_t agent_base)
{
    HMODULE fixed[512], *mods = fixed;
    DWORD need = 0, which = bits == 32 ? LIST_MODULES_32BIT : LIST_MODULES_ALL;
    if (!EnumProcessModulesEx(process, mods, sizeof fixed, &need, which))
        return -1;
    if (need > sizeof fixed) {
        mods = hs_xmalloc(need);
        if (!EnumProcessModulesEx(process, mods, need, &need, which)) {
            free(mods);
            return -1;
        }
    }
    size_t n = need / sizeof *mods;
    hs_codemap_begin_enum(m);
    for (size_t i = 0; i < n; i++) {
        MODULEINFO mi;
        if (!GetModuleInformation(process, mods[i], &mi, sizeof mi))
            continue;
        wchar_t path[MAX_PATH * 2];
        DWORD len = GetModuleFileNameExW(process, mods[i], path, MAX_PATH * 2);
        if (!len)
            continue;
        char *u = hs_utf8(path);
        uint64_t base = (uint64_t)(uintptr_t)mi.lpBaseOfDll;
        hs_target_module_add(m, bits, base, mi.SizeOfImage, u, agent_base && base == agent_base);
        free(u);
    }
    hs_codemap_sweep(m);
    if (mods != fixed)
        free(mods);
    return (int)n;
}
