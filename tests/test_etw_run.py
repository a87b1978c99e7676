"""Whole runs with the ETW sampler under Wine, which has no ETW: hookscope
loads the fake of the system's ETW functions (build/tests/etw_fake.dll,
tests/support/etw_fake_dll.c) through HOOKSCOPE_ETW_API, and the fake
"records" what a script says, in terms of the real target: addresses in
its exe, in the stubs its hooks jump to, in a kernel image, and samples of
another process. Everything else is hookscope's real path: the private
session and the machine's sampling interval (tests/test_etw.py checks the
calls in detail), the .etl file in the output directory, its decode by
hookscope's own reader, the attribution of hookscope's code, the merge
with the hook counts, the naming and every output."""
import json
import os
import re

import hs

DEMO = "build/examples/demo.exe"
SPLIT = "build/tests/cpusplit.exe"
BUSY = "build/tests/busy.exe"
CRASH = "build/tests/crash.exe"
FAKE = "build/tests/etw_fake.dll"
MACHINE_INTERVAL = 10000     # the fake machine's interval before a run (100 ns units: 1 kHz)


def fake_run(name, script, options=(), target=DEMO, args=(), env=None, attach_pid=None):
    """hookscope run (attach_pid: attach to that process) with the fake
    ETW; returns (Trace, the fake's log as a list of (when, {key:
    [values]}))."""
    hs.need(FAKE)
    out = hs.outdir(name)
    sp = os.path.join(hs.ROOT, out + ".script")
    lp = os.path.join(hs.ROOT, out + ".log")
    with open(sp, "w") as f:
        f.write(script)
    if os.path.exists(lp):
        os.remove(lp)
    e = {"HOOKSCOPE_ETW_API": FAKE, "HS_FAKE_ETW_SCRIPT": sp, "HS_FAKE_ETW_LOG": lp}
    e.update(env or {})
    if attach_pid:
        e["HS_FAKE_ETW_PID"] = str(attach_pid)
        cmd = ["attach", str(attach_pid), "-q", "-o", out] + list(options)
    else:
        cmd = ["run", "-q", "-o", out] + list(options) + ["--", target] + list(args)
    p = hs.hookscope(cmd, extra_env=e, timeout=300)
    log = []
    if os.path.exists(lp):
        for line in open(lp, encoding="utf-8", errors="replace"):
            k, _, v = line.rstrip("\n").partition(" ")
            if k == "when":
                log.append((v, {}))
            elif log:
                log[-1][1].setdefault(k, []).append(v)
    return hs.Trace(p, out), log


def final(log):
    """The fake's state when hookscope unloaded it (the process's end)."""
    hs.check(log and log[-1][0] == "unload", f"the fake wrote no state at unload: {log}")
    return log[-1][1]


def interval_set(log, rate, what):
    """The machine's sampling interval was set to 10^7 / rate (100 ns
    units) for the run, then put back."""
    sets = [c for c in final(log).get("call", []) if c.startswith("set-interval ")]
    hs.eq(sets, [f"set-interval {round(1e7 / rate)}", f"set-interval {MACHINE_INTERVAL}"],
          f"{what}: the intervals set, for the run at {rate} Hz and after it")


def interval_put_back(log, what, sets_before=0):
    """The machine's interval is back as the run found it, by a call of
    hookscope's after the run's own (the run's interval can be the
    machine's: 1 kHz, the ETW default, is the fake machine's, and then the
    state alone cannot tell whether it was put back). sets_before: the
    intervals set before the run's (a clean-up's)."""
    st = final(log)
    hs.eq(st["interval"], [str(MACHINE_INTERVAL)], f"{what}: the machine's sampling interval afterwards")
    sets = [c for c in st.get("call", []) if c.startswith("set-interval ")]
    hs.eq((len(sets), sets[-1:]), (sets_before + 2, [f"set-interval {MACHINE_INTERVAL}"]),
          f"{what}: the interval set for the run, then put back ({sets})")
    hs.eq(st["foreign"], ["0"], f"{what}: a session hookscope did not start was touched")
    hs.eq(st["running"], ["0"], f"{what}: hookscope's session still runs")
    hs.check(st.get("script-error") is None, f"{what}: the script: {st.get('script-error')}")


