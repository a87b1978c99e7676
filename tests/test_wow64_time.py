"""--time on 32-bit (i386) programs under Wine's WOW64: the 32-bit agent's
return probes (agent/time32.S, a shadow return stack) in a real process.
callconv.exe calls a function of each x86 calling convention (callee-popped
arguments, 64-bit and x87 results) and must print what it prints untraced,
every call timed and ended; longjmp32.exe leaves 40 timed calls by longjmp,
each counted as an unwind exit, and its entry stacks give the true return
addresses through timed callers; cxxexc32.exe throws C++ exceptions (DWARF-2)
that no return thunk may stand in the way of; attachee.exe is attached to
with --time, its agent's TLS index below 64 and past it. With --timeline
(the return thunk writes each timed call into the thread's ring), callconv.exe
and the ground-truth program run as untraced, their timeline's calls the
timed calls exactly, checked as test_timeline and test_firefox check x64's."""
import os
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


def test_wow64_time_hooks_every_function_of_a_large_program():
    """The 32-bit session is sized by the program's own function count: the
    i686 manyfuncs.exe (bench's 20,000 generated functions and its C
    runtime's, more than the 16,384 a 32-bit session held when its count
    was not known) runs under --time with every function `hookscope
    functions` lists hooked, by address, prints what it prints untraced,
    and each function it called is timed (ended but the C runtime's start
    and exit()); the session keeps fewer threads instead (-v says how
    many)."""
    hs.need_wow64()
    exe = hs.need("build/bench32/manyfuncs.exe")
    rows, (total, hookable) = hs.functions_listing(exe)
    hs.check(hookable > 16384, f"manyfuncs.exe has more functions than 16,384 ({hookable} hookable)")
    plain = hs.wine([exe])
    t = hs.trace(exe, options=["--time", "--no-sample", "-v"], name="wow64_time_manyfuncs")
    hs.eq((t.rc, t.stdout), (0, plain.stdout), "exit code and output, timed")
    m = t.module("manyfuncs.exe")
    hs.eq((m["functions_found"], m["functions_hooked"]), (total, hookable), "functions found and hooked")
    hs.eq(sorted(int(f["rva"], 16) for f in t.functions("manyfuncs.exe") if f["hooked"]),
          sorted(rva for rva, r in rows.items() if r[1]), "the functions hooked, by address")
    called = {f["name"]: (f["calls"], f["time"]["calls"], f["time"]["open"]) for f in t.functions("manyfuncs.exe")
              if f["calls"]}
    hs.check(len(called) > 50, f"functions called: {len(called)}")
    hs.eq({n: c for n, c in called.items() if c[1] + c[2] != c[0]}, {}, "calls not timed")
    # (the C runtime's start and exit() never return)
    hs.eq(sorted(n for n, c in called.items() if c[2]), ["__tmainCRTStartup", "exit", "mainCRTStartup"],
          "functions still open at the end")
    err = t.stderr.decode(errors="replace")
    hs.check(re.search(rf"the session holds \d+ threads, {total} functions", err),
             f"the session holds the program's functions: {err}")


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


