"""Real programs (tests/fixtures/fixtures.json) traced with every function
of their modules hooked behave exactly as untraced: the same stdout and
stderr byte for byte, the same exit code; and at least 97% of each
module's functions get hooked, the same ones `hookscope functions` calls
hookable in the module's file. Their counts are held against a truth of
their own: lua's and the ground truth's against -finstrument-functions
twins (tests/test_groundtruth.py), sqlite's against its twin, cmd.exe's
and hmac256.exe's (no sources to instrument) against a debugger's
breakpoints (tests/support/bpcount.c)."""
import os

import hs

MIN_HOOKED = 0.97


def read_stdin(fx):
    if not fx.get("stdin"):
        return None
    with open(os.path.join(hs.ROOT, fx["cwd"], fx["stdin"]), "rb") as f:
        return f.read()


def check_module(t, name):
    """The module was hooked (>= 97% of its functions), and the report
    agrees with `hookscope functions` on the module's file."""
    m = t.module(name)
    funcs = t.functions(name)
    hs.eq(m["functions_found"], len(funcs), f"{name}: functions_found = functions listed in the report")
    hooked = {int(f["rva"], 16) for f in funcs if f["hooked"]}
    hs.eq(m["functions_hooked"], len(hooked), f"{name}: functions_hooked = hooked functions listed")
    hs.check(m["functions_found"] > 0, f"{name}: no functions found")
    share = m["functions_hooked"] / m["functions_found"]
    hs.check(share >= MIN_HOOKED,
             f"{name}: only {m['functions_hooked']} of {m['functions_found']} functions hooked "
             f"({100 * share:.1f}% < {100 * MIN_HOOKED:.0f}%); skipped: {m['skipped']}")
    hs.eq(sum(m["skipped"].values()), m["functions_found"] - m["functions_hooked"],
          f"{name}: skip reasons add up to the functions not hooked")
    # the same classification from the file on disk (the report's path is
    # a Windows path, which hookscope under Wine reads as such)
    rows, (total, hookable) = hs.functions_listing(m["path"])
    hs.eq((total, hookable), (m["functions_found"], m["functions_hooked"]),
          f"{name}: (found, hooked) by `hookscope functions {m['path']}` vs the run")
    listed = {rva for rva, r in rows.items() if r[1]}
    hs.eq(sorted(listed ^ hooked)[:10], [], f"{name}: rvas hookable in the file but not hooked in the run, "
          "or the other way round")
    return m


def run_fixture(name, modules, out=None):
    """Run fixture `name` untraced and traced with -m for every module in
    `modules`; check exit code, stdout, stderr, expected output, and each
    module. Returns (fixture, untraced CompletedProcess, Trace)."""
    fx = hs.fixture(name)
    cwd = os.path.join(hs.ROOT, fx["cwd"])
    stdin = read_stdin(fx)
    plain = hs.wine([fx["program"]] + fx["args"], input=stdin, cwd=cwd, timeout=300)
    t = hs.trace(fx["program"], fx["args"], modules=modules, name=out or f"real_{name}", input=stdin,
                 cwd=fx["cwd"], timeout=600)
    hs.eq(plain.returncode, fx["exit_code"], "untraced exit code")
    hs.check(t.json is not None, "no report.json; stderr: " + t.stderr.decode(errors="replace"))
    hs.eq(t.rc, fx["exit_code"], "traced exit code (hookscope passes the target's through)")
    hs.eq(t.json["target"]["exit_code"], fx["exit_code"], "exit_code in report.json")
    hs.eq(t.json["target"]["stop"], "exit", "stop in report.json")
    hs.eq(t.json["target"]["crash"], None, "crash in report.json")
    hs.eq(t.stdout, plain.stdout, "traced stdout = untraced stdout, byte for byte")
    hs.eq(t.stderr, plain.stderr, "traced stderr = untraced stderr (-q: hookscope adds nothing)")
    hs.check(len(plain.stdout) > 0, "the program printed nothing")
    if fx.get("expected_stdout"):
        with open(os.path.join(hs.ROOT, fx["expected_stdout"]), "rb") as f:
            expected = f.read()
        hs.eq(t.stdout.replace(b"\r\n", b"\n"), expected, f"stdout (CRLF -> LF) vs {fx['expected_stdout']}")
    hs.eq(sorted(m["name"].lower() for m in t.json["modules"]), sorted(m.lower() for m in modules),
          "modules in the report = the -m modules")
    for mod in modules:
        check_module(t, mod)
    hs.eq(t.json["warnings"], [], "warnings")
    return fx, plain, t


