"""hookscope run: the target behaves as untraced, counts are exact."""
import time

import hs


def test_passthrough_args_stdin_exit_code():
    exe = hs.need("build/tests/echo.exe")
    args = ["plain", "with space", 'quo"te', "back\\slash\\", "", "-x", "7", "-i"]
    data = b"line one\nline two\x00binary\xff\n" * 100
    plain = hs.wine([exe] + args, input=data)
    t = hs.trace(exe, args, input=data, name="passthrough")
    hs.eq(plain.returncode, 7, "untraced exit code")
    hs.eq(t.rc, 7, "traced exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    hs.eq(t.stderr, plain.stderr, "stderr (with -q hookscope adds nothing)")
    hs.eq(t.json["target"]["exit_code"], 7, "exit_code in report.json")
    hs.eq(t.json["target"]["args"], args, "args in report.json")
    hs.eq(t.calls("echo.exe")["show"], 5, "calls of show")


def test_report_schema():
    exe = hs.need("build/tests/echo.exe")
    t = hs.trace(exe, ["x"], name="schema")
    j = t.json
    hs.eq(j["version"], 1)
    for k in ("path", "args", "pid", "exit_code"):
        hs.check(k in j["target"], f"target.{k} missing")
    hs.check(j["target"]["path"].lower().endswith("echo.exe"), "target path")
    hs.check(isinstance(j["target"]["pid"], int) and j["target"]["pid"] > 0, "pid")
    hs.eq(len(j["modules"]), 1, "one module by default")
    m = j["modules"][0]
    for k in ("name", "path", "base", "size", "functions_found", "functions_hooked"):
        hs.check(k in m, f"modules[].{k} missing")
    hs.eq(m["name"], "echo.exe")
    hs.check(m["base"].startswith("0x"), "base is hex text")
    # functions of other modules the samples found are listed too ("traced": false)
    listed = [f for f in j["functions"] if f.get("traced", True)]
    hs.eq(m["functions_found"], len(listed), "functions_found = listed functions of the traced module")
    hs.eq(m["functions_hooked"], sum(1 for f in listed if f["hooked"]), "functions_hooked")
    for f in j["functions"]:
        for k in ("module", "name", "rva", "size", "hooked", "skip_reason", "calls"):
            hs.check(k in f, f"functions[].{k} missing in {f}")
        hs.check(f["rva"].startswith("0x"), "rva is hex text")
    for f in listed:
        hs.check((f["skip_reason"] is None) == f["hooked"], f"skip_reason iff not hooked: {f}")
    names = {f["name"] for f in j["functions"]}
    for n in ("main", "show"):
        hs.check(n in names, f"{n} not named")
    txt = t.txt
    hs.check("echo.exe" in txt and "calls" in txt and "function" in txt, "report.txt table header")
    hs.check(any(l.split()[:2] == ["1", "show"] for l in txt.splitlines()), "report.txt row for show")


def ackermann_calls(m, n):
    calls = 0
    stack = [m]
    # iterative Ackermann that counts calls of the recursive definition
    def ack(m, n):
        nonlocal calls
        calls += 1
        if m == 0:
            return n + 1
        if n == 0:
            return ack(m - 1, 1)
        return ack(m - 1, ack(m, n - 1))
    ack(m, n)
    return calls


def test_demo_exact_counts():
    exe = hs.need("build/examples/demo.exe")
    plain = hs.wine([exe])
    t = hs.trace(exe, name="demo")
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    c = t.base_calls("demo.exe")
    fib = [0, 1]
    for i in range(30):
        fib.append(fib[-1] + fib[-2])
    hs.eq(c["fib"], 2 * fib[25] - 1, "fib(24) calls")
    hs.eq(c["is_even"], 501, "is_even")
    hs.eq(c["is_odd"], 501, "is_odd")
    hs.eq(c["ackermann"], ackermann_calls(2, 3), "ackermann")
    hs.eq(c["evaluate"], 4, "evaluate")
    hs.eq(c["apply_all"], 5, "apply_all")
    for op in ("op_square", "op_negate", "op_double"):
        hs.eq(c[op], 5, op)
    hs.eq(c["split_words"], 1, "split_words")
    hs.eq(c["main"], 1, "main")
    words = ("the quick brown fox jumps over the lazy dog, the dog sleeps; "
             "a fox is quick. the end").replace(",", " ").replace(";", " ").replace(".", " ").split()
    hs.eq(c["hash_word"], len(words), "hash_word")


def test_threads_exact():
    exe = hs.need("build/tests/threads4.exe")
    t = hs.trace(exe, name="threads4", timeout=600)
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.calls("threads4.exe")["work"], 4_000_000, "calls of work")
    hs.eq(t.calls("threads4.exe")["worker"], 4, "calls of worker")
    # (a region is handed on when its thread ended: a worker that starts after
    # another ended takes its region, so count the regions taken and reused)
    taken = t.json["threads"] + t.json["regions_reused"]
    hs.check(taken >= 4, f"at least 4 threads given regions, got {t.json['threads']} regions, "
             f"{t.json['regions_reused']} reused")
    hs.eq(t.json["overflow_calls"], 0, "no overflow")


