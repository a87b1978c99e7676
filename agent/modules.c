/*
 * agent/modules.c - which modules to hook: the exe when no -m is given,
 * else every loaded module whose file name matches a -m pattern, now and
 * whenever one is loaded later (LdrRegisterDllNotification).
 */
#include <string.h>
#include <wchar.h>

#include "agent/agent.h"
#include "hook/engine/filter.h"
#include "hook/pe/pe.h"

/* after windows.h (agent/agent.h) */
#include <psapi.h>

/* Index of the first -m pattern matching `path`'s file name, or -1
 * (hs_module_matches: case-insensitive, the extension may be left out). */
int hs_pattern_match(const wchar_t *path)
{
    hs_session_header *h = g_hs.hdr;
    char name[HS_PATH_LEN * 3], pat[HS_PATTERN_LEN * 3];
    if (!WideCharToMultiByte(CP_UTF8, 0, hs_file_name(path), -1, name, sizeof name, NULL, NULL))
        return -1;
    for (uint32_t i = 0; i < h->n_patterns && i < HS_MAX_PATTERNS; i++) {
        const wchar_t *p = hs_file_name((const wchar_t *)h->patterns[i]);
        if (WideCharToMultiByte(CP_UTF8, 0, p, -1, pat, sizeof pat, NULL, NULL) &&
            hs_module_matches(name, pat))
            return (int)i;
    }
    return -1;
}

static int already_hooked(uint64_t base)
{
    for (size_t i = 0; i < g_hs.n_mods; i++)
        if (g_hs.mods[i].base == base && !g_hs.mods[i].unloaded && !g_hs.mods[i].retired)
            return 1;
    return 0;
}

/* Modules recorded in the session without hooks (so that callers and
 * stack frames in them can be named after the target is gone). */
static uint64_t recorded[HS_MAX_RECORDED];
static size_t n_recorded;

static int already_recorded(uint64_t base)
{
    for (size_t i = 0; i < n_recorded; i++)
        if (recorded[i] == base)
            return 1;
    return 0;
}

/* Record a module we do not hook: path, base, size, timestamp. */
static void record_only(HMODULE module, const wchar_t *path, uint32_t flags)
{
    uint64_t base = (uint64_t)(uintptr_t)module;
    if (already_recorded(base) || n_recorded == HS_MAX_RECORDED)
        return;
    uint32_t timestamp = 0, size = hs_pe_mapped_size(module, &timestamp);
    uint32_t i = hs_session_add_module(path, base, size, flags, -1);
    if (i != UINT32_MAX) {
        hs_session_module(g_hs.view, i)->timestamp = timestamp;
        recorded[n_recorded++] = base;
    }
}

/* Hook `module` if the configuration asks for it; record it anyway. */
static void consider(HMODULE module, const wchar_t *path, int late)
{
    hs_session_header *h = g_hs.hdr;
    int is_main = module == GetModuleHandleW(NULL);
    int pattern = hs_pattern_match(path);
    uint32_t flags = (is_main ? HS_MOD_MAIN : 0) | (late ? HS_MOD_LATE : 0);
    EnterCriticalSection(&g_hs.install_lock);
    if (module == g_hs.self)
        record_only(module, path, HS_MOD_AGENT);
    else if (pattern < 0 && !(is_main && h->n_patterns == 0))
        record_only(module, path, flags);
    else if (!already_hooked((uint64_t)(uintptr_t)module)) {
        if (pattern >= 0)
            h->pattern_matched |= 1u << pattern;
        hs_install_module(module, path, flags, pattern);
    }
    LeaveCriticalSection(&g_hs.install_lock);
}

/* ---- LdrRegisterDllNotification ------------------------------------------- */

typedef struct hs_unicode_string {
    USHORT Length, MaximumLength;
    PWSTR Buffer;
} hs_unicode_string;

typedef struct hs_dll_notification_data {
    ULONG Flags;
    const hs_unicode_string *FullDllName;
    const hs_unicode_string *BaseDllName;
    PVOID DllBase;
    ULONG SizeOfImage;
} hs_dll_notification_data;

typedef VOID (CALLBACK *hs_dll_notify_fn)(ULONG reason, const hs_dll_notification_data *data, PVOID ctx);
typedef LONG (NTAPI *hs_register_fn)(ULONG flags, hs_dll_notify_fn cb, PVOID ctx, PVOID *cookie);

#define HS_DLL_LOADED 1
#define HS_DLL_UNLOADED 2

static BOOLEAN (NTAPI *dll_shutdown_in_progress)(void);

static int shutting_down(void)
{
    return dll_shutdown_in_progress && dll_shutdown_in_progress();
}