def rvas(name):
    """The demo's functions' RVAs and calls, from a run without sampling."""
    t = hs.trace(DEMO, options=["--no-sample"], name=name + "_rvas")
    hs.eq(t.rc, 0, "the run without sampling")
    return {f["name"]: int(f["rva"], 16) for f in t.functions()}, t.calls(), t.stdout


def func(t, name):
    for f in t.json["functions"]:
        if f["name"] == name:
            return f
    raise AssertionError(f"{name} not in the report")


def test_etw_samples_merge_with_the_hooks():
    """57 samples of the target (fib's own code, a stub of fib's hook, the
    kernel under fib) and 11 of another process: the report has exactly the
    target's, attributed and named as the suspend sampler's are (the 20 in
    fib's entry stub are hookscope's own cost, not fib's CPU), next to
    call counts equal to a run without sampling; the target's output is
    the same; the session ran in the output directory and its file is
    gone; the machine's interval is put back."""
    rva, calls, stdout = rvas("etw_run_merge")
    fib, main = rva["fib"], rva["main"]
    script = f"""kernel
sample 30 exe+{fib + 4:#x} exe+{main + 0x10:#x}
sample 20 stub+{fib:#x} exe+{main + 0x10:#x}
sample 7 kernel+0x1234 exe+{fib + 4:#x} exe+{main + 0x10:#x}
foreign 11 exe+{fib + 4:#x}
"""
    t, log = fake_run("etw_run_merge", script, ["--sampler", "etw"])
    hs.eq(t.rc, 0, f"exit code (stderr {t.stderr!r})")
    hs.eq(t.stdout, stdout, "the target's output")
    interval_set(log, 1000, "run (the ETW default rate, 1 kHz)")
    interval_put_back(log, "run")
    st = final(log)
    hs.check(st["file"][0].lower().endswith(os.path.join(t.out, "hookscope.etl").replace("/", "\\").lower()),
             f"the session's file: {st['file']}")
    hs.check(st["session"][0].startswith("hookscope-"), f"the session's name: {st['session']}")
    hs.check(not os.path.exists(os.path.join(hs.ROOT, t.out, "hookscope.etl")), "the .etl file was removed")
    s = t.json["sampling"]
    hs.eq((s["backend"], s["samples"], s["wait_samples"], s["hookscope_samples"], s["threads"]), ("etw", 37, 0, 20, 1),
          "sampling (the stub's samples are hookscope's)")
    hs.eq(s["lost"], 7, "the events the trace says it lost")
    hs.check(any("lost 7 events and 3 buffers" in w for w in t.json["warnings"]),
             f"the losses are a warning: {t.json['warnings']}")
    hs.eq(t.calls(), calls, "call counts with the ETW sampler = without sampling")
    hs.eq(func(t, "fib")["samples"], {"self": 30, "total": 37}, "fib's samples (the stub's are hookscope's)")
    hs.eq(func(t, "main")["samples"], {"self": 0, "total": 37}, "main's samples")
    kern = [m for m in t.json["loaded_modules"] if m["name"] == "ntoskrnl.exe"]
    hs.eq(len(kern), 1, "the kernel image among the loaded modules")
    kern = kern[0]
    hs.eq((kern.get("kernel"), kern["samples"]["self"]), (True, 7), "the kernel image")
    stacks = {}
    for kind in ("sample_stacks", "hookscope_stacks"):
        for st in t.json[kind]:
            key = (kind,) + tuple(f.split("+")[0] for f in st["frames"])
            stacks[key] = stacks.get(key, 0) + st["count"]
    hs.eq(stacks, {("sample_stacks", "demo.exe!fib", "demo.exe!main"): 30,
                   ("sample_stacks", "ntoskrnl.exe", "demo.exe!fib", "demo.exe!main"): 7,
                   ("hookscope_stacks", "demo.exe!fib", "demo.exe!main"): 20}, "the sample stacks")
    folded = t.file("cpu-stacks.folded")
    hs.eq(folded, "demo.exe!main;demo.exe!fib 30\ndemo.exe!main;demo.exe!fib;ntoskrnl.exe+0x1234_[k] 7\n",
          "cpu-stacks.folded (kernel frames marked _[k])")
    hs.eq(t.file("hookscope-stacks.folded"), "demo.exe!main;demo.exe!fib 20\n",
          "hookscope-stacks.folded: the stub's samples, under the function it serves")
    hs.check("etw sampler" in t.txt, "report.txt names the backend")


