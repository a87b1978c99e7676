/*
 * injector/trace/session_host.c - create the session and hand it to the
 * agent (see session_host.h).
 */
#include "injector/trace/session_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "hook/base/util.h"

/* A security descriptor whose DACL allows `user` everything and nobody
 * else anything (an unnamed object cannot be opened by name anyway; the
 * DACL also covers a handle duplicated by someone who can open
 * hookscope's process). */
typedef struct owner_only {
    SECURITY_ATTRIBUTES sa;
    SECURITY_DESCRIPTOR sd;
    uint8_t acl[256];
    uint8_t user[128];
} owner_only;

static int owner_only_init(owner_only *o)
{
    memset(o, 0, sizeof *o);
    HANDLE token;
    DWORD len = 0;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token))
        return -1;
    BOOL ok = GetTokenInformation(token, TokenUser, o->user, sizeof o->user, &len);
    CloseHandle(token);
    PSID sid = ((TOKEN_USER *)o->user)->User.Sid;
    if (!ok || !InitializeAcl((ACL *)o->acl, sizeof o->acl, ACL_REVISION) ||
        !AddAccessAllowedAce((ACL *)o->acl, ACL_REVISION, GENERIC_ALL | STANDARD_RIGHTS_ALL | SPECIFIC_RIGHTS_ALL,
                             sid) ||
        !InitializeSecurityDescriptor(&o->sd, SECURITY_DESCRIPTOR_REVISION) ||
        !SetSecurityDescriptorDacl(&o->sd, TRUE, (ACL *)o->acl, FALSE) ||
        !SetSecurityDescriptorOwner(&o->sd, sid, FALSE))
        return -1;
    o->sa.nLength = sizeof o->sa;
    o->sa.lpSecurityDescriptor = &o->sd;
    o->sa.bInheritHandle = FALSE;
    return 0;
}

/* Halve *v, down to min; false when it is there already (or below: a part
 * the options do not use, 0). */
static bool halve(uint32_t *v, uint32_t min)
{
    if (*v <= min)
        return false;
    *v = *v / 2 > min ? *v / 2 : min;
    return true;
}

/* A 32-bit target maps the whole session into its 2 GiB of address space
 * (4 with /LARGEADDRESSAWARE), beside the program: the capacities are cut
 * until the view takes at most SESSION_MAX_32BIT, in the order that
 * loses least of what the program is traced for:
 * - functions, to the program's own count when it is known (`functions`,
 *   the exe's list when the exe is the one module hooked): room no
 *   function would take;
 * - threads, to 32; then with --time each thread's shadow stack, to 4096
 *   open timed calls (deeper ones run untimed, counted in time_dropped;
 *   4 MiB a thread were most of a 388 MiB session, and with --stacks too
 *   no room was left near the program for its stubs);
 * - with the program's count known, threads again, to as many as fit
 *   beside all of its functions (one at least): under --time each thread
 *   keeps a 392-byte time record per function, so a program of 20,131
 *   functions (bench's manyfuncs.exe) leaves room for 25 threads. A thread
 *   past them has no region of its own: its calls are still counted
 *   exactly (in the shared overflow region), untimed, where a function
 *   that finds no room in the table is not hooked at all;
 * - functions, to 16384, last, as a program's functions are what it is
 *   traced for: a module with more is not hooked, and the agent says so
 *   (the "function table" error). With the count known that is a program
 *   whose functions do not fit beside one thread (some 267,000 under
 *   --time): its threads are left at 32 then, as its module goes unhooked
 *   whatever they are.
 * The timeline's rings are cut after all that, and apart: a --timeline
 * run keeps the threads, functions and open calls a run without it has
 * (it hooks what that run hooks), and each thread's ring is halved while
 * the view is too large, to TL_MIN_32BIT events at least (1 MiB a thread:
 * 33 MiB more than the same run without --timeline; a full ring holds its
 * thread up until the drain, every 2 ms, has taken events,
 * --timeline-wait). Returns the session's size. */
#define SESSION_MAX_32BIT (256ull << 20)
#define SHADOW_MIN_32BIT 4096u
#define TL_MIN_32BIT (1u << 15)

