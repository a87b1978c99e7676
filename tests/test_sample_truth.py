"""Samples a user can trust (ARCHITECTURE.md decisions 12 and 13): whole
stacks through hookscope's own code, the CPU given to the code that ran,
running, ready and waiting told apart.

Targets: lua, sqlite and zstdwork.exe (zstd's DLL) from the fixtures;
stubstep.exe (every instruction hookscope runs around a hooked
call, single-stepped and unwound in the process with hookscope's unwinder
over the growable function table the agent registers), pingpong.exe
(mutual recursion of functions of a few nanoseconds under main),
worksleep.exe (computing mixed with short sleeps on 1 and 8 threads; a
thread that computes, then sleeps)."""
import json
import math
import os
import re
import time

import hs

T = hs.TARGETS
# hookscope's frames, or bare addresses of its arenas (which lie within 2 GB
# of the modules they hook, all of them far below 0x7e0000000000 under Wine).
# A bare 0x7e... or 0x7f... is Wine's code on its Unix side: Linux maps
# shared libraries below a base randomized over 1 TB under the top of user
# space, so they lie anywhere in 0x7eff...-0x7fff... and a little below
# (a CI run sampled one at 0x7efd7f29dbbf)
OWN = re.compile(r"hookscope|\bhs_|^0x(?!7[ef][0-9a-f]{10}$)[0-9a-f]{9,}$")


STEPPED = ["leaf_fn", "call_fn", "branch_fn", "frame_fn"]


def test_every_instruction_of_hookscope_code_unwinds():
    """Every instruction stepped in an entry stub, its slow path, the
    trampoline, the timing wrapper, the thunks and probes and the stack
    capture unwinds to the true callers, with every probe option, for each
    shape of trampoline (a leaf; a call moved into it; a jump out of it
    with a register pushed, taken and not; a frame pointer set up in it);
    by hookscope's unwinder, and, where hookscope's tables describe the
    code, by the system's own RtlVirtualUnwind (a walker that runs nothing
    forward, as the kernel's for ETW)."""
    fns = [a for f in STEPPED for a in ("-f", f)]
    for opts, agent_min in (([], 100), (["--no-edges"], 100), (["--stacks=4"], 1000), (["--time"], 1000),
                            (["--time", "--stacks=4"], 1000), (["--no-edges", "--stacks=2"], 1000)):
        t = hs.trace(f"{T}/stubstep.exe", options=opts + fns, name="stubstep")
        hs.eq(t.rc, 0, f"{opts}: exit code ({t.stderr!r})")
        out = t.stdout.decode()
        m = re.search(r"stubstep states (\d+) arena (\d+) agent (\d+) program (\d+) bad (\d+) "
                      r"foreign (\d+) foreign_bad (\d+) unread (\d+)", out)
        hs.check(m, f"{opts}: output {out!r}")
        states, arena, agent, program, bad, foreign, foreign_bad, unread = map(int, m.groups())
        hs.eq(bad, 0, f"{opts}: states that do not unwind to the callers:\n{out}")
        hs.eq(foreign_bad, 0, f"{opts}: states RtlVirtualUnwind does not unwind to the callers:\n{out}")
        hs.check(arena >= 500 and agent >= agent_min and program >= 100,
                 f"{opts}: too few states stepped (arena {arena}, agent {agent}, program {program})")
        hs.check(foreign + unread >= 0.95 * states, f"{opts}: only {foreign} of {states} states walked by "
                 f"RtlVirtualUnwind (+{unread} it cannot read)")
        per_fn = dict(re.findall(r"fn (\w+\(\d\)) arena (\d+)", out))
        hs.eq(sorted(per_fn), sorted(["leaf_fn(1)", "call_fn(1)", "branch_fn(0)", "branch_fn(1)", "frame_fn(1)"]),
              f"{opts}: functions stepped")
        for f, n in per_fn.items():
            hs.check(int(n) >= 100, f"{opts}: {f}: only {n} states in hookscope's code")


def frames_of(st):
    return [f.split("!", 1)[1].split("+")[0] if "!" in f else f for f in st["frames"]]