def test_etw_context_switches_give_ready_and_wait():
    """The session asks for context switches and readies with their stacks
    (EnableFlags CSWITCH | DISPATCHER, stack classes SampledProfile 46,
    CSwitch 36, ReadyThread 50); the fake's trace has the target's first
    thread run at 1 ms, block at 3, be readied at 6 and run at 8 (in fib
    under main), be preempted at 9 and run at 12 (in main): at 2000 Hz,
    on the run's 0.5 ms grid (not the 1 ms the machine had when the
    session started, which the trace's CollectionStart shows), waiting
    [3, 6) 6 samples and ready [6, 8) 4 and [9, 12) 6, each with the stack
    walked where it ended; running 3 ms, waiting 3 ms, ready 5 ms."""
    rva, calls, stdout = rvas("etw_run_states")
    fib, main = rva["fib"], rva["main"]
    script = f"""sample 4 exe+{fib + 4:#x} exe+{main + 0x10:#x}
switch 1 main idle ready
switch 3 idle main waiting
readied 6 main
switch 8 main idle ready exe+{fib + 4:#x} exe+{main + 0x10:#x}
switch 9 idle main ready
switch 12 main idle ready exe+{main + 0x20:#x}
"""
    t, log = fake_run("etw_run_states", script, ["--sampler", "etw", "--sample-rate", "2000"])
    hs.eq(t.rc, 0, f"exit code (stderr {t.stderr!r})")
    interval_put_back(log, "run")
    st = final(log)
    hs.eq(st["flags"], ["0x1000817"], "EnableFlags: process, thread, image, profile, cswitch, dispatcher")
    hs.eq(st["stack-class"], ["perfinfo 46", "thread 36", "thread 50"], "the classes whose stacks are walked")
    s = t.json["sampling"]
    hs.eq((s["backend"], s["samples"], s["wait_samples"], s["ready_samples"], s["hookscope_samples"]),
          ("etw", 4, 6, 10, 0), "sampling: CPU, wait, ready, hookscope")
    hs.check("off_cpu_known" not in s and "wait_no_stack" not in s, f"known, every stretch with a stack: {s}")
    th = [x for x in t.json["thread_list"] if x["wait_samples"] or x["ready_samples"]]
    hs.eq([(x["cpu_samples"], x["wait_samples"], x["ready_samples"], x["running_s"], x["wait_s"], x["ready_s"])
           for x in th], [(4, 6, 10, 0.003, 0.003, 0.005)], "the first thread's samples and times")

    def named(kind):
        return sorted((tuple(f.split("+")[0] for f in x["frames"]), x["count"]) for x in t.json[kind])

    hs.eq(named("wait_stacks"), [(("demo.exe!fib", "demo.exe!main"), 6)], "wait stacks")
    hs.eq(named("ready_stacks"), [(("demo.exe!fib", "demo.exe!main"), 4), (("demo.exe!main",), 6)], "ready stacks")
    hs.eq(t.calls(), calls, "call counts with the ETW sampler = without sampling")
    hs.check(any(l.startswith("samples    4 CPU, 10 ready, 6 wait, 0 in hookscope (etw sampler")
                 for l in t.txt.splitlines()), "report.txt's samples line")


