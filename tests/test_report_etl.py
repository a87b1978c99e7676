"""hookscope report --etl: one process of a trace recorded on Windows as a
profile (the same outputs as a run), or a table of the trace's processes.
The figures are those of hookscope's ETL reader, which tests/test_etl.py
holds against an independent decoder (tests/etl_reference.py) and
PerfView's own baseline; each thread's time running, ready and waiting
from the context switches is held against the same independent decoder
here."""
import datetime
import json
import os
import re
import subprocess

import etl_reference
import hs

PPT = "build/fixtures/etl/ppt-win7-x64.etl"
PERFVIEW = "build/fixtures/etl/perfview-win10-x86.etl"
ETLGEN = "build/native/tools/etlgen"


def load(out):
    with open(os.path.join(hs.ROOT, out, "report.json"), encoding="utf-8") as f:
        return json.load(f)


def module_self(j):
    got = {}
    for m in j["modules"] + j["loaded_modules"]:
        s = m.get("samples", {}).get("self", 0)
        if s:
            got[m["name"]] = s
    return got


def test_process_table():
    hs.need(PPT)
    p = hs.hookscope(["report", "--etl", PPT])
    hs.eq(p.returncode, 0, "exit code")
    lines = p.stdout.decode().splitlines()
    hs.eq(lines[0].split(), ["pid", "samples", "with", "stack", "process"], "header")
    hs.eq(lines[1].split(), ["0", "125873", "125869", "Idle"], "the idle process first")
    hs.eq(lines[2].split(), ["5100", "8754", "8750", "POWERPNT.EXE"], "then PowerPoint")
    hs.check(lines[-1].endswith("processes with samples; report one with --pid N or --process NAME"), lines[-1])


def test_powerpoint_by_pid():
    hs.need(PPT)
    out = hs.outdir("etl-ppt")
    p = hs.hookscope(["report", "-q", "--etl", PPT, "--pid", "5100", "-o", out])
    hs.eq(p.returncode, 0, f"exit code ({p.stderr.decode(errors='replace')})")
    j = load(out)
    hs.eq(j["target"]["pid"], 5100, "pid")
    hs.eq(j["target"]["stop"], "recorded", "stop")
    hs.eq((j["sampling"]["backend"], j["sampling"]["samples"]), ("etw", 8754), "samples")
    hs.eq(sum(s["count"] for s in j["sample_stacks"]), 8754, "every sample in a stack")
    got = module_self(j)
    for name, n in (("WindowsCodecs.dll", 3790), ("GdiPlus.dll", 2929), ("ntoskrnl.exe", 1468), ("msvcrt.dll", 161)):
        hs.eq(got.get(name), n, f"self samples of {name}")
    kernel = {m["name"] for m in j["loaded_modules"] if m.get("kernel")}
    hs.check("ntoskrnl.exe" in kernel and "GdiPlus.dll" not in kernel, f"kernel modules marked: {sorted(kernel)[:5]}")
    # no image file and no PDB here: frames are module+offset
    hs.check(all("+0x" in f for s in j["sample_stacks"] for f in s["frames"]), "frames are module+0xoff")


def test_idle_process_by_pid_zero():
    """--pid 0 is the Idle process, which the table lists first: its
    samples (the processors' idle time) as any process's."""
    hs.need(PPT)
    out = hs.outdir("etl-idle")
    p = hs.hookscope(["report", "-q", "--etl", PPT, "--pid", "0", "-o", out])
    hs.eq(p.returncode, 0, f"exit code ({p.stderr.decode(errors='replace')})")
    j = load(out)
    hs.eq((j["target"]["pid"], j["target"]["path"], j["sampling"]["samples"]), (0, "Idle", 125873),
          "the Idle process and its samples")


