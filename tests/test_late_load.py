"""Modules loaded after main starts (LoadLibraryW), unloaded and loaded
again: tests/targets/lateload.c with tests/targets/latedll.c.

What hookscope does (found with these tests): the DLL is hooked from the
load notification before its DllMain runs; after FreeLibrary its module
entry is marked unloaded; the second LoadLibraryW is hooked again and
reported as a second module entry of the same name (same path and base),
so the counts of a function are the sum over both entries."""
import hs

EXE = "build/tests/lateload.exe"
EXPECTED_STDOUT = (b"first load: sum 760761 product 900849429 polys 100\r\n"
                   b"unloaded 1\r\n"
                   b"second load: sum 5500\r\n"
                   b"bad 0\r\n")


def entries(t):
    return [m for m in t.json["modules"] if m["name"].lower() == "latedll.dll"]


def per_entry_calls(t, m):
    """{name: calls} of the functions of one module entry (the report lists
    an entry's functions together, in module order)."""
    funcs = t.functions("latedll.dll")
    i = t.json["modules"].index(m)
    before = sum(x["functions_found"] for x in t.json["modules"][:i] if x["name"].lower() == "latedll.dll")
    return {f["name"]: f["calls"] for f in funcs[before:before + m["functions_found"]]}


def trace_lateload(name):
    exe = hs.need(EXE)
    hs.need("build/tests/latedll.dll")
    plain = hs.wine([exe])
    t = hs.trace(exe, modules=["latedll.dll"], name=name)
    hs.eq(plain.returncode, 0, "untraced exit code")
    hs.eq(plain.stdout, EXPECTED_STDOUT, "untraced stdout")
    hs.eq(t.rc, 0, "traced exit code")
    hs.eq(t.stdout, plain.stdout, "traced stdout = untraced")
    hs.eq(t.stderr, plain.stderr, "traced stderr = untraced")
    return t


def test_late_loaded_dll_counts_across_unload_and_reload():
    t = trace_lateload("lateload")
    ms = entries(t)
    hs.eq([m["name"].lower() for m in t.json["modules"]], ["latedll.dll"] * len(ms),
          "only latedll.dll is hooked (not the exe)")
    hs.check(ms, "latedll.dll is not in the report")
    for m in ms:
        hs.eq((m["loaded_late"], m["main"]), (True, False), "loaded_late, main")
        hs.eq(m["functions_hooked"], m["functions_found"], "every function of latedll.dll hooked")
        hs.check(m["functions_found"] >= 3, "functions found")
    # over both loads: dll_add 1234 + 5 (in dll_poly) + 10, dll_mul 77 + 2 * 5, dll_poly 5
    c = t.calls("latedll.dll")
    hs.eq((c["dll_add"], c["dll_mul"], c["dll_poly"]), (1249, 87, 5),
          "calls of dll_add, dll_mul, dll_poly over both loads")
    # each load is its own module entry
    hs.eq(len(ms), 2, "module entries for latedll.dll (one per load)")
    first, second = ms
    hs.eq(first["unloaded"], True, "the first copy is marked unloaded")
    hs.eq((first["path"], first["base"]), (second["path"], second["base"]), "same file and base again")
    c1, c2 = per_entry_calls(t, first), per_entry_calls(t, second)
    hs.eq((c1["dll_add"], c1["dll_mul"], c1["dll_poly"]), (1239, 87, 5), "first load")
    hs.eq((c2["dll_add"], c2["dll_mul"], c2["dll_poly"]), (10, 0, 0), "second load")
    # the first copy's DllMain: hooked before it ran (attach) and still at FreeLibrary (detach)
    hs.eq(c1["DllMain"], 2, "DllMain of the first copy (process attach + detach)")
    # dll_poly's calls were made by the first copy (the second never calls
    # it), at the same addresses as the second copy's: the edges name the
    # first copy as the caller
    inner = sorted((e["caller"], e["callee"], e["calls"], e["caller_module_id"], e["callee_module_id"])
                   for e in t.json["edges"] if e["caller"] == "dll_poly")
    hs.eq(inner, [("dll_poly", "dll_add", 5, first["id"], first["id"]),
                  ("dll_poly", "dll_mul", 10, first["id"], first["id"])],
          "edges from dll_poly (caller, callee, calls, caller module id, callee module id)")


def test_unloaded_flag_only_for_freelibrary():
    """"unloaded" means FreeLibrary'd while tracing. Wine 8 also delivers
    LDR_DLL_NOTIFICATION_REASON_UNLOADED for every DLL during process
    shutdown (RtlDllShutdownInProgress() is TRUE then); those DLLs stayed
    loaded until the end and must not be reported unloaded (a regression
    test: agent/modules.c ignores the notifications during shutdown)."""
    t = trace_lateload("lateload_unloaded_flag")
    ms = entries(t)
    hs.eq(len(ms), 2, "module entries for latedll.dll")
    hs.eq([m["unloaded"] for m in ms], [True, False],
          "unloaded: the first copy (FreeLibrary'd) yes, the second (loaded until exit) no")
    # the same with a DLL the exe imports and never frees
    exe = hs.need("build/tests/cxxbasic.exe")
    t = hs.trace(exe, modules=["libstdc++-6.dll"], name="unloaded_flag_static_dll")
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.module("libstdc++-6.dll")["unloaded"], False, "libstdc++-6.dll (imported, never freed): unloaded")


def test_entry_stacks_through_a_dll_replaced_at_its_base():
    """relayload.exe loads relay1.dll, calls relay(ping), frees it, then
    the same with relay2.dll at the same base, whose relay returns from ping
    to the same address behind a bigger frame (tests/targets/relaydll.c).
    ping's entry stack is ping, relay, through, main, ... both times: what
    the stack walk kept of relay1's frame at that address goes with it."""
    exe = hs.need("build/tests/relayload.exe")
    hs.need("build/tests/relay1.dll")
    hs.need("build/tests/relay2.dll")
    plain = hs.wine([exe])
    hs.eq((plain.returncode, plain.stdout), (0, b"one base: 1\r\npings: 2\r\n"), "untraced exit code, stdout")
    t = hs.trace(exe, options=["--stacks=8"], name="relayload_stacks")
    hs.eq((t.rc, t.stdout, t.stderr), (0, plain.stdout, plain.stderr), "traced exit code, stdout, stderr")

    def function(frame):
        return frame.split("!", 1)[1].rsplit("+", 1)[0] if "!" in frame else frame

    pings = [s for s in t.json["stacks"] if s["function"] == "ping"]
    hs.eq(sum(s["count"] for s in pings), 2, "ping's entry stacks captured")
    for s in pings:
        hs.eq([function(f) for f in s["frames"][:4]], ["ping", "relay", "through", "main"],
              f"ping's entry stack {s['frames']}")
