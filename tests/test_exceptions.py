"""C++ exceptions through hooked frames (tests/targets/cxxexc.cpp).

Under --time every function of the target gets a wrapper frame between
it and its caller. Exceptions must still reach the right catch, run
every destructor on the way, leave the catching frame's callee-saved
registers intact (the target checks them itself and prints the result),
and each call that ends by an exception must be counted as an unwind of
exactly that function.
"""
import hs

EXE = "build/tests/cxxexc.exe"

# function: (calls, calls that end by an exception), from the scenarios in
# cxxexc.cpp's main:
#   direct(7)   catch_direct -> thrower throws          thrower unwinds
#   no throw    catch_direct -> thrower returns
#   two_up(8)   catch_two_up -> mid_frame -> thrower    both unwind
#   self(21)    self_catch throws and catches itself    returns normally
#   nested      catch_nested -> lvl1 -> lvl2 -> lvl3 -> lvl4 throws: all four unwind
#   rethrow     catch_rethrow -> rethrower -> thrower; rethrower catches and
#               rethrows: both unwind
#   recurse(49) catch_recurse -> recurse x50, the deepest throws: all 50 unwind
#   loop(100)   loop_two_up -> catch_two_up x100 (as two_up)
# and main calls regs_call once per scenario (8 times).
EXPECTED = {
    "main": (1, 0),
    "regs_call": (8, 0),
    "catch_direct": (2, 0),
    "thrower": (1 + 1 + 1 + 1 + 100, 1 + 1 + 1 + 100),
    "catch_two_up": (101, 0),
    "mid_frame": (101, 101),
    "self_catch": (1, 0),
    "catch_nested": (1, 0),
    "lvl1": (1, 1),
    "lvl2": (1, 1),
    "lvl3": (1, 1),
    "lvl4": (1, 1),
    "catch_rethrow": (1, 0),
    "rethrower": (1, 1),
    "catch_recurse": (1, 0),
    "recurse": (50, 50),
    "loop_two_up": (1, 0),
}


def plain_run():
    exe = hs.need(EXE)
    plain = hs.wine([exe])
    hs.eq(plain.returncode, 0, "untraced exit code")
    out = plain.stdout.decode()
    hs.check("all ok" in out and "destructors run: 261" in out, f"untraced output: {out[-300:]}")
    return exe, plain


def check_exact(t, module="cxxexc.exe"):
    funcs = {f["name"]: f for f in t.functions(module)}
    for name, (calls, unwinds) in EXPECTED.items():
        f = funcs.get(name)
        hs.check(f is not None, f"{name} not in the report")
        hs.check(f["hooked"], f"{name} not hooked: {f['skip_reason']}")
        hs.eq(f["entry_only"], None, f"{name} has the timing wrapper")
        hs.eq(f["calls"], calls, f"calls of {name}")
        tm = f["time"]
        hs.eq(tm["calls"], calls, f"exits of {name} (returns + unwinds)")
        hs.eq(tm["open"], 0, f"calls of {name} still open")
        hs.eq(f["unwinds"], unwinds, f"unwinds of {name}")
        hs.eq(sum(b["count"] for b in tm["hist"]), calls, f"histogram entries of {name}")
    hs.eq(t.json["time_dropped"], 0, "time_dropped")


def test_cxx_exceptions_through_wrapped_frames():
    exe, plain = plain_run()
    t = hs.trace(exe, options=["--time"], name="cxxexc_time")
    hs.eq(t.rc, 0, "exit code (1 would mean a register check failed)")
    hs.eq(t.stdout, plain.stdout, "stdout: catches, destructors and register checks as untraced")
    hs.eq(t.stderr, plain.stderr, "stderr")
    check_exact(t)


def test_cxx_exceptions_with_stacks():
    """--time and an entry stack on every call: the stack walks run inside
    the same frames the exceptions go through."""
    exe, plain = plain_run()
    t = hs.trace(exe, options=["--time", "--stacks=16"], name="cxxexc_time_stacks")
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    check_exact(t)
    hs.eq(t.json["stacks_dropped"], 0, "stacks dropped")
    captured = {}
    for s in t.json["stacks"]:
        captured[s["function"]] = captured.get(s["function"], 0) + s["count"]
    for name, (calls, _) in EXPECTED.items():
        hs.eq(captured.get(name, 0), calls, f"stacks captured for {name}")
    # frame 1 of every thrower stack is one of its three callers
    callers = set()
    for s in t.json["stacks"]:
        if s["function"] == "thrower":
            callers.add(s["frames"][1].split("!")[1].split("+")[0])
    hs.eq(callers, {"catch_direct", "mid_frame", "rethrower"}, "callers of thrower in its stacks")


def test_cxx_exceptions_counting_only():
    """Without --time (entry stubs only, edges on) nothing changes either."""
    exe, plain = plain_run()
    t = hs.trace(exe, name="cxxexc_count")
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    calls = t.calls("cxxexc.exe")
    for name, (n, _) in EXPECTED.items():
        hs.eq(calls[name], n, f"calls of {name}")
    edges = {(e["caller"], e["callee"]): e["calls"] for e in t.json["edges"]}
    hs.eq(edges[("mid_frame", "thrower")], 101, "edge mid_frame -> thrower")
    hs.eq(edges[("recurse", "recurse")], 49, "edge recurse -> recurse")


def test_cxx_exceptions_with_the_runtime_hooked():
    """The exception machinery itself hooked and timed: libstdc++
    (__cxa_throw, the personality routine) and libgcc (_Unwind_*,
    _GCC_specific_handler). Every throw ends __cxa_throw by unwinding."""
    exe, plain = plain_run()
    t = hs.trace(exe, modules=["cxxexc.exe", "libstdc++-6.dll", "libgcc_s_seh-1.dll"],
                 options=["--time"], name="cxxexc_runtime", timeout=600)
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    check_exact(t)
    lib = {f["name"]: f for f in t.functions("libstdc++-6.dll")}
    throws = 103 + 1 + 1 + 1   # thrower, lvl4, self_catch, recurse
    f = lib["__cxa_throw"]
    hs.eq(f["entry_only"], None, "__cxa_throw is wrapped")
    hs.eq(f["calls"], throws, "__cxa_throw calls")
    hs.eq(f["unwinds"], throws, "__cxa_throw never returns: every call is unwound")
    gcc = {f["name"]: f for f in t.functions("libgcc_s_seh-1.dll")}
    hs.eq(gcc["_Unwind_Resume_or_Rethrow"]["calls"], 1, "one rethrow")
    hs.eq(gcc["_Unwind_Resume_or_Rethrow"]["unwinds"], 1, "the rethrow does not return")
    hs.check(gcc["_Unwind_Resume"]["calls"] > 0 and
             gcc["_Unwind_Resume"]["unwinds"] == gcc["_Unwind_Resume"]["calls"],
             f"_Unwind_Resume never returns: {gcc['_Unwind_Resume']['calls']} calls, "
             f"{gcc['_Unwind_Resume']['unwinds']} unwinds")