static uint64_t fit_32bit(hs_session_header *L, hs_capacity *cap, long functions)
{
    const uint32_t threads = cap->threads, max_functions = cap->functions, shadow = cap->shadow,
                   timeline = cap->timeline;
    cap->timeline = 0;
    if (functions >= 0 && (uint64_t)functions < cap->functions)
        cap->functions = functions ? (uint32_t)functions : 1;
    uint64_t total = hs_session_layout(L, cap);
    while (total > SESSION_MAX_32BIT && (halve(&cap->threads, 32) || halve(&cap->shadow, SHADOW_MIN_32BIT)))
        total = hs_session_layout(L, cap);
    const uint32_t threads_before = cap->threads;
    while (functions >= 0 && total > SESSION_MAX_32BIT && cap->threads > 1) {
        cap->threads--;
        total = hs_session_layout(L, cap);
    }
    if (total > SESSION_MAX_32BIT && cap->threads != threads_before) {
        cap->threads = threads_before;
        total = hs_session_layout(L, cap);
    }
    while (total > SESSION_MAX_32BIT && halve(&cap->functions, 16384))
        total = hs_session_layout(L, cap);
    cap->timeline = timeline;
    total = hs_session_layout(L, cap);
    while (total > SESSION_MAX_32BIT && halve(&cap->timeline, TL_MIN_32BIT))
        total = hs_session_layout(L, cap);
    if (cap->threads != threads || cap->functions != max_functions || cap->shadow != shadow)
        hs_log("a 32-bit target: the session holds %u threads, %u functions and %u open timed calls a thread "
               "(not %u, %u and %u), %llu MiB", cap->threads, cap->functions, cap->shadow, threads, max_functions,
               shadow, (unsigned long long)(total >> 20));
    if (cap->timeline != timeline)
        hs_log("a 32-bit target: each thread's timeline buffer holds %u calls (not %u)", cap->timeline, timeline);
    return total;
}

int hs_session_create(hs_session_host *s, DWORD pid, const hs_trace_config *o, uint32_t options, long functions)
{
    if (o->edges)
        options |= HS_OPT_EDGES;
    if (o->stacks)
        options |= HS_OPT_STACKS;
    if (o->time)
        options |= HS_OPT_TIME;
    if (o->timeline)
        options |= HS_OPT_TIMELINE;
    wchar_t test[8];
    if (GetEnvironmentVariableW(L"HOOKSCOPE_TEST_STUCK_FREEZE", test, 8) && !wcscmp(test, L"1"))
        options |= HS_OPT_TEST_STUCK_FREEZE;
    memset(s, 0, sizeof *s);
    hs_session_header *L = &s->layout;
    hs_capacity cap = hs_default_capacity(o->max_functions, o->max_threads, options);
    if (o->timeline && o->timeline_buffer)
        cap.timeline = o->timeline_buffer;
    cap.x86_frames = o->target_bits == 32 && (options & HS_OPT_STACKS);   /* (the entry stacks' walk) */
    uint64_t total = hs_session_layout(L, &cap);
    if (o->target_bits == 32)
        total = fit_32bit(L, &cap, functions);
    L->magic = HS_SESSION_MAGIC;
    L->version = HS_SESSION_VERSION;
    L->options = options;
    L->stack_depth = o->stacks;
    L->stack_every = o->stack_every;
    L->timeline_min_ns = o->timeline_min_ns;
    L->timeline_depths = o->timeline_depth;
    /* (whole milliseconds: the agent waits in steps of one) */
    L->timeline_wait_ms = (uint32_t)((o->timeline_wait_ns + 999999) / 1000000);
    for (int i = 0; i < o->nfilters; i++) {
        char *f = hs_utf8(o->filters[i]);
        snprintf(L->filters[i], sizeof L->filters[i], "%s", f);
        free(f);
        if (o->filter_exclude[i])
            L->filter_exclude |= 1u << i;
    }
    L->n_filters = (uint32_t)o->nfilters;
    L->n_patterns = (uint32_t)o->nmodules;
    for (int i = 0; i < o->nmodules; i++) {
        size_t len = wcslen(o->modules[i]);
        memcpy(L->patterns[i], o->modules[i], len * sizeof(wchar_t));
    }
    L->injector_pid = GetCurrentProcessId();
    L->target_pid = pid;
    L->agent_state = HS_AGENT_NONE;

    owner_only sec;
    if (owner_only_init(&sec) < 0) {
        hs_err("cannot make the session private: %s", hs_win_error(GetLastError()));
        return -1;
    }
    s->mapping = CreateFileMappingW(INVALID_HANDLE_VALUE, &sec.sa, PAGE_READWRITE | SEC_RESERVE,
                                    (DWORD)(total >> 32), (DWORD)total, NULL);
    if (!s->mapping) {
        hs_err("cannot create the session (%llu bytes reserved): %s", (unsigned long long)total,
               hs_win_error(GetLastError()));
        return -1;
    }
    s->fn_request = CreateEventW(&sec.sa, FALSE, FALSE, NULL);
    s->fn_answer = CreateEventW(&sec.sa, FALSE, FALSE, NULL);
    s->view = MapViewOfFile(s->mapping, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, 0);
    if (!s->fn_request || !s->fn_answer || !s->view ||
        !VirtualAlloc(s->view, L->modules_off, MEM_COMMIT, PAGE_READWRITE)) {
        hs_err("cannot map the session: %s", hs_win_error(GetLastError()));
        hs_session_close(s);
        return -1;
    }
    s->hdr = s->view;
    *s->hdr = *L;
    return 0;
}