def test_pingpong_stacks_reach_main_and_pairs_are_edges():
    """Functions of a few nanoseconds, sampled at 1 kHz plain, with --time,
    with --stacks and without hooks: at least 99.5% of the CPU samples in
    them reach main, no frame is hookscope's, and every sampled
    caller -> callee pair of hooked functions is a counted edge."""
    mine = {"ping", "pong", "round_of"}
    # rounds: enough for 30 CPU samples in pingpong's own functions (with
    # --time most samples are the wrapper's, with --stacks the captures':
    # hookscope's own cost)
    for opts, rounds in (([], 3000000), (["--time"], 4000000), (["--stacks=8"], 3000000), (["--no-hooks"], 3000000)):
        t = hs.trace(f"{T}/pingpong.exe", [str(rounds)], options=["--sample-rate", "1000"] + opts, name="pingpong")
        hs.eq(t.rc, 0, f"{opts}: exit code ({t.stderr!r})")
        edges = {(e["caller"], e["callee"]) for e in t.json.get("edges", [])}   # --no-hooks: none
        own = rooted = 0
        pairs, not_edges = 0, {}
        for st in t.json["sample_stacks"]:
            fr = frames_of(st)
            for f in st["frames"]:
                hs.check(not OWN.search(f), f"{opts}: a frame of hookscope's own code: {st['frames']}")
            if fr[0] not in mine:
                continue
            own += st["count"]
            rooted += st["count"] if "main" in fr else 0
            if "--no-hooks" in opts:
                continue
            for k in range(len(fr) - 1):
                callee, caller = fr[k], fr[k + 1]
                if callee in mine and caller in mine | {"main"}:
                    pairs += st["count"]
                    if (caller, callee) not in edges:
                        not_edges[(caller, callee)] = not_edges.get((caller, callee), 0) + st["count"]
        hs.check(own >= 30, f"{opts}: only {own} CPU samples in pingpong's own functions")
        hs.check(rooted >= 0.995 * own, f"{opts}: {own - rooted} of {own} CPU samples do not reach main")
        hs.eq(not_edges, {}, f"{opts}: sampled caller -> callee pairs that are no counted edge (of {pairs})")


def rooted_share(t, opts, own_fn):
    """(CPU samples whose leaf own_fn(frame) accepts, those of them whose
    stack reaches main); fails on any frame of hookscope's own code."""
    own = rooted = 0
    for st in t.json["sample_stacks"]:
        for f in st["frames"]:
            hs.check(not OWN.search(f), f"{opts}: a frame of hookscope's own code: {st['frames']}")
        if not own_fn(st["frames"][0]):
            continue
        own += st["count"]
        rooted += st["count"] if "main" in frames_of(st) else 0
    return own, rooted


def heavy_sql(rows):
    """A workload of sqlite's: a table of `rows` rows, an index, sorts
    that spill to temporary files, aggregates."""
    return (f"CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);\n"
            f"WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < {rows})\n"
            f"INSERT INTO t SELECT x, printf('%08x', (x * 2654435761) % 4294967296), x * 1.5 FROM n;\n"
            f"CREATE INDEX tb ON t(b);\n"
            f"SELECT count(*), sum(c) FROM t WHERE b > '80000000';\n"
            f"SELECT b FROM t ORDER BY b LIMIT 1 OFFSET {rows // 2};\n"
            f"SELECT substr(b, 1, 2) AS k, count(*) FROM t GROUP BY k ORDER BY k LIMIT 3;\n").encode()


# (a stack captured at every 64th call: at every call, lua's workload
# takes 74 s, sqlite's 62 s; pingpong covers the capture at every call)
EVERY64 = ["--stacks=8", "--stack-every", "64"]
REAL_OPTS = ([], ["--time"], EVERY64, ["--time"] + EVERY64, ["--no-hooks"])