def test_threads_overflow_still_exact():
    """With one counter region only, the other threads count through the
    shared overflow region: slower, still exact."""
    exe = hs.need("build/tests/threads4.exe")
    t = hs.trace(exe, options=["--max-threads", "1"], name="threads4_overflow", timeout=900)
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.calls("threads4.exe")["work"], 4_000_000, "calls of work")
    hs.check(t.json["overflow_calls"] >= 3_000_000, f"overflow calls {t.json['overflow_calls']}")


def test_crash_survival():
    exe = hs.need("build/tests/crash.exe")
    start = time.time()
    t = hs.trace(exe, name="crash", timeout=120)
    hs.check(time.time() - start < 60, "hookscope took too long after the crash")
    hs.eq(t.json["target"]["exit_code"], 0xC0000005, "exit code in the report")
    hs.eq(t.json["target"]["stop"], "crash")
    hs.eq(t.rc, 0xC0000005 & 0xFF, "hookscope's exit status (Wine keeps the low byte)")
    hs.eq(t.calls("crash.exe")["f"], 1000, "calls of f")
    err = t.stderr.decode(errors="replace")
    hs.check("hookscope: the target crashed: 0xC0000005 (access violation)" in err, f"crash line in {err!r}")
    hs.check("crashed: 0xC0000005 (access violation)" in t.txt, "crash in report.txt")


def test_duration_stops_endless_target():
    exe = hs.need("build/tests/loop.exe")
    start = time.time()
    t = hs.trace(exe, options=["--duration", "3"], name="duration", timeout=120)
    took = time.time() - start
    hs.check(took < 40, f"took {took:.0f} s")
    hs.eq(t.rc, 0, "exit code after --duration")
    hs.eq(t.json["target"]["stop"], "duration")
    hs.eq(t.json["target"]["exit_code"], None, "no exit code: hookscope stopped it")
    hs.check(t.calls("loop.exe")["tick"] >= 1000, "tick counted")
    hs.eq(t.stdout, b"looping\r\n", "stdout (text mode)")


def test_cxx_with_libstdcxx():
    exe = hs.need("build/tests/cxxbasic.exe")
    plain = hs.wine([exe])
    t = hs.trace(exe, modules=["cxxbasic.exe", "libstdc++-6.dll"], name="cxxbasic", timeout=600)
    hs.eq(t.rc, plain.returncode, "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout byte-identical")
    m = t.module("libstdc++-6.dll")
    hs.check(m["functions_hooked"] > 0.9 * m["functions_found"],
             f"libstdc++ hooked {m['functions_hooked']} of {m['functions_found']}")
    lib = {f["name"]: f["calls"] for f in t.functions("libstdc++-6.dll") if f["calls"] > 0}
    hs.check(len(lib) >= 10, f"only {len(lib)} libstdc++ functions were called")
    # map<string,int>: operator[] compares strings; ostream insertion is called per line
    hs.check(any("std::ostream" in n or "basic_ostream" in n for n in lib),
             "no ostream function counted: " + ", ".join(sorted(lib)[:20]))
    exe_calls = t.calls("cxxbasic.exe")
    hs.eq(exe_calls["main"], 1, "main")