BPCOUNT = "build/tests/bpcount.exe"


def against_breakpoints(fx, args, name, stdin=None, uncounted=None):
    """The program run traced with args, and again under bpcount.exe (a
    debugger that counts each hooked function's entries with int3
    breakpoints: a mechanism of its own, about 0.3 ms a call under Wine,
    hence the small workloads); every hooked function of the module must
    have the same count in both, but for the calls `uncounted` ({name: n})
    says hookscope does not count. Returns the trace."""
    uncounted = uncounted or {}
    bp = hs.need(BPCOUNT)
    cwd = os.path.join(hs.ROOT, fx["cwd"])
    t = hs.trace(fx["program"], args, modules=[fx["module"]], name=name, input=stdin, cwd=fx["cwd"], timeout=600)
    hs.eq(t.rc, fx["exit_code"], f"{name}: traced exit code ({t.stderr!r})")
    hooked = {int(f["rva"], 16): f["calls"] for f in t.functions(fx["module"]) if f["hooked"]}
    names = {int(f["rva"], 16): f["name"] for f in t.functions(fx["module"])}
    lst = os.path.join(hs.OUT, name + ".rvas")
    with open(lst, "w") as f:
        f.write("".join(f"{r:x}\n" for r in sorted(hooked)))
    p = hs.wine([os.path.relpath(os.path.join(hs.ROOT, bp), cwd), os.path.relpath(lst, cwd), fx["program"]] + args,
                input=stdin, cwd=cwd, timeout=300)
    hs.eq(p.returncode, fx["exit_code"], f"{name}: exit code under bpcount ({p.stderr!r})")
    hs.eq(p.stdout, t.stdout, f"{name}: stdout under bpcount = traced")
    with open(lst + ".out") as f:
        truth = {int(r, 16): int(c) for r, c in (line.split() for line in f)}
    hs.eq(sorted(truth), sorted(hooked), f"{name}: functions counted by bpcount")
    diff = [(hex(r), names[r], hooked[r], truth[r]) for r in sorted(hooked)
            if hooked[r] + uncounted.get(names[r], 0) != truth[r]]
    hs.eq(diff[:20], [], f"{name}: counts against bpcount's breakpoints (rva, name, hookscope, breakpoints)")
    hs.check(sum(1 for c in truth.values() if c) >= 10, f"{name}: fewer than 10 functions called")
    return t


def test_real_lua_workload():
    fx, plain, t = run_fixture("lua-workload", ["lua.exe"])
    c = t.calls("lua.exe")
    hs.eq(c["main"], 1, "calls of main")
    hs.check(t.json["total_calls"] > 1_000_000, f"total calls {t.json['total_calls']}")
    m = t.module("lua.exe")
    hs.eq((m["main"], m["loaded_late"]), (True, False), "lua.exe is the main module, loaded at start")


def test_real_lua_exit3():
    fx, plain, t = run_fixture("lua-exit3", ["lua.exe"])
    hs.eq(t.rc, 3, "exit code 3 passed through")
    hs.eq(t.calls("lua.exe")["main"], 1, "calls of main")


def test_real_groundtruth():
    fx, plain, t = run_fixture("groundtruth", ["groundtruth.exe"])
    hs.eq(t.calls("groundtruth.exe")["main"], 1, "calls of main")


def test_real_sqlite_stdin():
    """The -O2 sqlite3.exe on its workload (its code's counts are held
    against a -finstrument-functions twin of the count-preserving build in
    tests/test_groundtruth.py)."""
    fx, plain, t = run_fixture("sqlite", ["sqlite3.exe"])
    hs.eq(t.calls("sqlite3.exe")["main"], 1, "calls of main")