int hs_session_open(hs_session_host *s, HANDLE process, uint64_t handle, uint64_t agent_base)
{
    memset(s, 0, sizeof *s);
    if (!DuplicateHandle(process, (HANDLE)(uintptr_t)handle, GetCurrentProcess(), &s->mapping,
                         FILE_MAP_READ | FILE_MAP_WRITE, FALSE, 0))
        return -1;
    s->view = MapViewOfFile(s->mapping, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, 0);
    MEMORY_BASIC_INFORMATION mi;
    if (!s->view || !VirtualQuery(s->view, &mi, sizeof mi) || mi.RegionSize < sizeof(hs_session_header)) {
        hs_session_close(s);
        return -1;
    }
    /* (its layout is not this hookscope's to know: only its header is read) */
    s->layout.total_size = sizeof(hs_session_header);
    s->hdr = s->view;
    s->agent_base = agent_base;
    return 0;
}

void hs_session_close(hs_session_host *s)
{
    if (s->view)
        UnmapViewOfFile(s->view);
    if (s->mapping)
        CloseHandle(s->mapping);
    if (s->fn_request)
        CloseHandle(s->fn_request);
    if (s->fn_answer)
        CloseHandle(s->fn_answer);
    memset(s, 0, sizeof *s);
}

static int give(HANDLE process, HANDLE h, DWORD access, uint64_t *out)
{
    HANDLE there = NULL;
    if (!DuplicateHandle(GetCurrentProcess(), h, process, &there, access, FALSE, 0))
        return -1;
    *out = (uint64_t)(uintptr_t)there;
    return 0;
}

int hs_session_hand_over(hs_session_host *s, HANDLE process, uint64_t *section)
{
    uint64_t req = 0, ans = 0;
    if (give(process, s->mapping, FILE_MAP_READ | FILE_MAP_WRITE, section) < 0 ||
        give(process, s->fn_request, EVENT_MODIFY_STATE, &req) < 0 ||
        give(process, s->fn_answer, SYNCHRONIZE, &ans) < 0) {
        hs_err("cannot give the target its session: %s", hs_win_error(GetLastError()));
        return -1;
    }
    s->hdr->fn_request_event = s->layout.fn_request_event = req;
    s->hdr->fn_answer_event = s->layout.fn_answer_event = ans;
    MemoryBarrier();
    return 0;
}

/* Can the bytes at p be read (session_read's `committed`)? Pages the
 * agent committed show committed in our view too (the commit state is the
 * section's: so under Wine 8, where it was checked); a reserved range is
 * committed in our view before it is read, as far as it is wanted (were
 * the state per view, as on a system that keeps it so, that is what makes
 * the agent's pages readable here; otherwise they are zeros). */
static int committed(const void *p, uint64_t *run)
{
    uint64_t want = *run;
    MEMORY_BASIC_INFORMATION mi;
    if (!VirtualQuery(p, &mi, sizeof mi)) {
        *run = HS_PAGE - ((uintptr_t)p & (HS_PAGE - 1));
        return 0;
    }
    *run = (uint64_t)((uintptr_t)mi.BaseAddress + mi.RegionSize - (uintptr_t)p);
    if (mi.State == MEM_COMMIT)
        return !(mi.Protect & (PAGE_GUARD | PAGE_NOACCESS));
    if (mi.State != MEM_RESERVE)
        return 0;
    if (want < *run)
        *run = want;
    return hs_session_commit_ok((void *)p, *run);
}

int hs_session_commit_ok(void *p, uint64_t len)
{
    if (!len)
        return 1;
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(HS_PAGE - 1);
    uintptr_t hi = ((uintptr_t)p + len + HS_PAGE - 1) & ~(uintptr_t)(HS_PAGE - 1);
    return VirtualAlloc((void *)lo, hi - lo, MEM_COMMIT, PAGE_READWRITE) != NULL;
}

hs_session_src hs_session_host_src(const hs_session_host *s)
{
    hs_session_src src = { &s->layout, s->view, s->layout.total_size, committed };
    return src;
}

void hs_session_host_header(const hs_session_host *s, hs_session_header *out)
{
    hs_session_src src = hs_session_host_src(s);
    hs_session_header_copy(&src, out);
}