def check_timeline(t, module, what):
    """The --timeline files of a 32-bit run, as test_timeline and
    test_firefox check them on x64: nothing dropped; per timed function
    its trace.json events, its profile.firefox.json markers and its
    timeline.bin calls are its hook count (calls ended and open at the
    end), their ticks adding up to --time's sum; in timeline.bin every
    call lies inside the call around it on its thread, one level deeper,
    the outermost at depth 0; profile.firefox.json passes the checker.
    Returns timeline.bin's calls that ended, by thread."""
    import collections
    import json
    import os
    import sys
    sys.path.insert(0, os.path.join(hs.ROOT, "tests", "support"))
    import gecko_profile
    from test_firefox import calls_by_thread
    from test_timeline import calls_of, read_timeline
    tl = t.json["timeline"]
    hs.eq([(th["dropped_buffer"], th["dropped_file"], th.get("filtered", 0)) for th in tl["threads"]],
          [(0, 0, 0)] * len(tl["threads"]), f"{what}: nothing dropped or left out")
    trace = json.loads(t.file("trace.json"))
    by_name, _ = calls_of(trace)
    doc = json.loads(t.file("profile.firefox.json"))
    gecko_profile.check(doc)
    markers = collections.Counter()
    for (_, name), v in calls_by_thread(doc).items():
        markers[name] += len(v)
    path = os.path.join(hs.ROOT, t.out, "timeline.bin")
    closed, opened = read_timeline(path), read_timeline(path, open_calls=True)
    names = {}
    for f in t.json["functions"]:
        names[(f["module_id"], int(f["rva"], 16))] = f["name"]
    fname = [names.get((m, rva)) for m, rva in tl["functions"]]
    in_bin = collections.Counter(fname[e[3]] for evs in list(closed.values()) + list(opened.values()) for e in evs)
    ticks = collections.Counter()
    for evs in closed.values():
        for e in evs:
            ticks[fname[e[3]]] += e[2]
    # (trace.json keeps the 100,000 longest calls at most: all of them below that)
    all_in_trace = sum(f["calls"] for f in t.functions(module) if f.get("time")) <= 100000
    timed = 0
    for f in t.functions(module):
        tm = f.get("time")
        if not tm:
            hs.eq((len(by_name.get(f["name"], [])), in_bin[f["name"]]), (0, 0), f"{what}: {f['name']} untimed: no event")
            continue
        in_trace = len(by_name.get(f["name"], []))
        got = (in_trace if all_in_trace else max(in_trace, f["calls"]), markers[f["name"]], in_bin[f["name"]])
        hs.eq(got, (f["calls"],) * 3, f"{what}: {f['name']}: trace.json events, markers, timeline.bin calls = hook count")
        hs.eq(tm["calls"] + tm["open"], f["calls"], f"{what}: {f['name']}: timed exits and open calls")
        timed += f["calls"]
        if not tm["open"]:
            hs.check(abs(ticks[f["name"]] * 1e9 / tl["tsc_hz"] - tm["sum_ns"]) <= f["calls"] + 1,
                     f"{what}: {f['name']}: ticks add up to sum_ns {tm['sum_ns']}")
    hs.check(timed > 0, f"{what}: timed calls on the timeline")
    in_trace = sum(len(v) for v in by_name.values())
    if all_in_trace:
        hs.eq(in_trace, timed, f"{what}: trace.json's calls")
    else:
        other = trace["otherData"]
        hs.check(other["calls"] == timed and in_trace == other["calls_kept"] <= 100000,
                 f"{what}: trace.json's calls {in_trace} of {timed}, as it says: {other}")
    for tid in dict.fromkeys(list(closed) + list(opened)):
        stack, roots = [], set()
        for t0, t1, _, func, depth in sorted(closed.get(tid, []) + opened.get(tid, []), key=lambda e: (e[0], -e[1])):
            while stack and stack[-1][1] < t0:
                stack.pop()
            if stack:
                hs.check(t1 <= stack[-1][1] and depth == stack[-1][4] + 1,
                         f"{what}: call {fname[func]} ({t0}, {t1}, depth {depth}) inside {stack[-1]}")
            else:
                roots.add(depth)
            stack.append((t0, t1, 0, func, depth))
        hs.eq(roots, {0}, f"{what}: thread {tid}: every call outside all others at depth 0")
    return closed


def test_wow64_timeline_calling_conventions():
    """callconv.exe with --timeline (and --no-edges: no slow path of
    hookscope's inside a call): it prints what it prints untraced; every
    timed call of every convention is one event of timeline.bin, one of
    trace.json and one marker of profile.firefox.json, nested as called,
    each with ticks = its end - its start."""
    hs.need_wow64()
    t = hs.trace(hs.need(f"{hs.TARGETS32}/callconv.exe"), options=["--timeline", "--no-sample", "--no-edges"],
                 name="wow64_timeline_callconv")
    hs.eq((t.rc, out_lines(t)), (0, stated_output("tests/targets32/callconv.c")), "exit code and output, timeline")
    closed = check_timeline(t, "callconv.exe", "callconv")
    hs.check(all(e[2] == e[1] - e[0] for evs in closed.values() for e in evs), "ticks = t1 - t0")
    fs = timed(t, "callconv.exe")
    hs.eq({n: fs[n][0] for n in ("cdecl_add", "stdcall_mix", "fastcall_mul", "counter_add", "mul64")},
          {"cdecl_add": 10, "stdcall_mix": 20, "fastcall_mul": 30, "counter_add": 40, "mul64": 3}, "calls")


