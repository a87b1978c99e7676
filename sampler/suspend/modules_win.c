/*
 * sampler/suspend/modules_win.c - the modules loaded in the target, from its own
 * loader list (EnumProcessModulesEx, read from outside), into the code
 * map: new ones are read (headers, .pdata), the ones no longer listed are
 * marked unloaded. Works without any agent in the target (--no-hooks).
 */
#include "sampler/suspend/modules_win.h"

#include <psapi.h>
#include <stdlib.h>

#include "hook/base/util.h"

int hs_target_modules(HANDLE process, hs_codemap *m, uint64_t agent_base)
{
    HMODULE fixed[512], *mods = fixed;
    DWORD need = 0;
    if (!EnumProcessModulesEx(process, mods, sizeof fixed, &need, LIST_MODULES_ALL))
        return -1;
    if (need > sizeof fixed) {
        mods = hs_xmalloc(need);
        if (!EnumProcessModulesEx(process, mods, need, &need, LIST_MODULES_ALL)) {
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
        hs_codemap_add_image(m, base, mi.SizeOfImage, u, agent_base && base == agent_base);
        free(u);
    }
    hs_codemap_sweep(m);
    if (mods != fixed)
        free(mods);
    return (int)n;
}
