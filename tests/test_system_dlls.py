"""Hooking Windows' (Wine's) own DLLs: ntdll, kernel32, kernelbase and
msvcrt together, as `pid$target:ntdll::entry` users do. The target must
behave exactly as untraced in every mode, and its own counts stay exact."""
import hs

SYSTEM = ["ntdll.dll", "kernel32.dll", "kernelbase.dll", "msvcrt.dll"]


def run_mode(options, name):
    exe = hs.need("build/tests/echo.exe")
    args = ["one", "two three", "-x", "5"]
    plain = hs.wine([exe] + args)
    t = hs.trace(exe, args, modules=["echo.exe"] + SYSTEM, options=options, name=name, timeout=600)
    hs.eq(t.rc, 5, "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    hs.eq(t.stderr, plain.stderr, "stderr")
    hs.eq(t.calls("echo.exe")["show"], 2, "calls of show")
    for m in SYSTEM:
        mod = t.module(m)
        hs.check(mod["functions_hooked"] >= 0.97 * mod["functions_found"],
                 f"{m}: {mod['functions_hooked']} of {mod['functions_found']} hooked")
        hs.check(sum(c for c in t.calls(m).values()) > 0, f"no call counted in {m}")
    return t


def test_system_dlls_counts():
    t = run_mode([], "sysdlls")
    # every call of an import thunk in echo.exe ("jmp [__imp_fputc]") lands
    # in msvcrt's function: both counts agree exactly
    exe, crt = t.calls("echo.exe"), t.calls("msvcrt.dll")
    for f in ("fputc", "__iob_func", "malloc"):
        hs.check(exe.get(f, 0) > 0, f"echo.exe!{f} not called")
        hs.eq(crt.get(f), exe.get(f), f"msvcrt.dll!{f} vs the import thunk echo.exe!{f}")


def test_system_dlls_time_and_stacks():
    t = run_mode(["--time", "--stacks=16"], "sysdlls_time")
    hs.check(t.json["stacks"], "no entry stacks captured")
    # main was timed (wrapped) and returned
    main = [f for f in t.functions("echo.exe") if f["name"] == "main"][0]
    hs.eq(main["time"]["calls"], 1, "main timed once")