def test_wow64_timeline_groundtruth():
    """The i686 ground-truth program with --timeline (its threads too):
    output and exit code as untraced; the timeline's calls are the timed
    calls exactly; the 32-bit session, cut to fit (each thread's buffer
    halved, to 32,768 calls at least: how far depends on the program's
    function count, which sizes the rest), holds what a --time run's
    holds: the same functions hooked, the same calls."""
    hs.need_wow64()
    fx = hs.fixture("groundtruth")
    cwd = os.path.join(hs.ROOT, fx["cwd"])
    exe32 = os.path.relpath(os.path.join(hs.ROOT, hs.need(f"{hs.TARGETS32}/groundtruth.exe")), cwd)
    plain = hs.wine([exe32] + fx["args"], cwd=cwd)
    t = hs.trace(exe32, fx["args"], options=["--timeline", "--no-sample", "-v"], name="wow64_timeline_groundtruth",
                 cwd=fx["cwd"])
    hs.eq((t.rc, t.stdout), (fx["exit_code"], plain.stdout), "exit code and output, timeline")
    cut = re.search(r"each thread's timeline buffer holds (\d+) calls \(not 262144\)", t.stderr.decode(errors="replace"))
    hs.check(cut and 32768 <= int(cut.group(1)) < 262144, "the buffers cut to fit the 32-bit session")
    check_timeline(t, "groundtruth.exe", "groundtruth")
    tt = hs.trace(exe32, fx["args"], options=["--time", "--no-sample"], name="wow64_time_groundtruth", cwd=fx["cwd"])
    hs.eq(tt.rc, fx["exit_code"], "exit code, --time")
    hooked = lambda r: sorted(f["name"] for f in r.functions("groundtruth.exe") if f["hooked"])
    hs.eq(hooked(t), hooked(tt), "functions hooked with --timeline and with --time")
    hs.eq(t.calls("groundtruth.exe"), tt.calls("groundtruth.exe"), "calls with --timeline and with --time")


def test_wow64_timeline_full_buffer_and_filters():
    """callconv.exe's timeline with a 16-call buffer and the filters, as
    test_timeline checks x64's: not waited for (--timeline-wait 0), the
    calls kept and dropped add up to the timed calls exactly; waited for
    (the return thunk calls hookscope's C to wait, in a real 32-bit
    process), none dropped, every timed call kept, the output as
    untraced; --timeline-depth 2 and --timeline-min-duration 1us: the
    calls kept and left out add up to the timed calls, none kept deeper
    than depth 1 (the C runtime's start, never ended, holds main at
    depth 2) or shorter than a microsecond."""
    import os
    from test_timeline import read_timeline
    hs.need_wow64()
    exe = hs.need(f"{hs.TARGETS32}/callconv.exe")
    stated = stated_output("tests/targets32/callconv.c")
    runs = {"drops": ["--timeline-buffer", "16", "--timeline-wait", "0"], "waits": ["--timeline-buffer", "16"],
            "depth": ["--timeline-depth", "2"], "min": ["--timeline-min-duration", "1us"]}
    for what, opts in runs.items():
        t = hs.trace(exe, options=["--timeline", "--no-sample", "--no-edges"] + opts, name=f"wow64_timeline_{what}")
        hs.eq((t.rc, out_lines(t)), (0, stated), f"{what}: exit code and output")
        (th,) = t.json["timeline"]["threads"]
        timed = sum(f["time"]["calls"] for f in t.functions("callconv.exe") if f.get("time"))
        (events,) = read_timeline(os.path.join(hs.ROOT, t.out, "timeline.bin")).values()
        hs.eq(len(events), th["events"], f"{what}: the file holds the calls kept")
        if what == "drops":
            hs.check(th["dropped_buffer"] > 0 and "waits" not in th, f"{what}: drops counted, no wait: {th}")
            hs.eq(th["events"] + th["dropped_buffer"], timed, f"{what}: kept + dropped = timed calls")
            hs.check(0 <= th["dropped_from_us"] <= th["dropped_to_us"], f"{what}: the drops' time range: {th}")
        elif what == "waits":
            hs.check(th.get("waits", 0) > 0 and th["dropped_buffer"] == 0, f"{what}: the buffer waited for: {th}")
            hs.eq(th["events"], timed, f"{what}: every timed call kept")
        else:
            hs.check(th["events"] > 0 and th["filtered"] > 0 and th["dropped_buffer"] == 0, f"{what}: {th}")
            hs.eq(th["events"] + th["filtered"], timed, f"{what}: kept + left out = timed calls")
            if what == "depth":
                hs.check(max(e[4] for e in events) <= 1, f"{what}: the deepest call kept: depth {max(e[4] for e in events)}")
            else:
                shortest = min(e[2] for e in events) * 1e9 / t.json["timeline"]["tsc_hz"]
                hs.check(999 <= shortest, f"{what}: the shortest call kept: {shortest:.1f} ns")


