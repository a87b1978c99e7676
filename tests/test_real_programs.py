"""Real programs (tests/fixtures/fixtures.json) traced with every function
of their modules hooked behave exactly as untraced: the same stdout and
stderr byte for byte, the same exit code; and at least 97% of each
module's functions get hooked, the same ones `hookscope functions` calls
hookable in the module's file."""
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


def counts_by_rva(t, module):
    return {f["rva"]: f["calls"] for f in t.functions(module)}


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
    fx, plain, t = run_fixture("sqlite", ["sqlite3.exe"])
    hs.eq(t.calls("sqlite3.exe")["main"], 1, "calls of main")
    # sqlite is deterministic: a second traced run counts every function the same
    t2 = hs.trace(fx["program"], fx["args"], modules=["sqlite3.exe"], name="real_sqlite_2",
                  input=read_stdin(fx), cwd=fx["cwd"], timeout=600)
    hs.eq(t2.stdout, plain.stdout, "second traced run: stdout")
    a, b = counts_by_rva(t, "sqlite3.exe"), counts_by_rva(t2, "sqlite3.exe")
    diff = [(r, a[r], b.get(r)) for r in a if a[r] != b.get(r)]
    hs.eq(diff[:10], [], "functions counted differently by two traced runs (rva, run 1, run 2)")


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
    fx, plain, t = run_fixture("cmd", ["cmd.exe"])
    hs.eq(t.rc, 7, "exit /b 7 passed through")
    hs.eq(t.calls("cmd.exe")["wmain"], 1, "calls of wmain")
    t2 = hs.trace(fx["program"], fx["args"], modules=["cmd.exe"], name="real_cmd_2", cwd=fx["cwd"],
                  timeout=600)
    hs.eq((t2.rc, t2.stdout), (7, plain.stdout), "second traced run: exit code and stdout")
    a, b = counts_by_rva(t, "cmd.exe"), counts_by_rva(t2, "cmd.exe")
    diff = [(r, a[r], b.get(r)) for r in a if a[r] != b.get(r)]
    hs.eq(diff[:10], [], "functions counted differently by two traced runs (rva, run 1, run 2)")


def test_real_hmac256():
    fx, plain, t = run_fixture("hmac256", ["hmac256.exe"])
    with open(os.path.join(hs.ROOT, fx["expected_digest"]), "rb") as f:
        expected = f.read().decode().strip()
    hs.eq(len(expected), 64, "expected digest length")
    words = t.stdout.decode().split()
    hs.eq(words, [expected, "input.bin"], "traced output: '<digest>  input.bin'")
    hs.eq(t.stdout, expected.encode() + b"  input.bin\r\n", "traced stdout, exactly")
    hs.eq(t.calls("hmac256.exe")["main"], 1, "calls of main")
    t2 = hs.trace(fx["program"], fx["args"], modules=["hmac256.exe"], name="real_hmac256_2",
                  cwd=fx["cwd"], timeout=600)
    a, b = counts_by_rva(t, "hmac256.exe"), counts_by_rva(t2, "hmac256.exe")
    diff = [(r, a[r], b.get(r)) for r in a if a[r] != b.get(r)]
    hs.eq(diff[:10], [], "functions counted differently by two traced runs (rva, run 1, run 2)")