static VOID CALLBACK on_dll(ULONG reason, const hs_dll_notification_data *d,
                            PVOID ctx __attribute__((unused)))
{
    if (!g_hs.hdr || g_hs.hdr->stop_requested)
        return;
    void *prev = hs_agent_enter();
    if (reason == HS_DLL_LOADED && d && d->FullDllName && d->FullDllName->Buffer) {
        wchar_t path[HS_PATH_LEN];
        size_t len = d->FullDllName->Length / sizeof(wchar_t);
        if (len >= HS_PATH_LEN)
            len = HS_PATH_LEN - 1;
        memcpy(path, d->FullDllName->Buffer, len * sizeof(wchar_t));
        path[len] = 0;
        /* the detours first: a detour laid over a hook would be lost when
         * the hook is taken out */
        EnterCriticalSection(&g_hs.install_lock);
        hs_ending_module_loaded();
        LeaveCriticalSection(&g_hs.install_lock);
        consider((HMODULE)d->DllBase, path, 1);
    } else if (reason == HS_DLL_UNLOADED && d && !shutting_down()) {
        /* (at process exit every DLL is "unloaded": that is not FreeLibrary) */
        uint64_t base = (uint64_t)(uintptr_t)d->DllBase;
        hs_stackwalk_forget(base);
        EnterCriticalSection(&g_hs.install_lock);
        for (size_t i = 0; i < n_recorded; i++)
            if (recorded[i] == base)
                recorded[i] = 0;   /* may be loaded again, elsewhere or here */
        for (size_t i = 0; i < g_hs.n_mods; i++) {
            if (g_hs.mods[i].base == base && !g_hs.mods[i].unloaded && !g_hs.mods[i].retired) {
                g_hs.mods[i].hooked = 0;
                g_hs.mods[i].unloaded = 1;
                hs_session_module(g_hs.view, g_hs.mods[i].index)->flags |= HS_MOD_UNLOADED;
            }
        }
        LeaveCriticalSection(&g_hs.install_lock);
    }
    hs_agent_leave(prev);
}

void hs_modules_reset(void)
{
    for (size_t i = 0; i < g_hs.n_mods; i++)
        g_hs.mods[i].retired = 1;
    n_recorded = 0;
}

void hs_modules_stop(void)
{
    typedef LONG (NTAPI *unregister_fn)(PVOID cookie);
    if (!g_hs.dll_cookie)
        return;
    unregister_fn unreg = (unregister_fn)(void (*)(void))GetProcAddress(
        GetModuleHandleW(L"ntdll.dll"), "LdrUnregisterDllNotification");
    if (unreg)
        unreg(g_hs.dll_cookie);
    g_hs.dll_cookie = NULL;
}

int hs_modules_init(void)
{
    HMODULE mods[1024];
    DWORD needed = 0;
    if (!K32EnumProcessModules(GetCurrentProcess(), mods, sizeof mods, &needed)) {
        hs_agent_fail((int)GetLastError(), "cannot list the target's modules");
        return -1;
    }
    DWORD n = needed / sizeof(HMODULE);
    if (n > 1024)
        n = 1024;
    /* every module loaded now is patched under one freeze: either all
     * their hooks go in, or none */
    size_t first = g_hs.n_mods;
    g_hs.defer_patch = 1;
    for (DWORD i = 0; i < n; i++) {
        wchar_t path[HS_PATH_LEN];
        DWORD len = GetModuleFileNameW(mods[i], path, HS_PATH_LEN);
        if (len == 0 || len >= HS_PATH_LEN)
            continue;
        consider(mods[i], path, 0);
    }
    g_hs.defer_patch = 0;
    int rc = 0;
    EnterCriticalSection(&g_hs.install_lock);
    size_t count = g_hs.n_mods - first;
    if (count) {
        hs_mod_state *list[HS_MAX_RECORDED];
        if (count > HS_MAX_RECORDED)
            count = HS_MAX_RECORDED;
        for (size_t i = 0; i < count; i++)
            list[i] = &g_hs.mods[first + i];
        uint64_t t0 = hs_rdtsc();
        rc = hs_patch_modules(list, count, 1);
        for (size_t i = 0; i < count; i++)
            hs_install_mark(list[i], rc);
        g_hs.hdr->install_step_ticks[HS_STEP_PATCH] += hs_rdtsc() - t0;
    }
    LeaveCriticalSection(&g_hs.install_lock);
    if (rc < 0)
        return -1;   /* nothing was patched; the error text says why */
    dll_shutdown_in_progress = (BOOLEAN (NTAPI *)(void))(void (*)(void))GetProcAddress(
        GetModuleHandleW(L"ntdll.dll"), "RtlDllShutdownInProgress");
    hs_register_fn reg = (hs_register_fn)(void (*)(void))GetProcAddress(
        GetModuleHandleW(L"ntdll.dll"), "LdrRegisterDllNotification");
    if (reg)
        reg(0, on_dll, NULL, &g_hs.dll_cookie);
    return 0;
}