def test_perfview_by_name_compressed_with_stack_keys():
    hs.need(PERFVIEW)
    out = hs.outdir("etl-perfview")
    p = hs.hookscope(["report", "-q", "--etl", PERFVIEW, "--process", "perfview.exe", "-o", out])
    hs.eq(p.returncode, 0, f"exit code ({p.stderr.decode(errors='replace')})")
    j = load(out)
    hs.eq((j["target"]["pid"], j["sampling"]["samples"]), (3988, 637), "pid and samples")
    got = module_self(j)
    for name, n in (("clr.dll", 156), ("ntoskrnl.exe", 103), ("clrjit.dll", 102), ("hal.dll", 61)):
        hs.eq(got.get(name), n, f"self samples of {name}")


def txt_modules(text):
    """report.txt's modules table: [(module, self, total)], and its unnamed
    places: {place: self}."""
    mods, places = [], {}
    part = text.split("\nmodules: the CPU samples by module", 1)[1].split("\nwait: ", 1)[0]
    table, _, rest = part.partition("\ncode no function name covers")
    for line in table.splitlines():
        f = line.split()
        if len(f) in (5, 6) and f[0].isdigit() and f[1].endswith("%"):
            mods.append((f[4], int(f[0]), int(f[2])))
    for line in rest.splitlines():
        f = line.split()
        if len(f) == 3 and f[0].isdigit() and f[1].endswith("%"):
            places[f[2]] = int(f[0])
    return mods, places


def test_foreign_trace_by_module():
    """A trace whose code has no names (no images, no PDBs here): report.txt
    shows the CPU samples by module, self (leaf frame) and total (stacks
    through it, once per stack), equal to report.json's modules and
    stacks, and the unnamed leaf places by samples, adding up to the
    samples no function name covers."""
    hs.need(PERFVIEW)
    out = hs.outdir("etl-perfview-modules")
    p = hs.hookscope(["report", "-q", "--etl", PERFVIEW, "--process", "perfview.exe", "-o", out])
    hs.eq(p.returncode, 0, f"exit code ({p.stderr.decode(errors='replace')})")
    j = load(out)
    p = hs.hookscope(["report", out, "--top", "1000"])
    hs.eq(p.returncode, 0, f"report --top ({p.stderr.decode(errors='replace')})")
    mods, places = txt_modules(p.stdout.decode())
    names = {m["id"]: m["name"] for m in j["modules"] + j["loaded_modules"]}
    selfs = {m["id"]: m.get("samples", {}).get("self", 0) for m in j["modules"] + j["loaded_modules"]}
    totals, leaves = {}, {}
    for st in j["sample_stacks"]:
        for m in set(st["frame_modules"]) - {-1, None}:
            totals[m] = totals.get(m, 0) + st["count"]
        if "!" not in st["frames"][0]:
            leaves[st["frames"][0]] = leaves.get(st["frames"][0], 0) + st["count"]
    want = sorted((names[m], selfs[m], t) for m, t in totals.items())
    hs.eq(sorted(mods), want, "module rows (name, self, total) = report.json's")
    no_module = sum(st["count"] for st in j["sample_stacks"] if st["frame_modules"][0] in (None, -1))
    hs.check(no_module > 0, "leaves in no module (kernel addresses outside the images)")
    hs.eq(sum(s for _, s, _ in mods), 637 - no_module, "the module rows' self samples: every leaf in a module")
    hs.eq(places, leaves, "unnamed places = report.json's stacks by leaf frame")
    hs.check(re.search(r"  ntdll\.dll \(SysWOW64\)\n", p.stdout.decode()) and
             re.search(r"  ntdll\.dll \(System32\)\n", p.stdout.decode()),
             "a 32-bit program's two ntdll.dll told apart by their folders")
    unnamed = int(p.stdout.decode().split(" samples in code no function name covers")[0].rsplit("(", 1)[1])
    hs.eq(sum(places.values()), unnamed, "the places add up to the samples no function name covers")