def test_real_programs_stacks_reach_main():
    """lua, sqlite and zstd (its -O2 DLL, loaded by zstdwork.exe with
    LoadLibrary) sampled at 1 kHz, plain, with --time, with --stacks, with
    both and without hooks: at least 99.5% of the CPU samples in each
    program's own module reach main, and no frame is hookscope's (a stub,
    a trampoline, the agent, the DLL's first samples before a module
    listing knew it, a leaf's pushes without unwind data)."""
    lua = hs.fixture("lua-workload")
    sq = hs.fixture("sqlite")
    zstd = os.path.join(hs.ROOT, "build", "fixtures", "zstd", "libzstd.dll")
    if not os.path.exists(zstd):
        raise hs.Skip("fixture zstd is not built (make fixtures)")
    zstd_rel = os.path.relpath(zstd, os.path.join(hs.ROOT, T))
    runs = [("lua.exe", lambda o: dict(target=lua["program"], args=lua["args"], cwd=lua["cwd"])),
            ("sqlite3.exe", lambda o: dict(target=sq["program"], args=sq["args"], cwd=sq["cwd"],
                                           input=heavy_sql(400000))),
            ("libzstd.dll", lambda o: dict(target="zstdwork.exe", args=[zstd_rel, "200"], cwd=T))]
    for module, how in runs:
        for opts in REAL_OPTS:
            kw = how(opts)
            mods = [] if "--no-hooks" in opts else [module]
            t = hs.trace(kw.pop("target"), kw.pop("args"), modules=mods, options=["--sample-rate", "1000"] + opts,
                         name=f"rooted_{module}", timeout=600, **kw)
            hs.eq(t.rc, 0, f"{module} {opts}: exit code ({t.stderr!r})")
            own, rooted = rooted_share(t, f"{module} {opts}", lambda f: f.lower().startswith(module + "!"))
            hs.check(own >= 30, f"{module} {opts}: only {own} CPU samples in the module")
            hs.check(rooted >= 0.995 * own, f"{module} {opts}: {own - rooted} of {own} CPU samples do not reach main")


def self_of(j, kind, name):
    return sum(st["count"] for st in j.get(kind, []) if frames_of(st) and frames_of(st)[0] == name)


def on_stack(j, kind, name):
    return sum(st["count"] for st in j.get(kind, []) if name in frames_of(st))


def test_mixed_work_and_sleep():
    """A thread computing in step() with Sleep(10) every 256 steps, alone
    and on 8 threads: step holds at least 90% of the CPU samples, the
    sleep call under 5%, and the CPU time given to step is at least 85%
    of the process's."""
    for n in (1, 8):
        t = hs.trace(f"{T}/worksleep.exe", ["mixed", str(n)], options=["--sample-rate", "1000"],
                     name=f"worksleep_mixed{n}")
        hs.eq(t.rc, 0, f"{n} threads: exit code ({t.stderr!r})")
        j = t.json
        cpu = sum(st["count"] for st in j["sample_stacks"])
        hs.check(cpu >= 5, f"{n} threads: {cpu} CPU samples")
        step = on_stack(j, "sample_stacks", "step")
        sleep = sum(st["count"] for st in j["sample_stacks"]
                    if {"nap", "NtDelayExecution", "Sleep", "SleepEx"} & set(frames_of(st)))
        hs.check(step >= 0.9 * cpu, f"{n} threads: step has {step} of {cpu} CPU samples")
        hs.check(sleep < 0.05 * cpu, f"{n} threads: the sleep call has {sleep} of {cpu} CPU samples")
        waits = on_stack(j, "wait_stacks", "mixed_thread")
        in_nap = on_stack(j, "wait_stacks", "nap")
        hs.check(in_nap >= 0.9 * waits, f"{n} threads: nap has {in_nap} of the workers' {waits} wait samples")
        hs.check(self_of(j, "wait_stacks", "step") == 0, f"{n} threads: step among the waiting functions")
        # the CPU time given to step: the process's CPU time x step's share of
        # the running samples (the program's and hookscope's), at least 85%
        # of it, within three standard errors of a share of 85% over n samples
        running = cpu + j["sampling"]["hookscope_samples"]
        share = step / running
        floor = 0.85 - 3 * math.sqrt(0.85 * 0.15 / running)
        cpu_s = j["sampling"]["cpu_time_s"]
        hs.check(share >= floor, f"{n} threads: step given {share * cpu_s:.3f} s of the process's {cpu_s:.3f} s "
                 f"({step} of {running} running samples, want {floor:.0%})")


def test_compute_then_sleep():
    """A thread that computes 0.6 s without blocking, then sleeps 0.6 s:
    at least 90% of its wait samples are in the sleeping function, at most
    5% of the computing function's samples are waits (its other off-CPU
    samples are ready: held by the sampler, or preempted)."""
    t = hs.trace(f"{T}/worksleep.exe", ["phases"], options=["--sample-rate", "1000"], name="worksleep_phases")
    hs.eq(t.rc, 0, f"exit code ({t.stderr!r})")
    j = t.json
    waits = sum(st["count"] for st in j["wait_stacks"])
    sleeping = on_stack(j, "wait_stacks", "sleeper")
    hs.check(waits >= 100 and sleeping >= 0.9 * waits, f"{sleeping} of {waits} wait samples in sleeper")
    computing = sum(on_stack(j, k, "compute") for k in ("sample_stacks", "ready_stacks", "wait_stacks"))
    waiting = on_stack(j, "wait_stacks", "compute")
    hs.check(computing >= 50, f"compute has {computing} samples")
    hs.check(waiting <= 0.05 * computing, f"{waiting} of compute's {computing} samples are waits")


