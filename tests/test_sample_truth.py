"""Samples a user can trust (ARCHITECTURE.md decisions 12 and 13): whole
stacks through hookscope's own code, the CPU given to the code that ran,
running, ready and waiting told apart.

Targets: stubstep.exe (every instruction hookscope runs around a hooked
call, single-stepped and unwound in the process with hookscope's unwinder
over the growable function table the agent registers), pingpong.exe
(mutual recursion of functions of a few nanoseconds under main),
worksleep.exe (computing mixed with short sleeps on 1 and 8 threads; a
thread that computes, then sleeps)."""
import re

import hs

T = hs.TARGETS
OWN = re.compile(r"hookscope|\bhs_|0x[0-9a-f]{9,}$")   # hookscope's frames, or bare arena addresses


def test_every_instruction_of_hookscope_code_unwinds():
    """Every instruction stepped in an entry stub, its slow path, the
    trampoline, the timing wrapper, the thunks and probes and the stack
    capture unwinds to the true callers, with every probe option."""
    for opts, agent_min in (([], 100), (["--no-edges"], 100), (["--stacks=4"], 1000), (["--time"], 1000),
                            (["--time", "--stacks=4"], 1000)):
        t = hs.trace(f"{T}/stubstep.exe", options=opts + ["-f", "leaf_fn"], name="stubstep")
        hs.eq(t.rc, 0, f"{opts}: exit code ({t.stderr!r})")
        out = t.stdout.decode()
        m = re.search(r"stubstep states (\d+) arena (\d+) agent (\d+) program (\d+) bad (\d+)", out)
        hs.check(m, f"{opts}: output {out!r}")
        states, arena, agent, program, bad = map(int, m.groups())
        hs.eq(bad, 0, f"{opts}: states that do not unwind to the callers:\n{out}")
        hs.check(arena >= 100 and agent >= agent_min and program >= 20,
                 f"{opts}: too few states stepped (arena {arena}, agent {agent}, program {program})")


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