def test_wow64_timeline_sampled():
    """cpusplit.exe 1 (i686: three burners on the main thread, a waiter
    and a sleeper) sampled at 1 kHz with --timeline: the timeline files
    hold the timed calls exactly (check_timeline), and
    profile.firefox.json one sample for each sample of the timeline."""
    import json
    hs.need_wow64()
    t = hs.trace(hs.need(f"{hs.TARGETS32}/cpusplit.exe"), ["1"], options=["--timeline", "--sample-rate", "1000"],
                 name="wow64_timeline_sampled")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    check_timeline(t, "cpusplit.exe", "cpusplit")
    doc = json.loads(t.file("profile.firefox.json"))
    n = len(t.json["timeline"]["samples"])
    hs.check(n > 0, f"samples on the timeline: {n}")
    hs.eq(sum(len(th["samples"]["data"]) for th in doc["threads"]), n, "one sample per sample of the timeline")


def test_own_stack_captures_unchanged_by_time():
    """A program that captures its own stack (CaptureStackBackTrace, from
    nested and recursive calls, with frames skipped: tests/targets/
    backtrace.c) prints under --time, --time --stacks and --timeline what
    it prints untraced, on both widths: no return thunk where a caller
    should be (i686: agent/backtrace.c walks the chain with the true
    return addresses), no wrapper frame (x86-64: dropped). The hash is the
    sum of the frames, as Windows' and Wine's i386 one (Wine 8's x86-64 one
    is not: there the untraced line says so and the timed one is
    Windows')."""
    hs.need_wow64()
    for exe in ("build/tests/backtrace.exe", f"{hs.TARGETS32}/backtrace.exe"):
        exe = hs.need(exe)
        wide = "tests32" not in exe
        plain = hs.wine([exe])
        hs.eq(plain.returncode, 0, f"{exe} untraced: exit code")
        want = plain.stdout.decode().replace("\r\n", "\n")
        lines = want.splitlines()
        hs.eq(len(lines), 5, f"{exe} untraced: its output {want!r}")
        hs.check(all(len(re.findall(r" \+[0-9a-f]+", l)) >= 3 for l in lines[:4]),
                 f"{exe}: fewer than 3 frames in the exe in a capture (the test would see little): {want!r}")
        for opts in (["--time"], ["--time", "--stacks"], ["--timeline"]):
            t = hs.trace(exe, options=["--no-sample"] + opts, name="own_captures")
            got = t.stdout.decode().replace("\r\n", "\n")
            hs.eq(t.rc, 0, f"{exe} {opts}: exit code ({t.stderr!r})")
            if wide:
                hs.eq(re.sub(r" \| hash \w+", "", got), re.sub(r" \| hash \w+", "", want),
                      f"{exe} {opts}: the captures against untraced")
                hs.eq(re.findall(r"hash \w+", got), ["hash ok"] * 4, f"{exe} {opts}: the hashes (Windows' rule)")
            else:
                hs.eq(got, want, f"{exe} {opts}: the captures against untraced")