def test_keep_etl_and_report_it_again():
    """--keep-etl keeps the trace; `report --etl` reads it with the same
    samples; a later run into the same directory without it removes it."""
    rva, _, _ = rvas("etw_run_keep")
    script = f"sample 9 exe+{rva['fib'] + 4:#x} exe+{rva['main'] + 0x10:#x}\nforeign 4 exe+0x1000\n"
    t, log = fake_run("etw_run_keep", script, ["--sampler", "etw", "--keep-etl"])
    hs.eq(t.rc, 0, f"exit code (stderr {t.stderr!r})")
    interval_put_back(log, "--keep-etl")
    etl = os.path.join(t.out, "hookscope.etl")
    hs.check(os.path.exists(os.path.join(hs.ROOT, etl)), "hookscope.etl kept")
    hs.eq(t.json["sampling"].get("etl_file"), "hookscope.etl", "report.json names the kept trace")
    pid = t.json["target"]["pid"]
    again = hs.outdir("etw_run_keep_report")
    p = hs.hookscope(["report", "--etl", etl, "--pid", str(pid), "-o", again])
    hs.eq(p.returncode, 0, f"report --etl: {p.stderr!r}")
    r = json.load(open(os.path.join(hs.ROOT, again, "report.json"), encoding="utf-8"))
    hs.eq(r["sampling"]["samples"], 9, "report --etl: the target's samples")
    hs.eq({f["name"]: f["samples"]["self"] for f in r["functions"] if f.get("samples", {}).get("self")},
          {"fib": 9}, "report --etl: self samples by function")
    t2, _ = fake_run("etw_run_keep", script, ["--sampler", "etw"])
    hs.eq(t2.rc, 0, "the run without --keep-etl")
    hs.check(not os.path.exists(os.path.join(hs.ROOT, etl)), "the earlier run's hookscope.etl is removed")
    hs.check("etl_file" not in t2.json["sampling"], "report.json names no trace")


def test_etw_failures_and_auto():
    """Each step of starting the session can fail: `--sampler etw` says so
    in one line and does not run the target; `auto` (the default) falls
    back to the suspend sampler whatever failed and the report says which
    ran; the machine's interval is put back whatever failed."""
    cases = [
        # (script, sampler option, exit code, message, backend that ran)
        ("fail privilege 1314\n", ["--sampler", "etw"], 125, "ETW sampling needs SeSystemProfilePrivilege", None),
        ("fail privilege 1314\n", [], 0, None, "suspend"),
        ("fail start 5\n", ["--sampler", "auto"], 0, None, "suspend"),
        ("fail start 5\n", ["--sampler", "etw"], 125, "cannot start an ETW session", None),
        ("fail set 87\n", ["--sampler", "etw"], 125, "setting the sampling interval", None),
        ("fail stack 87\n", ["--sampler", "auto"], 0, None, "suspend"),
        ("fail stack 87\n", ["--sampler", "etw"], 125, "stack", None),
    ]
    for script, opts, rc, text, backend in cases:
        what = f"{script.strip()} {opts}"
        t, log = fake_run("etw_run_fail", script, opts, target=SPLIT, args=["0.2"])
        err = t.stderr.decode(errors="replace")
        hs.eq(t.rc, rc, f"{what}: exit code ({err!r})")
        if text:
            lines = err.splitlines()
            hs.check(len(lines) == 1 and text in lines[0] and lines[0].startswith("hookscope: "),
                     f"{what}: one line naming the failure: {err!r}")
            hs.eq(t.stdout, b"", f"{what}: the target did not run")
        else:
            hs.eq(t.json["sampling"]["backend"], backend, f"{what}: the backend that ran")
            hs.check(f"{backend} sampler" in t.txt, f"{what}: report.txt says which backend ran")
        st = final(log)
        hs.eq(st["interval"], [str(MACHINE_INTERVAL)], f"{what}: the machine's interval afterwards")
        hs.eq(st["running"], ["0"], f"{what}: the session still runs")