def cpu_of(out):
    with open(os.path.join(hs.ROOT, out, "report.json"), encoding="utf-8") as f:
        return json.load(f)["sampling"]["cpu_time_s"]


def test_attach_counts_the_cpu_of_its_window():
    """cpuburst.exe computes 0.8 s of CPU, then (at a line on stdin) a
    burst of 1 s, each measured by itself. hookscope attach, sampling
    (with hooks and without) while only the burst runs, reports the
    burst's CPU time within 10% (not the 1.8 s the process has used in
    all); hookscope run of the same program reports both within 10%. (The
    sampler's suspensions cost the target some CPU of their own: about
    75 us each under Wine, hence a sampling rate of 100 Hz.)"""
    exe = hs.need(f"{T}/cpuburst.exe")
    for opts in ([], ["--no-hooks"]):
        with hs.Process([exe, "800", "1000"]) as p:
            m = re.fullmatch(r"pid (\d+) pre_us (\d+)", p.readline(timeout=60))
            hs.check(m, "cpuburst's first line")
            pid, pre = int(m.group(1)), int(m.group(2)) / 1e6
            out = hs.outdir("attach_window")
            with hs.Process([os.path.join(hs.ROOT, "build", "bin", "hookscope.exe"), "attach", str(pid), "-o", out,
                             "--duration", "300", "--sample-rate", "100"] + opts) as h:
                deadline = time.time() + 60
                while not any(b"attached to" in l or b"sampling" in l for l in h.err):
                    hs.check(time.time() < deadline and h.alive(),
                             f"{opts}: hookscope did not attach: {b''.join(h.err)!r}")
                    time.sleep(0.05)
                # the burst, then the end: hookscope stops when the process
                # ends, however long the burst took on a busy machine
                p.send(b"go\nend\n")
                m = re.fullmatch(r"burst_us (\d+)", p.readline(timeout=120))
                hs.check(m, "cpuburst's second line")
                burst = int(m.group(1)) / 1e6
                hs.eq(p.wait(timeout=30), 0, "cpuburst's exit code")
                hs.eq(h.wait(timeout=60), 0, f"{opts}: hookscope attach's exit code ({b''.join(h.err)!r})")
        cpu = cpu_of(out)
        hs.check(abs(cpu - burst) <= 0.1 * burst, f"attach {opts}: {cpu:.3f} s of CPU reported, the burst in its "
                 f"window took {burst:.3f} s (and {pre:.3f} s before it)")
    t = hs.trace(exe, ["800", "1000"], options=["--sample-rate", "100"], input=b"go\nend\n", name="run_window")
    hs.eq(t.rc, 0, f"run: exit code ({t.stderr!r})")
    own = [int(x) / 1e6 for x in re.findall(rb"_us (\d+)", t.stdout)]
    hs.eq(len(own), 2, f"run: cpuburst's output {t.stdout!r}")
    cpu = t.json["sampling"]["cpu_time_s"]
    hs.check(abs(cpu - sum(own)) <= 0.1 * sum(own), f"run: {cpu:.3f} s of CPU reported, the program measured "
             f"{own[0]:.3f} + {own[1]:.3f} s")


LUA_WORK = ("local t={} for i=1,30000 do t[i]=tostring(i) end "
            "local s=0 for k=1,30 do for i=1,#t do s=s+#t[i] end end print(s)")
UNWINDING = re.compile(r"RtlLookupFunctionEntry|RtlVirtualUnwind|find_function_info|RtlCaptureStackBackTrace|"
                       r"lookup_function_info|RtlpUnwind|virtual_unwind")


