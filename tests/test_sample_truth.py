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
import os
import re

import hs

T = hs.TARGETS
# hookscope's frames, or bare addresses of its arenas (which lie near the
# modules they hook; a bare 0x7f... is Wine's code on its Unix side)
OWN = re.compile(r"hookscope|\bhs_|^0x(?!7f[0-9a-f]{10}$)[0-9a-f]{9,}$")


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
    for opts, rounds in (([], 1000000), (["--time"], 4000000), (["--stacks=8"], 3000000), (["--no-hooks"], 1000000)):
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
