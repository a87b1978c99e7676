"""`hookscope dtrace` and the hookscope-dtrace.exe launcher on a 32-bit
(i386) program (tests/targets32/callconv.c, whose header states its
calls): the fpid/pid one-liners count what `run` counts, and ustack()
gives each stack of the exe exactly: the function, then the return
addresses of the calls that reached it, as objdump reads the code; -p
attaches to 32-bit and 64-bit processes at once."""
import os
import re
import subprocess

import hs
import test_outputs as outputs
import test_wow64_hard as hard

EXE = "callconv.exe"
SOURCE = "tests/targets32/callconv.c"


def dtrace(program, extra=(), launcher=False):
    """Run the D program on callconv.exe (cwd build/tests32) with -q and
    -o FILE; returns (the process, the file's text)."""
    hs.need_wow64()
    hs.need(f"{hs.TARGETS32}/{EXE}")
    out = os.path.join(hs.OUT, f"wow64-dtrace.{os.getpid()}.out")
    os.makedirs(hs.OUT, exist_ok=True)
    if os.path.exists(out):
        os.remove(out)
    rel = os.path.relpath(out, os.path.join(hs.ROOT, hs.TARGETS32))
    args = ["-q", "-n", program, "-o", rel, "-c", EXE] + list(extra)
    cwd = os.path.join(hs.ROOT, hs.TARGETS32)
    if launcher:
        p = hs.wine([os.path.relpath(os.path.join(hs.ROOT, hs.need("build/bin/hookscope-dtrace.exe")), cwd)] + args,
                    cwd=cwd, timeout=300)
    else:
        p = hs.hookscope(["dtrace"] + args, cwd=cwd, timeout=300)
    text = outputs.read(out)
    os.remove(out)
    return p, text


def return_address(caller, callee):
    """caller+0xN: the address after callconv.exe's call from caller to
    callee (objdump -d; decorated names), relative to caller's start."""
    dis = subprocess.run(["i686-w64-mingw32-objdump", "-d", os.path.join(hs.ROOT, hs.TARGETS32, EXE)],
                         capture_output=True, text=True, check=True).stdout
    start = re.search(r"(?m)^([0-9a-f]+) <" + re.escape(caller) + r">:$", dis)
    hs.check(start, f"objdump: no {caller}")
    lines = dis[start.end():].splitlines()
    for i, line in enumerate(lines):
        if re.search(r"\tcall\s+[0-9a-f]+ <" + re.escape(callee) + r">$", line):
            nxt = int(lines[i + 1].split(":")[0], 16)
            return f"{nxt - int(start.group(1), 16):#x}"
    raise AssertionError(f"objdump: no call from {caller} to {callee}")


def test_wow64_dtrace_fpid_counts_equal_the_hooks():
    """@[probefunc] of every function of the exe = the calls `run`
    counts, per function (the stated ones among them), ascending; the
    same through hookscope-dtrace.exe; the program's own output passes
    through untouched; @[ustack()]: every frame a module's."""
    hs.need_wow64()
    hs.need(f"{hs.TARGETS32}/{EXE}")
    t = hs.trace(EXE, [], options=["--no-sample"], name="wow64_dtrace_ref", cwd=hs.TARGETS32)
    calls = {k: v for k, v in t.calls(EXE).items() if v}
    stated = hard.stated_calls(SOURCE)
    hs.eq({n: calls.get(n) for n in stated}, stated, "the run's calls of the stated functions")
    for launcher in (False, True):
        p, text = dtrace("fpid$target:callconv::entry { @[probefunc] = count(); }", launcher=launcher)
        what = "hookscope-dtrace.exe" if launcher else "hookscope dtrace"
        hs.eq((p.returncode, p.stdout), (0, t.stdout), f"{what}: exit code and the program's output")
        hs.check(text.startswith("\n  "), f"{what}: a blank line, then the records")
        hs.eq(outputs.dtrace_agg(text), calls, f"{what}: @[probefunc] = the hooks' calls")
        counts = [int(line.split()[-1]) for line in text.splitlines() if line.strip()]
        hs.eq(counts, sorted(counts), f"{what}: ascending by count")
    # every entry stack: frames of modules only (a walk that took a
    # non-frame ebp for one gave numbers such as 0xa), adding up to the calls
    p, text = dtrace("fpid$target:callconv::entry { @[ustack()] = count(); }")
    hs.eq(p.returncode, 0, "ustack(): exit code")
    frames = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().isdigit()]
    hs.eq([f for f in frames if not re.match(r"^[\w.+-]+\.(exe|dll)`\S+$", f, re.I)], [],
          "ustack(): frames that are no module's")
    hs.eq(sum(outputs.collapse_dtrace(text).values()), sum(calls.values()), "ustack(): the stacks add up to the calls")


def test_wow64_dtrace_ustack_exact():
    """pid$target:callconv:FUNC:entry { @[probefunc, ustack()] }: one
    stack per function of each convention, its exe frames exactly FUNC,
    main+(the return address of its call), __tmainCRTStartup+(that of
    main's call), then the system's frames; its count the stated calls."""
    hs.need_wow64()
    hs.need(f"{hs.TARGETS32}/{EXE}")
    stated = hard.stated_calls(SOURCE)
    decorated = {"cdecl_add": "_cdecl_add", "stdcall_mix": "_stdcall_mix@12", "fastcall_mul": "@fastcall_mul@12",
                 "counter_add": "_counter_add"}
    outer = f"callconv.exe`__tmainCRTStartup+{return_address('___tmainCRTStartup', '_main')}"
    for func, raw in decorated.items():
        p, text = dtrace(f"pid$target:callconv:{func}:entry {{ @[probefunc, ustack()] = count(); }}")
        hs.eq(p.returncode, 0, f"{func}: exit code")
        lines = text.split("\n")
        hs.eq((lines[0], lines[1].strip()), ("", func), f"{func}: a blank line, then the key")
        frames = [l.strip() for l in lines[2:] if l.strip()]
        hs.eq(frames[:3], [f"callconv.exe`{func}", f"callconv.exe`main+{return_address('_main', raw)}", outer],
              f"{func}: the exe's frames")
        hs.eq([f for f in frames[3:-1] if f.startswith("callconv.exe`")], [], f"{func}: no other exe frame")
        hs.eq(frames[-1], str(stated[func]), f"{func}: the count")


def test_wow64_dtrace_pids_of_both_widths():
    """dtrace -p A -p B with A a 64-bit and B a 32-bit attachee: both
    attached at once (each with the agent of its width), one aggregation
    adding up their calls."""
    hs.need_wow64()
    outputs.dtrace_pids([hs.need(f"{hs.TARGETS}/attachee.exe"), hs.need(f"{hs.TARGETS32}/attachee.exe")])