def test_lua_stacks_cost_is_hookscope_s():
    """lua with --stacks (a stack captured at every call) and with --time
    --stacks: the capture's work (hookscope's unwinding, the system's
    function-table lookups it calls) is hookscope's cost, in no CPU stack
    of the program; and no function's CPU per call, estimated from its
    samples, is above its measured wall time per call (beyond what its
    sample count allows: a Poisson tail)."""
    lua = hs.fixture("lua-workload")
    for opts in (["--stacks=8"], ["--time", "--stacks=8"]):
        t = hs.trace(lua["program"], ["-e", LUA_WORK], modules=["lua.exe"], options=["--sample-rate", "1000"] + opts,
                     cwd=lua["cwd"], name="lua_stacks", timeout=600)
        hs.eq((t.rc, t.stdout.strip()), (0, b"4166820"), f"{opts}: exit code and output ({t.stderr!r})")
        s = t.json["sampling"]
        hs.check(s["hookscope_samples"] >= 100, f"{opts}: {s['hookscope_samples']} samples in hookscope's code "
                 "(the capture at every call is most of the run)")
        for st in t.json["sample_stacks"] + t.json["ready_stacks"] + t.json["wait_stacks"]:
            bad = [f for f in st["frames"] if UNWINDING.search(f) or OWN.search(f)]
            hs.eq(bad, [], f"{opts}: hookscope's unwinding in a stack of the program: {st['frames'][:8]}")
        if "--time" not in opts:
            continue
        running = s["samples"] + s["hookscope_samples"]
        for f in t.json["functions"]:
            n, tm = f.get("samples", {}).get("total", 0), f.get("time") or {}
            if not n or not tm.get("calls") or tm.get("open"):
                continue
            est = s["cpu_time_s"] * n / running / f["calls"]
            wall = tm["total_ns"] / tm["calls"] / 1e9
            # the samples it would get if its CPU per call were its wall time
            # per call: a Poisson count; n must not lie past its upper tail
            # (4 standard deviations and 4 more: a single sample of a
            # function expected to get 0.2 is no contradiction)
            lam = wall * f["calls"] * running / s["cpu_time_s"]
            hs.check(n <= lam + 4 * math.sqrt(lam) + 4, f"{opts}: {f['name']}: {est * 1e9:.1f} ns of CPU per call "
                     f"estimated from {n} samples (at most {lam:.1f} expected), {wall * 1e9:.1f} ns of wall time "
                     "measured")


def test_demo_first_screen():
    """What `make demo` shows (demo.exe 40 sampled at 1 kHz), three runs:
    no stack of the program cut short (every stack with its leaf in
    demo.exe reaches the thread's start in ntdll, and through main when
    the leaf is fib), fib in no wait stack (it never waits), and
    main's total within 1 point of fib's (every sample of fib is under
    main), in report.json and in report.txt's CPU table."""
    for k in range(3):
        t = hs.trace(hs.need("build/examples/demo.exe"), ["40"], options=["--sample-rate", "1000"], name="demo_screen")
        hs.eq(t.rc, 0, f"run {k}: exit code ({t.stderr!r})")
        j = t.json
        for kind in ("sample_stacks", "ready_stacks", "wait_stacks", "hookscope_stacks"):
            for st in j[kind]:
                fr = frames_of(st)
                if st.get("truncated"):
                    # deeper than the walk goes (is_even/is_odd 1001 deep): cut
                    # at its limit, and marked so, not cut short
                    hs.check(256 < len(st["frames"]) <= 512, f"run {k}: {kind}: a stack marked truncated: {len(st['frames'])} frames")
                    continue
                if st["frames"][0].lower().startswith("demo.exe!"):
                    # whole: down to where the thread (or the loader's
                    # call of a TLS callback) began, and through main for
                    # what main calls
                    hs.check(len(fr) > 1 and st["frames"][-1].lower().startswith("ntdll.dll!") and
                             ("main" in fr or fr[0] != "fib"),
                             f"run {k}: {kind}: a stack of the program cut short: {st['frames']}")
        hs.eq(on_stack(j, "wait_stacks", "fib"), 0, f"run {k}: fib in the wait stacks")
        totals = {f["name"]: f.get("samples", {}).get("total", 0) for f in j["functions"]}
        cpu = sum(st["count"] for st in j["sample_stacks"])
        hs.check(cpu > 0 and totals["main"] >= totals["fib"] - 0.01 * cpu,
                 f"run {k}: main has {totals['main']} of {cpu} CPU samples on its stack, fib {totals['fib']}")
        rows = {m.group(2): float(m.group(1)) for m in
                re.finditer(r"^\s*[\d.]+%\s+\d+\s+([\d.]+)%.*?\s(\w+)\s+demo\.exe\s*$", t.txt, re.M)}
        hs.check("fib" in rows and "main" in rows, f"run {k}: report.txt's CPU rows of fib and main:\n{t.txt}")
        hs.check(rows["main"] >= rows["fib"] - 1.0, f"run {k}: report.txt: main {rows['main']}% total, "
                 f"fib {rows['fib']}%")
