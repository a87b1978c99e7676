"""Hard code built for i686, traced by the 32-bit agent with each option
it takes: every calling convention (tests/targets32/callconv.c), longjmp
over hooked frames and threads created and ended while hooked
(jumps32.c), C++ exceptions of the i686 runtime's dw2 unwinder thrown
through hooked frames, destructors and callee-saved registers checked
(cxxunwind32.cpp), structured exceptions (seh32.c), and a DLL loaded late, hooked with -m (dlluser32.c and
exports32.dll). Each program's header states its calls, its caller edges
and its output, exactly: traced with edges (the default), without
(--no-edges), with entry stacks (--stacks: frame 1 of each stack is the
caller the edges name), sampled by the suspend sampler at the same time,
timed (--time: the 32-bit agent's return probes),
and with -f and -x filters, it prints what it
prints untraced, byte for byte, exits alike, and each stated function has
exactly its stated calls and callers (a filtered-out one is not hooked)."""
import os
import re

import hs
from test_wow64 import stated_output

SAMPLED = "sampled"   # the one variant that samples the CPU as well (the others: --no-sample)


def header(source):
    """The lines of a target's header comment, its comment marks cut."""
    lines = []
    with open(os.path.join(hs.ROOT, source)) as f:
        for line in f:
            if not re.match(r"\s*(/\*|\*|//)", line):
                break
            lines.append(re.sub(r"^\s*(/\*+|\*/|\*|//)", "", line.rstrip("\n")).strip())
    return lines


def stated(source, title):
    """The text after `title (exact` up to the next empty line."""
    lines, out, inside = header(source), [], False
    for line in lines:
        if line.startswith(f"{title} (exact"):
            inside = True
            line = line.partition(":")[2]
        elif inside and not line:
            break
        if inside:
            out.append(line)
    hs.check(out, f"{source} states no {title}")
    return out


def stated_calls(source):
    return {n: int(c) for n, c in re.findall(r"([\w<>]+) (\d+)", " ".join(stated(source, "Calls")))}


def stated_edges(source):
    return {(a, b): int(c) for a, b, c in re.findall(r"([\w<>]+)->(\w+) (\d+)", " ".join(stated(source, "Edges")))}


def run_all_ways(source, exe, modules=(), variants=None):
    """Trace exe (in build/tests32) with each option set; check output,
    exit code, calls, edges and stacks against the source's header."""
    hs.need_wow64()
    hs.need(f"{hs.TARGETS32}/{exe}")
    calls, want_edges = stated_calls(source), stated_edges(source)
    plain = hs.wine([exe], cwd=os.path.join(hs.ROOT, hs.TARGETS32))
    text = plain.stdout.decode(errors="replace").replace("\r\n", "\n").splitlines()
    hs.eq((plain.returncode, text), (0, stated_output(source)), f"untraced exit code and output of {exe}")
    mods = {m.lower() for m in (modules or [exe])}
    names = sorted(calls)
    variants = variants or [
        ("edges", []),
        (SAMPLED, []),
        ("time", ["--time"]),
        ("noedges", ["--no-edges"]),
        ("stacks", ["--stacks=8"]),
        ("only", ["-f", names[0], "-f", names[-1]]),
        ("without", ["-x", names[1]]),
    ]
    for tag, opts in variants:
        what = f"{exe} {' '.join(opts) or '(defaults)'}{'' if tag == SAMPLED else ' --no-sample'}"
        t = hs.trace(exe, [], modules=list(modules), options=([] if tag == SAMPLED else ["--no-sample"]) + opts,
                     name=f"hard_{exe[:-4]}_{tag}", cwd=hs.TARGETS32)
        hs.eq((t.rc, t.stdout), (0, plain.stdout), f"{what}: exit code and stdout")
        picked = set(calls)
        if "-f" in opts:
            picked = {opts[i + 1] for i, o in enumerate(opts) if o == "-f"}
        if "-x" in opts:
            picked -= {opts[i + 1] for i, o in enumerate(opts) if o == "-x"}
        funcs = [f for f in t.json["functions"] if f["module"].lower() in mods and f["name"] in calls]
        hs.eq(sorted(f["name"] for f in funcs if f["hooked"]), sorted(picked), f"{what}: stated functions hooked")
        got = {}
        for f in funcs:
            if f["hooked"]:
                got[f["name"]] = got.get(f["name"], 0) + f["calls"]
        hs.eq(got, {n: c for n, c in calls.items() if n in picked}, f"{what}: calls")
        edges = {}
        for e in t.json.get("edges", []):
            if e["callee_module"].lower() not in mods or e["callee"] not in picked:
                continue
            inside = (e["caller_module"] or "").lower() in mods
            caller = e["caller"] if inside else "<external>"
            if inside and caller not in calls:
                continue   # the C runtime calling main
            edges[(caller, e["callee"])] = edges.get((caller, e["callee"]), 0) + e["calls"]
        expect = {k: v for k, v in want_edges.items() if k[1] in picked}
        hs.eq(edges, {} if "--no-edges" in opts else expect, f"{what}: caller edges")
        if any(o.startswith("--stacks") for o in opts):
            hs.eq(t.json["stacks_dropped"], 0, f"{what}: stacks dropped")
            callers = {}
            for s in t.json["stacks"]:
                if s["module"].lower() not in mods or s["function"] not in picked:
                    continue
                hs.check(len(s["frames"]) >= 2, f"{what}: a stack without its caller: {s}")
                m, _, rest = s["frames"][1].partition("!")
                caller = rest.rpartition("+0x")[0] if m.lower() in mods else "<external>"
                if m.lower() in mods and caller not in calls:
                    continue
                callers[(caller, s["function"])] = callers.get((caller, s["function"]), 0) + s["count"]
            hs.eq(callers, expect, f"{what}: the callers of the entry stacks")


def test_wow64_callconv_all_options():
    """cdecl, stdcall (ret 12), fastcall, thiscall, varargs, a 64-bit and
    an x87 result."""
    run_all_ways("tests/targets32/callconv.c", "callconv.exe")


def test_wow64_longjmp_and_threads_all_options():
    """longjmp from five levels down, five times; eight threads that end
    while hooked; setjmp's import thunk counted once per call."""
    run_all_ways("tests/targets32/jumps32.c", "jumps32.exe")


def test_wow64_cxx_exceptions_all_options():
    """C++ exceptions (dw2) through hooked frames: caught one, two and five
    frames up, rethrown, from a 21-deep recursion; the destructors ran and
    ebx, esi, edi came back."""
    run_all_ways("tests/targets32/cxxunwind32.cpp", "cxxunwind32.exe")


def test_wow64_seh_all_options():
    """Structured exceptions (x86 frame-based records made by hand): an
    access violation in the bytes a hook displaced, handled two frames
    up; RaiseException handled by the caller; an inner frame declining
    and the outer one handling."""
    run_all_ways("tests/targets32/seh32.c", "seh32.exe")


def test_wow64_late_dll_all_options():
    """A DLL the program loads itself (LoadLibrary), hooked by -m with
    the program: its functions of each convention, called through
    GetProcAddress."""
    run_all_ways("tests/targets32/dlluser32.c", "dlluser32.exe", modules=["dlluser32.exe", "exports32.dll"])