def test_trace_header():
    """report.txt's header says what the trace's own header says: the
    machine (OS version and build, CPUs), when it began, how long its
    events span; report.json keeps it (and report DIR writes it again);
    a process name several processes have says which one was taken and
    how to list them."""
    hs.need(PPT)
    hs.need(PERFVIEW)
    cases = [(PPT, ["--pid", "5100"], "Windows 6.1 build 7601, 8 CPUs", "2011-08-30 04:56:58 UTC", 1),
             (PERFVIEW, ["--process", "svchost.exe"], "Windows 6.2 build 9200, 8 CPUs", "2020-07-29 00:06:19 UTC", 11)]
    for trace, pick, machine, start, named in cases:
        out = hs.outdir("etl-header")
        p = hs.hookscope(["report", "-q", "--etl", trace] + pick + ["-o", out])
        hs.eq(p.returncode, 0, f"exit code ({p.stderr.decode(errors='replace')})")
        j = load(out)
        tr = j["trace"]
        hs.eq((tr["file"], tr["machine"], tr["start"], tr["processes_named"]), (trace, machine, start, named),
              f"{trace}: report.json's trace")
        # the independent decoder's header and first and last events
        info = etl_reference.build(os.path.join(hs.ROOT, trace)).info
        ver = info["version"]
        hs.eq(machine, f"Windows {ver & 0xff}.{(ver >> 8) & 0xff} build {info['provider_version']}, {info['ncpus']} CPUs",
              f"{trace}: the machine as the independent decoder reads the header")
        began = datetime.datetime(1601, 1, 1) + datetime.timedelta(microseconds=info["start_time"] // 10)
        hs.eq(start, began.strftime("%Y-%m-%d %H:%M:%S UTC"), f"{trace}: the start as Python reads the FILETIME")
        span = (info["last_ts"] - info["first_ts"]) / info["clock_hz"]
        hs.check(abs(tr["span_s"] - span) < 1e-6, f"{trace}: span {tr['span_s']} vs {span}")
        with open(os.path.join(hs.ROOT, out, "report.txt"), encoding="utf-8") as f:
            txt = f.read()
        hs.check(f"\ntrace      {trace} (its header: {machine}; began {start}, {tr['span_s']:.3f} s of events)\n" in txt,
                 txt[:700])
        line = (f"\nprocess    the one with the most samples of the {named} named svchost.exe ('hookscope report "
                f"--etl {trace}' lists them; --pid N takes another)\n")
        hs.eq(line in txt, named > 1, f"{trace}: the process line")
        hs.check(f"read from {trace}" not in txt, "the trace is not a warning")
        again = hs.outdir("etl-header-again")
        p = hs.hookscope(["report", "-q", "-o", again, out])
        with open(os.path.join(hs.ROOT, again, "report.txt"), encoding="utf-8") as f:
            hs.eq(f.read(), txt, f"{trace}: report DIR writes the header again")


def jit_self(j):
    """[(module, function, self samples)] of the functions of JIT modules with self samples."""
    jit = {m["id"] for m in j["modules"] + j["loaded_modules"] if m.get("jit")}
    return sorted((f["module"], f["name"], f["samples"]["self"]) for f in j["functions"]
                  if f["module_id"] in jit and f.get("samples", {}).get("self"))


def test_jit_names_against_the_independent_decoder():
    """Test.x86.exe's methods come from MethodLoadVerbose events (and their
    unloads), PerfView's from the rundown's MethodDCEndVerbose alone: both
    named per method, self samples exactly as the independent decoder counts
    leaves in each method's range at the sample's time."""
    hs.need(PERFVIEW)
    for process, methods, samples in (("Test.x86.exe", 28, 2502), ("perfview.exe", 30, 36)):
        out = hs.outdir("etl-jit-" + process)
        p = hs.hookscope(["report", "-q", "--etl", PERFVIEW, "--process", process, "-o", out])
        hs.eq(p.returncode, 0, f"exit code ({p.stderr.decode(errors='replace')})")
        j = load(out)
        want = sorted(((mod or "") + "[jit]", name, n)
                      for (mod, name, _start), n in etl_reference.jit_samples(os.path.join(hs.ROOT, PERFVIEW),
                                                                              process).items())
        got = jit_self(j)
        hs.eq(got, want, f"{process}: JIT methods' self samples")
        hs.eq((len(got), sum(n for _m, _f, n in got)), (methods, samples), f"{process}: methods and samples")
        if process == "Test.x86.exe":
            test_out = out
    # every output names them: the folded stacks and the report
    folded = open(os.path.join(hs.ROOT, test_out, "cpu-stacks.folded")).read()
    hs.check("clr.dll+0x2552;Test.x86.exe[jit]!Test.Program.Main;" in folded, "Main under the CLR in the folded stacks")
    txt = open(os.path.join(hs.ROOT, test_out, "report.txt")).read()
    top = txt.split(" self%   total")[1].splitlines()[1].split()
    hs.eq(top[-2:], ["System.DateTime.GetDatePart", "mscorlib.dll[jit]"], "report.txt's top function")


def test_report_writes_an_etl_profile_again():
    hs.need(PERFVIEW)
    out = hs.outdir("etl-again")
    again = hs.outdir("etl-again2")
    hs.eq(hs.hookscope(["report", "-q", "--etl", PERFVIEW, "--pid", "3988", "-o", out]).returncode, 0, "etl")
    hs.eq(hs.hookscope(["report", "-q", "-o", again, out]).returncode, 0, "report DIR")
    for f in sorted(os.listdir(os.path.join(hs.ROOT, out))):
        a = open(os.path.join(hs.ROOT, out, f), "rb").read()
        b = open(os.path.join(hs.ROOT, again, f), "rb").read()
        hs.check(a == b, f"{f} written again differs")


def test_errors():
    hs.need(PPT)
    cases = [
        (["report", "--etl", PPT, "--pid", "99999"], 125,
         "hookscope: the trace has no process with id 99999 (run 'hookscope report --etl FILE' for the processes "
         "it has)"),
        (["report", "--etl", PPT, "--process", "nope.exe"], 125,
         "hookscope: the trace has no process named 'nope.exe' (run 'hookscope report --etl FILE' for the "
         "processes it has)"),
        (["report", "--pid", "5"], 2, "hookscope: --pid and --process choose a process of an --etl trace"),
        (["report", "--etl", PPT, "dir"], 2, "hookscope: report reads a run's directory or an --etl file, not both"),
        (["report", "--etl", PPT, "--pid", "5100", "--format", "trace"], 125,
         "hookscope: this trace has nothing for --format trace (an ETW trace has samples, no hooked calls: "
         "trace.json is the timeline of a run with --timeline)"),
        (["report", "--etl", PPT, "--pid", "5100", "--format", "folded"], 125,
         "hookscope: this trace has nothing for --format folded (an ETW trace has samples, no hooked calls: "
         "--format folded-cpu writes its CPU samples' stacks)"),
    ]
    for args, code, msg in cases:
        p = hs.hookscope(args)
        hs.eq(p.returncode, code, f"exit code of {args}")
        hs.eq(p.stderr.decode().splitlines()[0], msg, f"message of {args}")
    # a truncated trace: one line naming the offset
    data = open(os.path.join(hs.ROOT, PPT), "rb").read(200000)
    cut = os.path.join(hs.OUT, "cut.etl")
    os.makedirs(hs.OUT, exist_ok=True)
    open(cut, "wb").write(data)
    rel = os.path.relpath(cut, hs.ROOT)
    p = hs.hookscope(["report", "--etl", rel, "--pid", "5100", "-o", hs.outdir("etl-cut")])
    hs.eq(p.returncode, 125, "exit code of a truncated trace")
    lines = p.stderr.decode().splitlines()
    hs.eq(len(lines), 1, f"one line: {lines}")
    hs.check(lines[0].startswith(f"hookscope: {rel}: byte ") and "truncated" in lines[0], lines[0])


def test_powerpoint_running_ready_waiting():
    """The ppt trace has 29533 context switches and no ReadyThread: each
    POWERPNT.EXE thread's CPU samples, its wait and ready samples (on the
    trace's 1 ms grid) and its time running, waiting and ready (to the
    100 ns), exactly as the independent decoder finds them by the same
    rules. No stack was walked for the context switches: every wait and
    ready sample is counted without one, and said so."""
    hs.need(PPT)
    out = hs.outdir("etl-ppt-states")
    p = hs.hookscope(["report", "-q", "--etl", PPT, "--process", "POWERPNT.EXE", "-o", out])
    hs.eq(p.returncode, 0, f"exit code ({p.stderr.decode(errors='replace')})")
    j = load(out)
    want = etl_reference.off_cpu(os.path.join(hs.ROOT, PPT), "POWERPNT.EXE")
    hs.check(want is not None, "the reference finds context switches")

    def units(s):                   # report.json's seconds (7 decimals) in 100 ns units
        return int(round(s * 1e7))

    got = {t["tid"]: (t["cpu_samples"], t["wait_samples"], t["ready_samples"], units(t["running_s"]),
                      units(t["wait_s"]), units(t["ready_s"])) for t in j["thread_list"]}
    ref = {tid: (t["cpu"], t["wait"], t["ready"], t["run_100ns"], t["wait_100ns"], t["ready_100ns"])
           for tid, t in want.items()}
    hs.eq(got, ref, "per thread: CPU, wait and ready samples; running, waiting and ready time (100 ns)")
    # the main thread, by hand from the reference's figures: what the test holds the two to
    hs.eq(got[3308], (8339, 7409, 0, 83394501, 74085594, 13855), "POWERPNT's main thread")
    sm = j["sampling"]
    waits = sum(t["wait"] for t in want.values())
    readies = sum(t["ready"] for t in want.values())
    hs.eq((sm["samples"], sm["wait_samples"], sm["ready_samples"], sm["hookscope_samples"], sm["rate_hz"]),
          (8754, waits, readies, 0, 1000), "the sampling figures (the trace's interval: 1 ms)")
    hs.eq((sm.get("wait_no_stack"), sm.get("ready_no_stack")), (waits, readies),
          "no context switch has a stack: every wait and ready sample is without one")
    hs.eq((waits, readies), (89172, 0), "the process's wait and ready samples")
    hs.check("off_cpu_known" not in sm, "ready and wait are known")
    hs.eq(j.get("wait_stacks", []), [], "no wait stack is invented")
    txt = open(os.path.join(hs.ROOT, out, "report.txt"), encoding="utf-8").read().splitlines()
    hs.check("samples    8754 CPU, 0 ready, 89172 wait, 0 in hookscope (etw sampler, 1000 Hz, 7 threads, 0 lost)"
             in txt, f"report.txt's samples line: {txt[:8]}")
    hs.check("no stack   89172 wait and 0 ready samples: no stack was walked where their time off the CPU ended"
             in txt, "report.txt says the wait samples have no stack")
    hs.check("warning    the trace has no ReadyThread events: a thread woken from a wait counts as waiting until "
             "it runs" in txt, "report.txt says that ready time after a wait counts as waiting")
    rows = {l.split()[0]: l.split() for l in txt if l.split() and l.split()[0] == "3308"}
    hs.eq(rows.get("3308", [])[1:], ["0", "8339", "0", "7409", "0", "-", "8.339", "s", "1.39", "ms", "7.409", "s"],
          "the threads table: samples of each kind, then the time running, ready and waiting")


def test_trace_without_context_switches_says_unknown():
    """The PerfView trace has no context switches: CPU samples only, as
    before, and report.txt says that ready and wait are unknown, not 0."""
    hs.need(PERFVIEW)
    out = hs.outdir("etl-perfview-states")
    p = hs.hookscope(["report", "-q", "--etl", PERFVIEW, "--pid", "3988", "-o", out])
    hs.eq(p.returncode, 0, f"exit code ({p.stderr.decode(errors='replace')})")
    j = load(out)
    sm = j["sampling"]
    hs.eq((sm["samples"], sm["wait_samples"], sm["ready_samples"], sm.get("off_cpu_known")), (637, 0, 0, False),
          "CPU samples only, ready and wait unknown")
    hs.check(all("wait_s" not in t and "ready_s" not in t for t in j["thread_list"]), "no thread's wait time")
    hs.eq(etl_reference.off_cpu(os.path.join(hs.ROOT, PERFVIEW), "PerfView.exe"), None,
          "the reference finds no context switches either")
    txt = open(os.path.join(hs.ROOT, out, "report.txt"), encoding="utf-8").read().splitlines()
    hs.check(any(l.startswith("samples    637 CPU, ready and wait unknown (no context switches), ") for l in txt),
             f"the samples line: {[l for l in txt if l.startswith('samples')]}")
    hs.check("wait samples unknown: the trace has no context switches" in txt, "the wait section says unknown")
    rows = [l.split() for l in txt if l.split() and l.split()[0].isdigit() and len(l.split()) == 7]
    hs.check(rows and all(r[3] == "-" and r[4] == "-" for r in rows), f"the threads table shows - : {rows[:3]}")


def synthetic(kind, name, process="states.exe"):
    """A trace of tests/support/etlgen.c's timeline, reported: (report.json, report.txt lines)."""
    hs.need(ETLGEN)
    out = hs.outdir(name)
    os.makedirs(os.path.join(hs.ROOT, out))
    etl = os.path.join(out, kind + ".etl")
    subprocess.run([os.path.join(hs.ROOT, ETLGEN), kind, os.path.join(hs.ROOT, etl)], check=True)
    p = hs.hookscope(["report", "-q", "--etl", etl, "--process", process, "-o", out + "/report"])
    hs.eq(p.returncode, 0, f"exit code ({p.stderr.decode(errors='replace')})")
    txt = open(os.path.join(hs.ROOT, out, "report", "report.txt"), encoding="utf-8").read().splitlines()
    return load(out + "/report"), txt


def grid(a, b):
    """Samples of a stretch [a, b) ms on the 1 ms grid from the first event: the whole ms k with a <= k < b."""
    return sum(1 for k in range(0, 100) if a <= k < b)


def by_thread(stacks):
    return sorted((s["thread"], s["count"], s["frames"]) for s in stacks)


def test_synthetic_running_ready_waiting():
    """etlgen's timeline (tests/support/etlgen.c), figured by hand: each
    stretch [a, b) in ms gives the whole ms inside it as samples, and the
    stack walked at the switch that ends it.
      A 11: runs 1.0-3.0, waits 3.0-7.25 (ReadyThread), ready 7.25-9.6, runs 9.6-12.3
      B 12: runs 3.0-4.5, preempted (ready) 4.5-8.0, runs 8.0-9.6
      C 13: runs 4.5-5.0, waits 5.0-12.3 (nothing readies it), runs 12.3-13.0
      D 14: runs 5.0-5.5, waits 5.5 until the trace's last event at 16.4
      E 15: runs 5.5-6.0, waits 6.0-13.0 (no stack walked then), runs 13.0-15.0
    The stack walked when B first ran (3.0) ends no stretch: it is used for none."""
    j, txt = synthetic("states", "etl-synthetic-states")
    waits = {11: grid(3.0, 7.25), 13: grid(5.0, 12.3), 14: grid(5.5, 16.4), 15: grid(6.0, 13.0)}
    readies = {11: grid(7.25, 9.6), 12: grid(4.5, 8.0)}
    hs.eq((waits, readies), ({11: 5, 13: 8, 14: 11, 15: 7}, {11: 2, 12: 3}), "the grid rule, by hand")
    got = {t["tid"]: (t["cpu_samples"], t["wait_samples"], t["ready_samples"],
                      round(t["running_s"] * 1e7), round(t["wait_s"] * 1e7), round(t["ready_s"] * 1e7))
           for t in j["thread_list"]}
    ms = 10000                      # 100 ns units
    want = {11: (2, 5, 2, 47 * ms // 10, 425 * ms // 100, 235 * ms // 100),
            12: (0, 0, 3, 31 * ms // 10, 0, 35 * ms // 10),
            13: (0, 8, 0, 12 * ms // 10, 73 * ms // 10, 0),
            14: (0, 11, 0, 5 * ms // 10, 109 * ms // 10, 0),
            15: (0, 7, 0, 25 * ms // 10, 70 * ms // 10, 0)}
    hs.eq(got, want, "per thread: CPU, wait, ready samples; running, waiting, ready time (100 ns)")
    sm = j["sampling"]
    hs.eq((sm["samples"], sm["wait_samples"], sm["ready_samples"], sm["rate_hz"], sm["wait_no_stack"],
           sm["ready_no_stack"], sm["threads"]), (2, 31, 5, 1000, 11 + 7, 0, 5),
          "the sampling figures: D's and E's waits have no stack")
    hs.check("off_cpu_known" not in sm, "ready and wait are known")
    a = ["states.exe+0x1100", "states.exe+0x1180"]
    b = ["states.exe+0x1200", "states.exe+0x1280"]
    c = ["states.exe+0x1400", "states.exe+0x1480"]
    hs.eq(by_thread(j["wait_stacks"]), [(11, 5, a), (13, 8, c)], "wait stacks: where A and C resumed")
    hs.eq(by_thread(j["ready_stacks"]), [(11, 2, a), (12, 3, b)], "ready stacks: where A and B resumed")
    folded = open(os.path.join(hs.ROOT, "build/test-out/etl-synthetic-states/report/ready-stacks.folded")).read()
    hs.eq(sorted(folded.splitlines()), ["states.exe+0x1180;states.exe+0x1100 2",
                                        "states.exe+0x1280;states.exe+0x1200 3"], "ready-stacks.folded")
    hs.check("samples    2 CPU, 5 ready, 31 wait, 0 in hookscope (etw sampler, 1000 Hz, 5 threads, 7 lost)" in txt,
             f"report.txt's samples line: {txt[:8]}")
    hs.check("no stack   18 wait and 0 ready samples: no stack was walked where their time off the CPU ended" in txt,
             "report.txt: samples without a stack")
    hs.check("(18 of the 31 wait samples without a stack: no stack was walked where the wait ended)" in txt,
             "the wait section: samples without a stack")
    hs.check(not any("ReadyThread" in l for l in txt), "no warning about ReadyThread: the trace has one")
    rows = {l.split()[0]: l.split()[1:] for l in txt if l.split() and l.split()[0] in ("11", "12", "14")}
    hs.eq(rows, {"11": ["0", "2", "2", "5", "0", "-", "4.70", "ms", "2.35", "ms", "4.25", "ms"],
                 "12": ["0", "0", "3", "0", "0", "-", "3.10", "ms", "3.50", "ms", "0", "ns"],
                 "14": ["0", "0", "0", "11", "0", "-", "500.00", "us", "0", "ns", "10.90", "ms"]},
          "the threads table")


def test_synthetic_without_ready_thread():
    """The same timeline without its ReadyThread: A waits from 3.0 until it
    runs at 9.6 (7 samples, no ready time), and the report says that time
    after a wake-up counts as waiting; the rest is unchanged."""
    j, txt = synthetic("states-noready", "etl-synthetic-noready")
    got = {t["tid"]: (t["wait_samples"], t["ready_samples"], round(t["wait_s"] * 1e7), round(t["ready_s"] * 1e7))
           for t in j["thread_list"]}
    hs.eq(got[11], (grid(3.0, 9.6), 0, 66000, 0), "A: all its time off the CPU waiting")
    hs.eq(grid(3.0, 9.6), 7, "the grid rule, by hand")
    hs.eq(got[12], (0, 3, 0, 35000), "B: preempted, ready as before")
    sm = j["sampling"]
    hs.eq((sm["wait_samples"], sm["ready_samples"]), (33, 3), "the process's wait and ready samples")
    hs.eq(by_thread(j["wait_stacks"]), [(11, 7, ["states.exe+0x1100", "states.exe+0x1180"]),
                                       (13, 8, ["states.exe+0x1400", "states.exe+0x1480"])], "wait stacks")
    hs.check("warning    the trace has no ReadyThread events: a thread woken from a wait counts as waiting until "
             "it runs" in txt, "report.txt says so")


def test_synthetic_jit_range_reused():
    """etlgen's "jit" timeline: one range holds App.Cache.Fill, nothing
    after its unload, then App.Cache.Reused; each sample there is named by
    what held it at its time. The reused range's method is in a module of
    its own ("#2"), so that no module has two functions at one address."""
    j, _txt = synthetic("jit", "etl-jit-synthetic", "jit.exe")
    hs.eq(jit_self(j), [("App.dll[jit]", "App.Cache.Fill", 1), ("App.dll[jit]", "App.Far.Away", 1),
                        ("App.dll[jit]#2", "App.Cache.Reused", 2)], "JIT methods' self samples")
    folded = open(os.path.join(hs.OUT, "etl-jit-synthetic", "report", "cpu-stacks.folded")).read()
    hs.eq(sorted(folded.splitlines()),
          ["jit.exe+0x1010;App.dll[jit]!App.Parser.Parse;0x7ff000030010 1",
           "jit.exe+0x1010;App.dll[jit]!App.Parser.Parse;App.dll[jit]!App.Cache.Fill 1",
           "jit.exe+0x1010;App.dll[jit]!App.Parser.Parse;App.dll[jit]!App.Far.Away 1",
           "jit.exe+0x1010;App.dll[jit]!App.Parser.Parse;App.dll[jit]#2!App.Cache.Reused 2"], "the folded stacks")
    mods = {m["name"]: m for m in j["modules"] + j["loaded_modules"]}
    hs.eq(sorted(int(m["base"], 16) for m in j["modules"] + j["loaded_modules"] if m["name"] == "App.dll[jit]"),
          [0x7ff000010000, 0x7ff100030000], "a module per 4 GiB of JIT code")
    hs.eq((mods["App.dll[jit]"]["path"], mods["App.dll[jit]"].get("jit")), ("C:\\app\\App.dll", True),
          "the assembly's module: its path as logged, marked jit")


def test_process_width_from_its_images():
    """A trace does not say a process is 32-bit; its images do: one mapped
    from SysWOW64 makes it a WOW64 process, and report.txt and
    report.json say so as for a 32-bit run. PerfView's Test.x86.exe and
    PowerPoint 2010 (Program Files (x86)) are 32-bit; explorer.exe and
    dwm.exe of the same Windows 7 x64 trace are 64-bit."""
    hs.need(PERFVIEW)
    hs.need(PPT)
    cases = [(PERFVIEW, ["--process", "Test.x86.exe"], 32), (PPT, ["--pid", "5100"], 32),
             (PPT, ["--pid", "2640"], 64), (PPT, ["--pid", "2752"], 64)]
    for trace, which, bits in cases:
        out = hs.outdir("etl-bits")
        p = hs.hookscope(["report", "-q", "--etl", trace] + which + ["-o", out])
        hs.eq(p.returncode, 0, f"{which}: exit code ({p.stderr.decode(errors='replace')})")
        hs.eq(load(out)["target"]["bits"], bits, f"{which}: report.json's target bits")
        line = [l for l in open(os.path.join(hs.ROOT, out, "report.txt")).read().splitlines() if l.startswith("target ")]
        hs.eq(line[0].endswith("  (32-bit: i386 code under WOW64)"), bits == 32, f"{which}: report.txt's {line}")
