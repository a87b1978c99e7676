"""--time on 32-bit (i386) programs under Wine's WOW64: the 32-bit agent's
return probes (agent/time32.S, a shadow return stack) in a real process.
callconv.exe calls a function of each x86 calling convention (callee-popped
arguments, 64-bit and x87 results) and must print what it prints untraced,
every call timed and ended; longjmp32.exe leaves 40 timed calls by longjmp,
each counted as an unwind exit, and its entry stacks give the true return
addresses through timed callers; cxxexc32.exe throws C++ exceptions (DWARF-2)
that no return thunk may stand in the way of; attachee.exe is attached to
with --time, its agent's TLS index below 64 and past it."""
import re

import hs
from test_wow64 import out_lines, stated_output


def timed(t, module):
    """name -> (calls, unwinds, the time record) of the module's functions."""
    return {f["name"]: (f["calls"], f.get("unwinds"), f.get("time") or {}) for f in t.functions(module)}


def test_wow64_time_calling_conventions():
    hs.need_wow64()
    t = hs.trace(hs.need(f"{hs.TARGETS32}/callconv.exe"), options=["--time"], name="wow64_time_callconv")
    hs.eq((t.rc, out_lines(t)), (0, stated_output("tests/targets32/callconv.c")), "exit code and output, timed")
    fs = timed(t, "callconv.exe")
    want = {"main": 1, "cdecl_add": 10, "stdcall_mix": 20, "fastcall_mul": 30, "counter_add": 40,
            "sum_varargs": 5, "mul64": 3, "average": 2}
    got = {n: (fs[n][0], fs[n][1], fs[n][2].get("calls"), fs[n][2].get("open")) for n in want if n in fs}
    hs.eq(got, {n: (c, 0, c, 0) for n, c in want.items()}, "calls, unwinds, timed exits, open calls")
    m = fs["main"][2]
    hs.check(m["self_ns"] < m["total_ns"] == m["sum_ns"], f"main's time holds its callees' ({m})")


def test_wow64_time_longjmp_is_an_unwind():
    hs.need_wow64()
    t = hs.trace(hs.need(f"{hs.TARGETS32}/longjmp32.exe"), options=["--time"], name="wow64_time_longjmp")
    hs.eq((t.rc, out_lines(t)), (0, stated_output("tests/targets32/longjmp32.c")), "exit code and output, timed")
    fs = timed(t, "longjmp32.exe")
    got = {n: (fs[n][0], fs[n][1], fs[n][2].get("calls"), fs[n][2].get("open")) for n in ("main", "land", "dive", "work")}
    hs.eq(got, {"main": (1, 0, 1, 0), "land": (1, 0, 1, 0), "dive": (40, 40, 40, 0), "work": (10, 0, 10, 0)},
          "calls, unwinds, timed exits, open calls")
    d = fs["dive"][2]
    hs.eq(d["self_ns"], d["total_ns"], "the self times of dive's recursion add up to its outermost calls' time")


def test_wow64_time_leaves_dwarf_exceptions_alone():
    """cxxexc32.exe throws C++ exceptions (DWARF-2 unwinding, by return
    address) through two functions: under --time the functions of its
    image are counted without timing (`dwarf-exceptions`), and it runs as
    untraced (with return probes there, the first throw ends it in
    abort())."""
    hs.need_wow64()
    t = hs.trace(hs.need(f"{hs.TARGETS32}/cxxexc32.exe"), options=["--time"], name="wow64_time_cxxexc")
    hs.eq((t.rc, out_lines(t)), (0, stated_output("tests/targets32/cxxexc32.cpp")), "exit code and output, timed")
    fs = {f["name"]: f for f in t.functions("cxxexc32.exe")}
    got = {n: (fs[n]["calls"], fs[n]["entry_only"]) for n in ("catcher()", "middle(int)", "thrower(int)") if n in fs}
    hs.eq(got, {"catcher()": (1, "dwarf-exceptions"), "middle(int)": (10, "dwarf-exceptions"),
                "thrower(int)": (10, "dwarf-exceptions")}, "calls and why untimed")


def test_wow64_time_entry_stacks_see_true_returns():
    """--time with --stacks: the entry stacks walk through timed callers
    whose return address slots hold the return thunk, and give the true
    return addresses from the shadow stack (dive, called by the timed land
    and main: dive+0, land's call site, main's call site, its caller in
    the C runtime)."""
    hs.need_wow64()
    t = hs.trace(hs.need(f"{hs.TARGETS32}/longjmp32.exe"), options=["--time", "--stacks"], name="wow64_time_stacks")
    hs.eq((t.rc, out_lines(t)), (0, stated_output("tests/targets32/longjmp32.c")), "exit code and output, timed")
    fs = timed(t, "longjmp32.exe")
    hs.eq((fs["dive"][0], fs["dive"][1], fs["land"][2].get("calls")), (40, 40, 1), "dive's calls and unwinds, land timed")
    first = [s["frames"][:4] for s in t.json["stacks"] if s["function"] == "dive" and "land" in s["frames"][1]]
    hs.eq(len(first), 1, f"dive's stacks from land ({[s['frames'][:4] for s in t.json['stacks'] if s['function'] == 'dive']})")
    names = [f.split("+")[0] for f in first[0]]
    hs.eq(names, ["longjmp32.exe!dive", "longjmp32.exe!land", "longjmp32.exe!main", "longjmp32.exe!__tmainCRTStartup"],
          f"the frames of dive's entry stack ({first[0]})")


def test_wow64_time_attach():
    """`hookscope attach --time` to a running 32-bit program whose two
    workers call work() all the time, with the agent's TLS index among the
    TEB's slots and then past them (attachee.exe "tls 70": the counters in
    an expansion slot, no jump cell, the thunk returning by ret): work's
    calls are timed and ended, none by unwind, every result stays right,
    the code bytes are the file's again after the detach, and the
    program ends as untraced."""
    hs.need_wow64()
    exe = hs.need(f"{hs.TARGETS32}/attachee.exe")
    for args in ([], ["tls", "70"]):
        p = hs.Process([exe] + args)
        with p:
            m = re.fullmatch(r"pid (\d+) code-matches 1", p.readline(timeout=30) or "")
            hs.check(m, f"the attachee's first line ({args})")
            pid, linux_pid = int(m.group(1)), p.proc.pid
            t = hs.attach(pid, ["--duration", "2", "--no-sample", "--time"], name="wow64_time_attach", timeout=60)
            hs.eq((t.rc, [l for l in t.stderr.decode(errors="replace").splitlines() if l.strip()]), (0, []),
                  f"{args}: exit code and stderr")
            work = [f for f in t.functions("attachee.exe") if f["name"] == "work"][0]
            tm = work.get("time") or {}
            hs.check(work["calls"] > 1000 and tm.get("calls", 0) >= work["calls"] - 2 and work.get("unwinds") == 0,
                     f"{args}: work {work['calls']} calls, {tm.get('calls')} timed exits, {work.get('unwinds')} unwinds")
            hs.eq(hs.code_differences(linux_pid, exe, 0x400000), 0, f"{args}: code bytes after the detach")
            p.send(b"stop\n")
            m = re.fullmatch(r"bad (\d+) calls (\d+) code-matches (-?\d+)", p.readline(timeout=30) or "")
            hs.check(m, f"{args}: the attachee's last line")
            hs.eq(p.wait(timeout=30), 0, f"{args}: the attachee's exit code")
            hs.eq((int(m.group(1)), int(m.group(3))), (0, 1), f"{args}: wrong results of work, code-matches at the end")