def test_real_cxx_with_runtime_dlls():
    mods = ["cxxdemo.exe", "libstdc++-6.dll", "libwinpthread-1.dll"]
    # libgcc_s_seh-1.dll too: it has hookable functions
    rows, (total, hookable) = hs.functions_listing(hs.need("build/fixtures/cxx/libgcc_s_seh-1.dll"))
    if hookable > 0:
        mods.append("libgcc_s_seh-1.dll")
    fx, plain, t = run_fixture("cxx", mods)
    hs.eq(t.calls("cxxdemo.exe")["main"], 1, "calls of main")
    for m in mods[1:]:
        mod = t.module(m)
        hs.eq((mod["main"], mod["loaded_late"]), (False, False), f"{m}: a DLL loaded at start")
        called = [f for f in t.functions(m) if f["calls"] > 0]
        hs.check(called, f"no function of {m} was counted")
    lib = {f["name"] for f in t.functions("libstdc++-6.dll") if f["calls"] > 0}
    hs.check(len(lib) >= 20, f"only {len(lib)} libstdc++ functions counted")


def test_real_cmd_batch():
    """Wine's cmd.exe on the workload; its counts equal a debugger's
    breakpoint counts on a smaller batch of the same commands (the loops
    shortened)."""
    fx, plain, t = run_fixture("cmd", ["cmd.exe"])
    hs.eq(t.rc, 7, "exit /b 7 passed through")
    hs.eq(t.calls("cmd.exe")["wmain"], 1, "calls of wmain")
    with open(os.path.join(hs.ROOT, "tests", "fixtures", "cmd", "workload.bat")) as f:
        bat = f.read()
    for long, short in (("(1,1,2000)", "(1,1,40)"), ("(1,1,60)", "(1,1,6)"), ("LSS 100", "LSS 10"),
                        ("call :fib 30", "call :fib 8")):
        hs.check(long in bat, f"workload.bat has no {long}")
        bat = bat.replace(long, short)
    small = os.path.join(hs.OUT, "real_cmd_small.bat")
    with open(small, "w", newline="\r\n") as f:
        f.write(bat)
    against_breakpoints(fx, ["/c", os.path.relpath(small, os.path.join(hs.ROOT, fx["cwd"]))], "real_cmd_bp")


def test_real_hmac256():
    fx, plain, t = run_fixture("hmac256", ["hmac256.exe"])
    with open(os.path.join(hs.ROOT, fx["expected_digest"]), "rb") as f:
        expected = f.read().decode().strip()
    hs.eq(len(expected), 64, "expected digest length")
    words = t.stdout.decode().split()
    hs.eq(words, [expected, "input.bin"], "traced output: '<digest>  input.bin'")
    hs.eq(t.stdout, expected.encode() + b"  input.bin\r\n", "traced stdout, exactly")
    hs.eq(t.calls("hmac256.exe")["main"], 1, "calls of main")
    # the counts against a debugger's breakpoints, on 64 KiB of input
    small = os.path.join(hs.OUT, "real_hmac256_small.bin")
    with open(small, "wb") as f:
        f.write(bytes((i * 2654435761 >> 13) & 0xFF for i in range(65536)))
    # The process's initialisation is completed by hookscope's injecting
    # thread, whose calls are not counted (README, "How it works"): the
    # exe's TLS callback __dyn_tls_init runs there for DLL_PROCESS_ATTACH,
    # and calls __mingw_TLScallback then only (mingw's tlssup.c); the main
    # thread, started afterwards, gets a DLL_THREAD_ATTACH instead, which
    # is counted, so __dyn_tls_init's count is the same and
    # __mingw_TLScallback's one less.
    tb = against_breakpoints(fx, ["hookscope", os.path.relpath(small, os.path.join(hs.ROOT, fx["cwd"]))],
                             "real_hmac256_bp", uncounted={"__mingw_TLScallback": 1})
    hs.check(tb.calls("hmac256.exe")["transform"] > 65536 // 64, "transform: a call per 64-byte block at least")