def test_timed_32bit_program_is_not_sampled_by_etw():
    """A 32-bit program under --time has its open calls' return addresses
    moved to the agent's shadow stacks (agent/time32.S): ETW's kernel walk
    would find hookscope's return thunk where each caller should be, and
    only the suspend sampler puts them back. So `auto` passes over ETW
    there (ETW available: the fake) and says why with -v; `--sampler etw`
    runs as asked, with a warning naming the fix. Untimed, or 64-bit and
    timed, auto takes ETW as always."""
    hs.need_wow64()
    split32 = hs.need(f"{hs.TARGETS32}/cpusplit.exe")
    cases = [
        # (target, options, backend that ran, warned)
        (split32, ["--time"], "suspend", False),
        (split32, ["--time", "--sampler", "etw"], "etw", True),
        (split32, [], "etw", False),
        (SPLIT, ["--time"], "etw", False),
    ]
    for target, opts, backend, warned in cases:
        what = f"{target} {opts}"
        t, _log = fake_run("etw_run_timed32", "sample 5 exe+0x1010\n", opts, target=target, args=["0.2"])
        hs.eq(t.rc, 0, f"{what}: exit code ({t.stderr.decode(errors='replace')!r})")
        hs.eq(t.json["sampling"]["backend"], backend, f"{what}: the backend that ran")
        warn = [w for w in t.json["warnings"] if "return thunk" in w]
        hs.eq(warn, ["the etw sampler's stacks of a timed 32-bit program have hookscope's return thunk where the "
                     "callers of open timed calls are (use --sampler suspend)"] if warned else [],
              f"{what}: the warning")
    t, _log = fake_run("etw_run_timed32", "sample 5 exe+0x1010\n", ["--time", "-v"], target=split32, args=["0.2"])
    hs.check("the etw sampler would find hookscope's return thunk where the callers of timed calls are (a timed "
             "32-bit program); sampling with the suspend sampler instead" in t.stderr.decode(errors="replace"),
             f"-v says why ETW was passed over: {t.stderr!r}")


def test_interval_put_back_on_every_way_out():
    """--duration ends the target, a crashing target, and a target that
    runs out: each run stops the session and puts the interval back, and
    reports the samples the trace has."""
    cases = [
        ("duration", SPLIT, ["30"], ["--duration", "1"], 0),
        ("crash", CRASH, [], [], None),
        ("exit", SPLIT, ["0.1"], [], 0),
    ]
    for what, target, args, opts, rc in cases:
        t, log = fake_run("etw_run_way_" + what, "sample 3 exe+0x1000\n", ["--sampler", "etw"] + opts,
                          target=target, args=args)
        if rc is not None:
            hs.eq(t.rc, rc, f"{what}: exit code ({t.stderr!r})")
        else:
            hs.check(t.rc != 0, f"{what}: a crash is not a success")
        interval_put_back(log, what)
        hs.eq(t.json["sampling"]["samples"], 3, f"{what}: the samples recorded")
        interval_set(log, 1000, what)


def test_etw_rate_end_to_end():
    """--sample-rate 250 with the ETW sampler: the machine's interval is set
    to 10^7 / 250 = 40000 (100 ns units) for the run and put back; the fake
    kernel samples the target's busy thread once per interval of its CPU
    time (and another process once: the machine is seen to sample right
    after the start, decision 15); report.json says 250 Hz, and the thread's CPU samples are the CPU
    time busy.exe measured itself x 250 (within a clock tick's samples and
    one more, and 10%)."""
    hs.need(BUSY)
    t = hs.trace(BUSY, ["0.1"], options=["--no-sample"], name="etw_run_rate_rvas")
    hs.eq(t.rc, 0, "the run without sampling")
    spin = {f["name"]: int(f["rva"], 16) for f in t.functions()}["spin"]
    for rate in (250, 40):
        t, log = fake_run(f"etw_run_rate{rate}", f"busy exe+{spin + 4:#x}\nforeign 1 exe+{spin + 4:#x}\n", ["--sampler", "etw", "--sample-rate",
                          str(rate)], target=BUSY, args=["1.5"])
        hs.eq(t.rc, 0, f"{rate} Hz: exit code (stderr {t.stderr!r})")
        interval_set(log, rate, f"{rate} Hz")
        interval_put_back(log, f"{rate} Hz")
        hs.eq(t.json["sampling"]["rate_hz"], rate, f"{rate} Hz: sampling.rate_hz")
        m = re.match(r"burner (\d+) cpu_us (\d+) wall_us \d+", t.stdout.decode())
        hs.check(m, f"busy.exe's output {t.stdout!r}")
        tid, cpu_us = int(m.group(1)), int(m.group(2))
        th = {x["tid"]: x for x in t.json["thread_list"]}
        hs.check(tid in th, f"{rate} Hz: the busy thread {tid} is not in the report: {t.json['thread_list']}")
        want, got = cpu_us / 1e6 * rate, th[tid]["cpu_samples"]
        hs.check(abs(got - want) <= min(0.016 * rate + 1, 0.1 * want),
                 f"{rate} Hz: {got} CPU samples for the busy thread's {cpu_us / 1e6:.3f} s of CPU (want {want:.1f}; "
                 f"the fake read {final(log).get('busy-cpu')} x 100 ns)")
        hs.eq(t.json["sampling"]["samples"], got, f"{rate} Hz: every sample is the busy thread's")


