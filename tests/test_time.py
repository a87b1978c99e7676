"""--time: durations, deep recursion, many arguments, varargs."""
import re

import hs


def func(t, name, module=None):
    for f in t.functions(module):
        if f["name"] == name:
            return f
    raise AssertionError(f"{name} not in the report")


def test_recursion_10000_deep():
    """depth_sum(10000): 10001 nested timed calls on the main thread. Each
    level's self time is its inclusive time minus the next level's, so the
    self times add up to the outermost call's inclusive time, the maximum;
    the total counts the outermost call only (the inner ones are inside
    it), so it is that maximum too, within main's total and the run's wall
    time; avg is per call."""
    exe = hs.need("build/tests/deeprec.exe")
    plain = hs.wine([exe, "10000"])
    hs.eq(plain.stdout, b"depth_sum(10000) = 50005000\r\n", "untraced output")
    t = hs.trace(exe, ["10000"], options=["--time"], name="deeprec_time")
    hs.eq(t.rc, 0, "exit code (no stack overflow)")
    hs.eq(t.stdout, plain.stdout, "stdout")
    f = func(t, "depth_sum")
    hs.eq(f["entry_only"], None, "depth_sum is wrapped")
    hs.eq(f["calls"], 10001, "calls")
    tm = f["time"]
    hs.eq((tm["calls"], tm["open"], f["unwinds"]), (10001, 0, 0), "exits, open, unwinds")
    hs.eq(t.json["time_dropped"], 0, "time_dropped")
    hs.eq(sum(b["count"] for b in tm["hist"]), 10001, "histogram entries")
    main = func(t, "main")["time"]
    hs.check(0 < tm["min_ns"] <= tm["max_ns"] <= main["total_ns"],
             f"min {tm['min_ns']} <= max {tm['max_ns']} <= main's total {main['total_ns']}")
    hs.check(abs(tm["self_ns"] - tm["max_ns"]) <= 2 + tm["max_ns"] * 1e-6,
             f"self times add up to the outermost call: self {tm['self_ns']}, max {tm['max_ns']}")
    hs.eq(tm["total_ns"], tm["max_ns"], "total: the outermost call only")
    hs.check(tm["total_ns"] <= main["total_ns"] <= t.json["target"]["wall_time_s"] * 1e9,
             f"depth_sum total {tm['total_ns']} <= main's {main['total_ns']} <= wall time")
    # per call: each level lasts as long as the levels inside it, so the
    # average is of the order of half the outermost call, thousands of
    # times the total over the calls (which counts the outermost call only)
    hs.check(tm["min_ns"] <= tm["avg_ns"] <= tm["max_ns"] and tm["avg_ns"] > 100 * tm["total_ns"] / tm["calls"],
             f"avg {tm['avg_ns']} is per call (min {tm['min_ns']}, max {tm['max_ns']}, total {tm['total_ns']})")
    hs.check(main["total_ns"] < 60e9, f"main took {main['total_ns']} ns")
    # the histogram's buckets hold the minimum and the maximum
    lo = max(b["ns"] for b in tm["hist"] if b["ns"] <= max(tm["min_ns"], 1))
    hi = max(b["ns"] for b in tm["hist"])
    hs.check(lo <= max(tm["min_ns"], 1) < 2 * lo, f"lowest bucket {lo} vs min {tm['min_ns']}")
    hs.check(hi <= tm["max_ns"] < 2 * hi, f"highest bucket {hi} vs max {tm['max_ns']}")


