"""hookscope report --etl: one process of a trace recorded on Windows as a
profile (the same outputs as a run), or a table of the trace's processes.
The figures are those of hookscope's ETL reader, which tests/test_etl.py
holds against an independent decoder (tests/etl_reference.py) and
PerfView's own baseline."""
import json
import os

import hs

PPT = "build/fixtures/etl/ppt-win7-x64.etl"
PERFVIEW = "build/fixtures/etl/perfview-win10-x86.etl"


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