def test_interval_changed_by_another_tool():
    """Another tool sets the machine's sampling interval while hookscope's
    session runs (the fake's 'retune', at the session's flush): at the end
    hookscope reads it back, says so in one line and in the report's
    warnings, and leaves the interval as that tool set it (no put-back);
    a run without it puts the machine's interval back."""
    rva, _, _ = rvas("etw_run_retune")
    script = f"sample 5 exe+{rva['fib'] + 4:#x} exe+{rva['main'] + 0x10:#x}\nretune 20000\n"
    t, log = fake_run("etw_run_retune", script, ["--sampler", "etw", "--sample-rate", "250"])
    hs.eq(t.rc, 0, f"exit code (stderr {t.stderr!r})")
    sets = [c for c in final(log).get("call", []) if c.startswith("set-interval ")]
    hs.eq(sets, ["set-interval 40000"], "the run's interval set, and not put back over the other tool's")
    hs.eq(final(log)["interval"], ["20000"], "the machine's interval, as the other tool left it")
    want = ("another tool changed the machine's sampling interval during the run (from 40000 to 20000 x 100 ns): "
            "samples after the change came at 500 Hz; it was left as that tool set it")
    hs.check(any(w == want for w in t.json["warnings"]), f"the warning: {t.json['warnings']}")
    hs.check(want in t.stderr.decode(errors="replace"), f"the line on stderr: {t.stderr!r}")


def test_etw_samples_on_the_timeline():
    """run --sampler etw --timeline: the session's samples (the fake's
    "timed" script: at times of the real performance counter, spread over
    the session, as hookscope's own QPC-clocked session records them) are
    on the timeline as the suspend sampler's are: one instant event per
    CPU sample of the target (none of another process'), 30 named fib and
    the 20 in fib's stub as hookscope's ("hookscope serving fib": the entry
    probe runs before fib's call is timed), in time order, inside the run
    (from its start to its wall time), on the thread that has the calls."""
    rva, _, stdout = rvas("etw_run_timeline")
    fib, main = rva["fib"], rva["main"]
    script = f"""timed
sample 30 exe+{fib + 4:#x} exe+{main + 0x10:#x}
sample 20 stub+{fib:#x} exe+{main + 0x10:#x}
foreign 11 exe+{fib + 4:#x}
"""
    t, log = fake_run("etw_run_timeline", script, ["--sampler", "etw", "--timeline"])
    hs.eq(t.rc, 0, f"exit code (stderr {t.stderr!r})")
    hs.eq(t.stdout, stdout, "the target's output")
    interval_put_back(log, "run")
    trace = json.loads(t.file("trace.json"))
    evs = trace["traceEvents"]
    samples = [e for e in evs if e.get("cat") in ("sample", "hookscope-sample")]
    hs.eq(sorted((e["cat"], e["name"]) for e in samples),
          sorted([("sample", "fib")] * 30 + [("hookscope-sample", "hookscope serving fib")] * 20),
          "the target's samples, each an instant event (the stub's are hookscope's)")
    hs.eq(len(t.json["timeline"]["samples"]), 50, "report.json's timeline samples")
    calls_tid = {e["tid"] for e in evs if e["ph"] == "X"}
    hs.eq({e["tid"] for e in samples}, calls_tid, "on the thread that made the calls")
    ts = [e["ts"] for e in samples]
    wall_us = t.json["target"]["wall_time_s"] * 1e6
    hs.check(ts == sorted(ts) and len(set(ts)) == 50, "in time order, one time each")
    hs.check(0 <= ts[0] and ts[-1] <= wall_us + 1e6, f"inside the run: {ts[0]} .. {ts[-1]} us (wall {wall_us:.0f} us)")
    hs.eq([e["args"]["stack"] for e in samples if e["cat"] == "sample"][0], ["demo.exe!main", "demo.exe!fib"],
          "a sample's stack, outermost first")