def test_recursion_10000_deep_with_stacks():
    exe = hs.need("build/tests/deeprec.exe")
    t = hs.trace(exe, ["10000"], options=["--time", "--stacks"], name="deeprec_stacks")
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, b"depth_sum(10000) = 50005000\r\n", "stdout")
    hs.eq(t.json["stacks_dropped"], 0, "stacks dropped")
    stacks = [s for s in t.json["stacks"] if s["function"] == "depth_sum"]
    hs.eq(sum(s["count"] for s in stacks), 10001, "captures of depth_sum")
    # far from main every stack looks the same: depth_sum all the way down
    # to the depth limit; near main each level has a stack of its own
    def names(s):
        return [fr.split("!")[1].split("+")[0] for fr in s["frames"]]
    deep = [s for s in stacks if set(names(s)) == {"depth_sum"}]
    hs.check(len(deep) == 1 and deep[0]["truncated"], f"one truncated all-depth_sum stack: {deep}")
    hs.check(deep[0]["count"] > 9950, f"deep stack count {deep[0]['count']}")
    for s in stacks:
        hs.eq(s["frames"][0], "deeprec.exe!depth_sum+0x0", "frame 0 is the entry")
        if s is not deep[0]:
            hs.eq(s["count"], 1, "every other stack is one level's")
        if not s["truncated"]:
            hs.check(names(s)[-5:] == ["main", "__tmainCRTStartup", "mainCRTStartup",
                                       "BaseThreadInitThunk", "RtlUserThreadStart"],
                     f"a whole stack reaches the thread start: {s['frames']}")


def test_many_arguments_and_varargs():
    """A 20-argument function is wrapped (its 16 stack arguments copied);
    varargs functions and a 70-argument one get an entry probe only; every
    result is the untraced one."""
    exe = hs.need("build/tests/manyargs.exe")
    plain = hs.wine([exe])
    hs.eq(plain.returncode, 0, "untraced exit code")
    for opts, name in ((["--time"], "manyargs_time"), (["--time", "--stacks=4"], "manyargs_stacks")):
        t = hs.trace(exe, options=opts, name=name)
        hs.eq(t.rc, 0, "exit code")
        hs.eq(t.stdout, plain.stdout, "stdout (every result)")
        expect = {"sum20": None, "mix20": None, "vsum": "varargs", "vfmt": "varargs",
                  "sum70": "too-many-stack-args"}
        for fn, why in expect.items():
            f = func(t, fn)
            hs.eq(f["calls"], 3, f"calls of {fn}")
            hs.eq(f["entry_only"], why, f"{fn}: wrapped or why not")
            if why is None:
                hs.eq((f["time"]["calls"], f["unwinds"]), (3, 0), f"{fn}: exits, unwinds")
            else:
                hs.check("time" not in f, f"{fn} has no time")
        hs.eq(t.module("manyargs.exe")["entry_only"].get("varargs", 0) >= 2, True, "varargs counted")
    out = plain.stdout.decode()
    hs.check("sum20(0) = 2870" in out, "sum20 result")   # sum of i*i for i = 1..20


def test_sleep_durations_and_self_time():
    """sleeper() sleeps 20 ms; caller() calls it 5 times."""
    exe = hs.need("build/tests/sleeper.exe")
    t = hs.trace(exe, options=["--time"], name="sleeper")
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, b"slept 5 times\r\n", "stdout")
    s = func(t, "sleeper")["time"]
    c = func(t, "caller")["time"]
    hs.eq(s["calls"], 5, "sleeper exits")
    hs.eq(c["calls"], 1, "caller exits")
    # the program's own measurement of sleeper's calls (performance counter,
    # microseconds): hookscope's durations (rdtsc, its rate taken against
    # that counter over the whole run) enclose it, so they are never shorter
    # (but for 0.1% of rate and the program's rounding to microseconds), and
    # longer by the wrapper, the calls and a preemption or two: 2% + 200 us
    m = re.search(rb"measured total_us (\d+) min_us (\d+)", t.stderr)
    hs.check(m, f"sleeper.exe printed no measurement: {t.stderr!r}")
    own_total, own_min = int(m.group(1)) * 1000, int(m.group(2)) * 1000
    hs.check(own_total >= 80e6, f"the program measured {own_total / 1e6:.1f} ms for 5 x Sleep(20)")
    hs.check(own_total - (0.001 * own_total + 5e3) <= s["total_ns"] <= own_total + 0.02 * own_total + 200e3,
             f"sleeper total {s['total_ns'] / 1e6:.3f} ms, the program measured {own_total / 1e6:.3f} ms")
    hs.check(own_min - (0.001 * own_min + 1e3) <= s["min_ns"] <= own_min + 0.02 * own_min + 100e3,
             f"sleeper min {s['min_ns'] / 1e6:.3f} ms, the program measured {own_min / 1e6:.3f} ms")
    hs.check(abs(s["self_ns"] - s["total_ns"]) <= 1, "sleeper calls nothing timed: self = total")
    hs.check(c["total_ns"] >= s["total_ns"], f"caller total {c['total_ns']} >= sleeper total {s['total_ns']}")
    # caller's calls contain the five the program measured (the same 2%: the
    # two clocks are calibrated against each other, not equal)
    hs.check(c["total_ns"] >= own_total - (0.02 * own_total + 200e3),
             f"caller total {c['total_ns'] / 1e6:.3f} ms, the program measured {own_total / 1e6:.3f} ms inside it")
    hs.check(c["self_ns"] < 20e6, f"caller self {c['self_ns'] / 1e6:.3f} ms excludes sleeper")
    hs.check(abs(c["self_ns"] + s["total_ns"] - c["total_ns"]) <= 2,
             "caller self + sleeper total = caller total")
    hs.eq(sum(b["count"] for b in s["hist"]), 5, "sleeper histogram entries")
    hs.check(all(b["ns"] >= 1 << 23 for b in s["hist"]), f"sleeper histogram {s['hist']}")
    # report.txt: the table row and a histogram for the functions with the most time
    rows = [l for l in t.txt.splitlines()
            if re.match(r"^ +\d+ +[\d.]+ (ns|us|ms|s) ", l) and l.rstrip().endswith("  sleeper")]
    hs.check(len(rows) == 1 and rows[0].split()[0] == "5" and " ms" in rows[0],
             f"report.txt time row for sleeper: {rows}")
    hs.check("  sleeper  (5 calls)" in t.txt and "------------- Distribution -------------" in t.txt,
             "report.txt histogram of sleeper")


def test_time_with_threads_exact():
    """threads4: four threads call work() a million times each; every call
    is timed on its own thread's shadow stack."""
    exe = hs.need("build/tests/threads4.exe")
    t = hs.trace(exe, options=["--time"], name="threads4_time", timeout=600)
    hs.eq(t.rc, 0, "exit code")
    for name, calls in (("work", 4_000_000), ("worker", 4)):
        f = func(t, name)
        hs.eq(f["entry_only"], None, f"{name} is wrapped")
        hs.eq((f["calls"], f["time"]["calls"], f["time"]["open"], f["unwinds"]), (calls, calls, 0, 0),
              f"{name}: calls, exits, open, unwinds")
    w = func(t, "worker")["time"]
    k = func(t, "work")["time"]
    hs.check(abs(w["self_ns"] + k["total_ns"] - w["total_ns"]) <= 4,
             f"worker's self {w['self_ns']} + work's total {k['total_ns']} = worker's total {w['total_ns']}")
    hs.eq(t.json["time_dropped"], 0, "time_dropped")


def test_recursion_total_within_wall_time():
    """Inclusive time counts a function's outermost activation on a thread:
    the demo's fib (150049 calls, recursive), and depth_sum 100000 deep on
    a thread of its own, never exceed the run's wall time or their
    caller's total."""
    demo = hs.need("build/examples/demo.exe")
    t = hs.trace(demo, options=["--time"], name="demo_time_recursion")
    hs.eq(t.rc, 0, "demo exit code")
    f = {x["name"]: x for x in t.functions("demo.exe")}
    wall = t.json["target"]["wall_time_s"] * 1e9
    fib, main = f["fib"]["time"], f["main"]["time"]
    hs.eq(fib["calls"], 150049, "fib calls")
    hs.check(fib["total_ns"] <= main["total_ns"] <= wall,
             f"fib total {fib['total_ns']} <= main total {main['total_ns']} <= wall {wall:.0f}")
    hs.check(fib["self_ns"] <= fib["total_ns"] + 2, f"fib self {fib['self_ns']} <= total {fib['total_ns']}")
    exe = hs.need("build/tests/deeprec.exe")
    t = hs.trace(exe, ["20000", "thread"], options=["--time"], name="deeprec_thread_recursion")
    hs.eq(t.rc, 0, "deeprec exit code")
    d = [x for x in t.functions("deeprec.exe") if x["name"] == "depth_sum"][0]["time"]
    r = [x for x in t.functions("deeprec.exe") if x["name"] == "recurse_thread"][0]["time"]
    hs.eq(d["calls"], 20001, "depth_sum calls")
    hs.eq(d["total_ns"], d["max_ns"], "depth_sum total: the outermost call")
    hs.check(d["total_ns"] <= r["total_ns"] <= t.json["target"]["wall_time_s"] * 1e9,
             f"depth_sum {d['total_ns']} <= recurse_thread {r['total_ns']} <= wall time")