def test_etw_run_names_jit_compiled_code():
    """A .NET program under run --sampler etw: the session enables the
    runtime's provider for the target only (its process filter), verbose,
    with Loader, JIT and NGen (its per-method events suppressed), and the
    rundown provider with StartRundown (a runtime already running lists
    what it compiled); the runtime's MethodLoadVerbose events then name
    the samples in JIT-compiled code (here in no image), in every output.
    The target has ended when the session stops: no end rundown. With
    the enabling refused, the run goes on and the frames stay addresses."""
    rva, _, stdout = rvas("etw_run_jit")
    main = rva["main"]
    script = f"""jit 0x7ff700010000 0x100 App.Worker Compute
jit 0x7ff700020000 0x80 App.Worker Idle
sample 12 abs+0x7ff700010010 abs+0x7ff700020040 exe+{main + 0x10:#x}
sample 5 abs+0x7ff700020004 exe+{main + 0x10:#x}
"""
    t, log = fake_run("etw_run_jit", script, ["--sampler", "etw"])
    hs.eq(t.rc, 0, f"exit code (stderr {t.stderr!r})")
    hs.eq(t.stdout, stdout, "the target's output")
    st = final(log)
    hs.eq(st.get("enabled"), ["clr-runtime 5 0x40038 target", "clr-rundown 5 0x78 target"],
          "the providers enabled: the runtime's (Loader, JIT, NGen suppressed) and a start rundown, for the target")
    folded = sorted(t.file("cpu-stacks.folded").splitlines())
    hs.eq([l.rsplit(" ", 1)[1] for l in folded], ["12", "5"] if "Compute" in folded[0] else ["5", "12"],
          f"two stacks: {folded}")
    names = {l.rsplit(" ", 1)[1]: [f.split("!")[-1] for f in l.rsplit(" ", 1)[0].split(";")] for l in folded}
    hs.eq(names, {"12": ["main", "App.Worker.Idle", "App.Worker.Compute"], "5": ["main", "App.Worker.Idle"]},
          "the JIT-compiled frames named by the runtime's events")
    hs.check("App.Worker.Compute" in t.txt, "report.txt names the method")
    t2, log2 = fake_run("etw_run_jit_refused", "fail enable 5\n" + script, ["--sampler", "etw"])
    hs.eq(t2.rc, 0, f"refused: exit code (stderr {t2.stderr!r})")
    hs.eq(final(log2).get("enabled"), None, "refused: nothing enabled")
    folded2 = t2.file("cpu-stacks.folded")
    hs.check("App.Worker" not in folded2 and "0x7ff700010010" in folded2.replace("+", " "),
             f"refused: the frames stay addresses: {folded2!r}")
    hs.eq(t2.json["sampling"]["samples"], 17, "refused: every sample still there")


def test_etw_attach_ends_with_a_rundown():
    """attach --sampler etw to a process that runs on: the session enables
    the runtime's and the rundown's providers at its start as a run does,
    and before it stops, the target still running, the rundown's again
    with EndRundown (0x138), for the target only; the target goes on."""
    import test_attach
    p, pid = test_attach.start()
    with p:
        t, log = fake_run("etw_attach_rundown", "sample 5 exe+0x1010\n", ["--sampler", "etw", "-d", "1"],
                          attach_pid=pid)
        hs.eq(t.rc, 0, f"exit code (stderr {t.stderr!r})")
        hs.eq(final(log).get("enabled"), ["clr-runtime 5 0x40038 target", "clr-rundown 5 0x78 target",
                                          "clr-rundown 5 0x138 target"], "the providers enabled, the end rundown last")
        hs.eq(t.json["target"]["stop"], "detach", "detached")
        hs.eq(test_attach.finish(p)[0], 0, "the target went on, nothing wrong")