def test_durations_exclude_stack_capture():
    """spinwork: step() calls spin(), a loop of known cost the program times
    itself; run() calls step() 2000 times. With --stacks=16 an entry stack
    of 16 frames is captured at every call of spin (in step's time: spin's
    stub runs inside step) and of step (in run's time): microseconds that
    are hookscope's, not the target's, and are left out of every duration.
    So, with and without --stacks: spin's and step's shortest calls are the
    program's own shortest measurement within 10% (a minimum: no other
    program's load in it), and step's shortest call is longer than spin's
    by less than 3% of that, 180 ns (the time step spends outside spin,
    where spin's captures fall, 0.5 us each; measured 30-70 ns; minimums,
    because a sum, like step's or run's self time, takes in whatever
    preemption lands there on a busy machine)."""
    exe = hs.need("build/tests/spinwork.exe")
    ratios = {}
    for opts in (["--time"], ["--time", "--stacks=16"]):
        t = hs.trace(exe, options=opts, name=f"spinwork_{len(opts)}")
        hs.eq(t.rc, 0, f"{opts} exit code")
        m = re.search(rb"measured min_ns (\d+) total_ns (\d+)", t.stderr)
        hs.check(m, f"spinwork printed no measurement: {t.stderr!r}")
        own_min = int(m.group(1))
        f = {x["name"]: x["time"] for x in t.functions("spinwork.exe") if "time" in x}
        hs.eq((f["spin"]["calls"], f["step"]["calls"], f["run"]["calls"]), (2000, 2000, 1), f"{opts} calls")
        r = {name: f[name]["min_ns"] / own_min for name in ("spin", "step")}
        for name, v in r.items():
            hs.check(0.9 <= v <= 1.1, f"{opts}: {name}'s shortest call is {v:.3f} x the program's "
                                      f"({own_min} ns): {f[name]}")
        outside = f["step"]["min_ns"] - f["spin"]["min_ns"]
        hs.check(outside <= 0.03 * own_min, f"{opts}: step's shortest call is {outside} ns longer than spin's, "
                                            f"more than 3% of {own_min} ns")
        if len(opts) == 2:
            stacks = [s for s in t.json["stacks"] if s["function"] in ("spin", "step")]
            hs.eq(sum(s["count"] for s in stacks), 4000, "a stack captured at every call of spin and step")
            hs.check(all(len(s["frames"]) == 16 and s["truncated"] for s in stacks), "16 frames each, cut")
        ratios[len(opts)] = r
    for name in ("spin", "step"):
        a, b = ratios[1][name], ratios[2][name]
        hs.check(abs(a - b) <= 0.10, f"{name}: {a:.3f} x the program's measure without --stacks, {b:.3f} with")


def test_longjmp_without_unwind_ends_activations():
    """rawjmp.exe: four recursive calls of dive are left by a longjmp that
    does not unwind (no handler sees them go); then dive(2) runs and returns
    normally. The abandoned activations end when the shadow stack drops
    their records, so the later outermost call counts in dive's total."""
    exe = hs.need("build/tests/rawjmp.exe")
    t = hs.trace(exe, options=["--time"], name="rawjmp_time")
    hs.eq((t.rc, t.stdout), (0, b"dive = 3, 7 calls\r\n"), "rawjmp output")
    d = [f for f in t.functions("rawjmp.exe") if f["name"] == "dive"][0]
    hs.eq((d["calls"], d["time"]["calls"], d["time"]["open"]), (7, 3, 0), "dive: calls, exits, open")
    hs.check(d["time"]["total_ns"] > 0, f"dive's outermost call after the longjmp is counted: {d['time']}")
    hs.eq(d["time"]["total_ns"], d["time"]["max_ns"], "dive total: its one outermost call that returned")
