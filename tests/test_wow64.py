"""32-bit (i386) programs under Wine's WOW64: the programs of
build/tests32 (tests/targets32, built with the i686 toolchain) run
untraced and print exactly what they say, and what hookscope does with
them today.

Where Wine cannot run 32-bit programs here, the tests that run one skip
with the reason scripts/deps32.sh (make deps) found (hs.need_wow64);
hookscope's answer to a 32-bit target needs only the 64-bit side."""
import os
import re
import struct
import subprocess
import sys

import hs

sys.path.insert(0, os.path.join(hs.ROOT, "tests", "support"))
import pdbref  # noqa: E402


def stated_output(source):
    """The lines a target's header comment (C's /* */ or C++'s //) gives
    under "Output (exact", up to an empty comment line or its end."""
    lines, inside = [], False
    with open(os.path.join(hs.ROOT, source)) as f:
        for line in f:
            if "Output (exact" in line:
                inside = True
            elif inside:
                text = re.sub(r"^\s*(\*|//)", "", line.rstrip("\n")).strip()
                if not re.match(r"\s*(\*|//)", line) or not text or text == "/":
                    break
                lines.append(text)
    hs.check(lines, f"{source} states no output")
    return lines


def out_lines(p):
    return p.stdout.decode(errors="replace").replace("\r\n", "\n").splitlines()


def test_wow64_programs_run_untraced():
    """callconv.exe (a function of each x86 calling convention) prints what
    its header states; the ground-truth fixture's program built for i686
    prints what its x86-64 build prints."""
    hs.need_wow64()
    exe = hs.need(f"{hs.TARGETS32}/callconv.exe")
    p = hs.wine([exe])
    hs.eq(p.returncode, 0, "exit code of callconv.exe")
    hs.eq(out_lines(p), stated_output("tests/targets32/callconv.c"), "output of callconv.exe")

    fx = hs.fixture("groundtruth")
    cwd = os.path.join(hs.ROOT, fx["cwd"])
    p64 = hs.wine([fx["program"]] + fx["args"], cwd=cwd)
    p32 = hs.wine([os.path.relpath(os.path.join(hs.ROOT, hs.need(f"{hs.TARGETS32}/groundtruth.exe")), cwd)]
                  + fx["args"], cwd=cwd)
    hs.eq((p32.returncode, p64.returncode), (fx["exit_code"], fx["exit_code"]), "exit codes (i686, x86-64)")
    hs.check(out_lines(p64), "the x86-64 ground-truth program printed nothing")
    hs.eq(out_lines(p32), out_lines(p64), "the i686 ground-truth program's output against the x86-64 one's")


def test_wow64_run_counts_like_x64():
    """`hookscope run` of the i686 ground-truth program: the 32-bit agent
    is injected (through the target's own 32-bit kernel32), the program
    prints what it prints untraced and exits alike, and every function of groundtruth.c has exactly the
    calls and callers the x86-64 build of the same source has (whose
    counts test_groundtruth checks against its instrumented twin)."""
    hs.need_wow64()
    fx = hs.fixture("groundtruth")
    exe32 = os.path.relpath(os.path.join(hs.ROOT, hs.need(f"{hs.TARGETS32}/groundtruth.exe")),
                            os.path.join(hs.ROOT, fx["cwd"]))
    plain = hs.wine([exe32] + fx["args"], cwd=os.path.join(hs.ROOT, fx["cwd"]))
    t32 = hs.trace(exe32, fx["args"], name="wow64_groundtruth", cwd=fx["cwd"])
    t64 = hs.trace(fx["program"], fx["args"], modules=[fx["module"]], name="wow64_groundtruth64", cwd=fx["cwd"])
    hs.eq((t32.rc, t32.stdout), (fx["exit_code"], plain.stdout), "exit code and output, traced")
    # the agent hooks what `functions` says it can: all but the one known
    # only by its start (libgcc's stack probe, found as a call's target)
    hs.eq({f["name"]: f["skip_reason"] for f in t32.functions("groundtruth.exe") if not f["hooked"]},
          {"__chkstk_ms": "bounds-unknown"}, "functions the 32-bit agent left, and why")
    own = hs.instrumented_functions(fx)
    hs.check(len(own) >= 30, f"groundtruth.c has only {len(own)} functions")
    hooked = lambda t, m: {f["name"] for f in t.functions(m) if f["hooked"]} & own
    h32, h64 = hooked(t32, "groundtruth.exe"), hooked(t64, fx["module"])
    hs.eq(sorted(h64 - h32), [], "functions hooked in the x86-64 build but not in the i686 one")
    both = sorted(h32 & h64)
    c32, c64 = t32.calls("groundtruth.exe"), t64.calls(fx["module"])
    hs.eq({n: c32.get(n, 0) for n in both}, {n: c64.get(n, 0) for n in both},
          "calls of groundtruth.c's functions, i686 against x86-64")
    # (op_add is too short to hook in the x86-64 build; dispatch calls each op alike)
    hs.eq([c32.get(n) for n in ("op_add", "op_sub", "op_mul", "op_xor")], [250] * 4, "calls of the four ops")
    hs.check(c32.get("thread_leaf") == 100000, f"thread_leaf: {c32.get('thread_leaf')} calls")
    callers = lambda t: sorted((e["caller"], e["callee"], e["calls"]) for e in t.json["edges"]
                               if e["callee"] in both and e["caller"] in own)
    hs.eq(callers(t32), callers(t64), "caller edges between groundtruth.c's functions")


ROW = re.compile(r"^0x([0-9a-f]{8})\s+(\d+)\s+(\S+)\s+(yes \(\S+\)|yes|no: \S+)\s+(\S+)\s+(.+)$")


def test_wow64_attach_detach_twice():
    """`hookscope attach` to a running 32-bit program (the attach tests'
    attachee.exe built for i686), twice: the 32-bit agent is loaded through
    the process's own kernel32, counts work() and not main (entered
    before), and after each detach the code bytes in memory are the file's
    again and the agent DLL is gone; the program then ends as untraced,
    every result of work() right, having made at least the calls counted."""
    hs.need_wow64()
    exe = hs.need(f"{hs.TARGETS32}/attachee.exe")
    p = hs.Process([exe])
    with p:
        m = re.fullmatch(r"pid (\d+) code-matches 1", p.readline(timeout=30) or "")
        hs.check(m, "the attachee's first line")
        pid, linux_pid = int(m.group(1)), p.proc.pid
        hs.eq(hs.code_differences(linux_pid, exe, 0x400000), 0, "code bytes before any attach")
        works = []
        for n in (1, 2):
            t = hs.attach(pid, ["--duration", "2", "--no-sample"], name=f"wow64_attach_{n}", timeout=60)
            hs.eq((t.rc, [l for l in t.stderr.decode(errors="replace").splitlines() if l.strip()]), (0, []),
                  f"attach {n}: exit code and stderr")
            hs.eq((t.json["target"]["stop"], t.json["target"]["pid"]), ("detach", pid), f"attach {n}: stop and pid")
            mod = t.module("attachee.exe")
            hs.eq(int(mod["base"], 16), 0x400000, f"attach {n}: attachee.exe's base")
            hs.check(mod["functions_hooked"] >= 0.97 * mod["functions_found"],
                     f"attach {n}: hooked {mod['functions_hooked']} of {mod['functions_found']}")
            calls = t.calls("attachee.exe")
            hs.check(calls.get("work", 0) > 0 and calls.get("main", 0) == 0, f"attach {n}: work and main {calls}")
            works.append(calls["work"])
            hs.eq(hs.code_differences(linux_pid, exe, 0x400000), 0, f"code bytes after detach {n}")
            hs.eq(hs.agent_mappings(linux_pid), [], f"the agent DLL is still mapped after detach {n}")
        p.send(b"stop\n")
        m = re.fullmatch(r"bad (\d+) calls (\d+) code-matches (-?\d+)", p.readline(timeout=30) or "")
        hs.check(m, "the attachee's last line")
        hs.eq(p.wait(timeout=30), 0, "the attachee's exit code")
        hs.eq((int(m.group(1)), int(m.group(3))), (0, 1), "wrong results of work, and code-matches at the end")
        hs.check(sum(works) <= int(m.group(2)), f"counted {works} calls of work, the program made {m.group(2)}")


def listing(path, stderr=()):
    """`hookscope functions PATH`: {name: (rva, size, bounds, hook, source)}
    and the summary line; stderr: the lines expected there."""
    p = hs.hookscope(["functions", path])
    hs.eq((p.returncode, [l for l in p.stderr.decode(errors="replace").splitlines() if l.strip()]),
          (0, list(stderr)), f"exit code and stderr of functions {path}")
    lines = out_lines(p)
    hs.eq(lines[0].split(), ["rva", "size", "bounds", "hook", "source", "name"], "header")
    rows = {}
    for line in lines[1:]:
        m = ROW.match(line)
        if m:
            hs.check(m.group(6) not in rows, f"{m.group(6)} listed twice")
            rows[m.group(6)] = (int(m.group(1), 16), int(m.group(2)), m.group(3), m.group(4), m.group(5))
    return rows, lines[-1]


def defined_in(source):
    """The functions a C file defines (a line at column 0 that names one,
    its parameters closed, and is not a declaration)."""
    names = set()
    with open(os.path.join(hs.ROOT, source)) as f:
        for line in f:
            m = re.match(r"^(?!typedef)[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;{]*\)\s*(\{.*)?$", line)
            if m:
                names.add(m.group(1))
    hs.check(names, f"{source} defines no function")
    return names


def objdump32(args, exe):
    """What the i686 toolchain's objdump says of exe (the reference the
    bounds are checked against)."""
    p = subprocess.run(["i686-w64-mingw32-objdump"] + args + [os.path.join(hs.ROOT, exe)], capture_output=True)
    hs.eq(p.returncode, 0, f"objdump {' '.join(args)} {exe}")
    return p.stdout.decode()


def fde_extents(exe):
    """The FDEs' extents (rva, size) as objdump --dwarf=frames reads them."""
    base = hs.image_base(exe)
    fdes = {(int(a, 16) - base, int(b, 16) - int(a, 16)) for a, b in
            re.findall(r"FDE cie=\w+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", objdump32(["--dwarf=frames"], exe))}
    hs.check(fdes, f"{exe} has no FDE")
    return fdes


def call_targets(exe, fdes):
    """The rvas that direct calls and jumps inside the FDEs' extents reach
    outside every extent (objdump -d)."""
    def inside(rva):
        return any(lo <= rva < lo + n for lo, n in fdes)
    out, base = set(), hs.image_base(exe)
    for at, target in re.findall(r"(?m)^\s*([0-9a-f]+):\t[0-9a-f ]+\t(?:call|jmp)\s+(?:0x)?([0-9a-f]+)\b",
                                 objdump32(["-d"], exe)):
        a, t = int(at, 16) - base, int(target, 16) - base
        if inside(a) and not inside(t):
            out.add(t)
    return out


def check_bounds(exe, rows):
    """Each function bounded by .eh_frame has an FDE's exact extent and
    every FDE is one function; the functions with no FDE are the import
    thunks (`jmp [IAT]`, one per imported name; bounded by the next start)
    and the targets of calls that decoding the FDEs' code finds (`call`)."""
    fdes = fde_extents(exe)
    hs.eq({(r[0], r[1]) for r in rows.values() if r[2] == "eh_frame"}, fdes, f"{exe}: functions bounded by .eh_frame")
    imports = set(re.findall(r"(?m)^\t[0-9a-f]+\t\s+\d+\s+(\w+)$", objdump32(["-p"], exe)))
    thunks = {n for n, r in rows.items() if r[2] == "next"}
    hs.check(thunks, f"{exe}: no import thunk listed")
    hs.eq(thunks - imports, set(), f"{exe}: functions bounded by the next start that are not import thunks")
    # a function known only by a call: the assembly of libgcc's stack probe
    # (no FDE, and a symbol not typed as a function)
    hs.eq({n for n, r in rows.items() if r[2] == "call"}, {"__chkstk_ms"}, f"{exe}: functions found by their calls")
    hs.check(rows["__chkstk_ms"][0] in call_targets(exe, fdes), f"{exe}: __chkstk_ms is a call's target")
    hs.eq({r[2] for r in rows.values()}, {"eh_frame", "next", "call"}, f"{exe}: sources of bounds")


EXACT = ("eh_frame", "pdb")   # bounds of a whole function, not only its start


def check_hooks(exe, rows, summary):
    """The hook column of an i386 listing: a function with exact bounds is
    decided by the engine's 32-bit mode (hookable, or an engine's reason;
    the decisions themselves are held by differential execution in
    unit32/test_hook_*), at least 97% of them hookable; one known only by
    its start says `bounds-unknown`, unless it is an import thunk (`jmp
    dword ptr [iat]`, read from the file: its one instruction is its
    extent), which is hookable; the summary adds them up."""
    thunk = {n for n, r in rows.items() if r[2] not in EXACT and hs.code_at(exe, r[0], 2) == b"\xff\x25"}
    exact = {n: r[3] for n, r in rows.items() if r[2] in EXACT or n in thunk}
    rest = {n: r[3] for n, r in rows.items() if n not in exact}
    hs.eq({n: h for n, h in rest.items() if h != "no: bounds-unknown"}, {}, "start-only bounds: bounds-unknown")
    hs.eq({n: rows[n][3] for n in thunk if rows[n][3] != "yes"}, {}, "import thunks: hookable")
    odd = {n: h for n, h in exact.items()
           if not (h == "yes" or h.startswith("yes (") or h.startswith("no: ")) or h in ("no: bounds-unknown",
                                                                                      "no: i386-code")}
    hs.eq(odd, {}, "exactly bounded functions: hookable or an engine's reason")
    yes = sum(h.startswith("yes") for h in exact.values())
    hs.check(exact and yes >= 0.97 * len(exact), f"{yes} of {len(exact)} exactly bounded functions hookable (goal 97%)")
    m = re.fullmatch(r"(\d+) functions, (\d+) hookable \((\S+)%\)(?:; not hookable: (.*))?", summary)
    hs.check(m, f"summary {summary!r}")
    reasons = {}
    for h in list(exact.values()) + list(rest.values()):
        if h.startswith("no: "):
            reasons[h[4:]] = reasons.get(h[4:], 0) + 1
    said = dict((k, int(v)) for k, v in (x.rsplit(" ", 1) for x in m.group(4).split(", "))) if m.group(4) else {}
    hs.eq((int(m.group(1)), int(m.group(2)), m.group(3), said),
          (len(rows), yes, f"{100.0 * yes / len(rows):.1f}", reasons), "summary against the rows")


def test_wow64_functions_listed():
    """`hookscope functions` on the i686 builds lists the functions the
    x86-64 build of the same source lists, by name (their stdcall,
    fastcall and cdecl decoration undone), each bounded by its .eh_frame
    FDE, as objdump reads them, but the import thunks (bounded by the next
    start), decided by the engine's 32-bit mode where bounds are exact; the
    hookscope.exe that reads them is the 64-bit one."""
    exe32 = hs.need(f"{hs.TARGETS32}/groundtruth.exe")
    gt32, sum32 = listing(exe32)
    fx = hs.fixture("groundtruth")
    gt64, _ = listing(os.path.relpath(os.path.join(hs.ROOT, fx["cwd"], fx["program"]), hs.ROOT))
    own = defined_in("tests/fixtures/groundtruth/groundtruth.c")
    hs.eq(len(own), 36, "functions defined in groundtruth.c")
    hs.eq(sorted(own & set(gt32)), sorted(own), "the program's own functions listed for i686")
    hs.eq(sorted(own & set(gt64)), sorted(own), "the program's own functions listed for x86-64")
    hs.eq({gt32[n][2] for n in own}, {"eh_frame"}, "bounds of the program's own functions")
    # the rest is the static C runtime of each toolchain: these differ (the
    # x86-64 stack probe has no .pdata nor a function symbol: not listed)
    hs.eq((sorted(set(gt32) - set(gt64)), sorted(set(gt64) - set(gt32))),
          (["__chkstk_ms", "atoi", "init_codepage_func", "msvcrt___lc_codepage_func", "setlocale",
            "setlocale_codepage_hack", "strchr"], ["__iob_func"]), "names only one build lists (i686, x86-64)")
    check_bounds(exe32, gt32)
    hs.eq({r[4] for r in gt32.values()}, {"coff"}, "name source of every i686 function")
    hs.eq({n: gt32[n][3] for n in own if not gt32[n][3].startswith("yes")}, {},
          "the program's own functions that the 32-bit engine would not hook")
    check_hooks(exe32, gt32, sum32)

    exe = hs.need(f"{hs.TARGETS32}/callconv.exe")
    cc, _ = listing(exe)
    check_bounds(exe, cc)
    # each function's extent as the compiler wrote it (objdump reads the same FDE)
    hs.eq({n: cc[n][2] for n in ("cdecl_add", "stdcall_mix", "fastcall_mul", "counter_add", "sum_varargs",
                                  "mul64", "average", "main")}, dict.fromkeys(
          ("cdecl_add", "stdcall_mix", "fastcall_mul", "counter_add", "sum_varargs", "mul64", "average", "main"),
          "eh_frame"), "callconv.exe's functions (its header's list), undecorated, bounded by .eh_frame")
    # the decorated names as the COFF symbol table has them: filters match either
    p = hs.hookscope(["functions", "-f", "_stdcall_mix@12", "-f", "@fastcall_mul@12", "-f", "counter_add", exe])
    hs.eq(p.returncode, 0, "exit code with filters")
    hs.eq(sorted(l.split()[-1] for l in out_lines(p) if l.startswith("0x")),
          ["counter_add", "fastcall_mul", "stdcall_mix"], "functions the decorated filters select")


def test_wow64_functions_pdb():
    """An i686 program known only from its PDB, as MSVC users ship theirs
    (clang + lld, no DWARF, no COFF symbols: build/fixtures/pdb/pdbc32.exe):
    `functions` bounds every procedure of the PDB exactly as llvm-pdbutil
    reads it (tests/support/pdbref.py) and names it; a function with no
    procedure but a public (the C runtime's) is named by the public with
    its i386 decoration undone (`_atexit` -> `atexit`), as the other
    sources' names are."""
    exe = hs.need("build/fixtures/pdb/pdbc32.exe")
    ref = pdbref.load(exe[:-4] + ".pdb")
    rows, summary = listing(exe)
    procs = {(rva, size, name) for rva, size, kind, name, _ in ref.procs if kind != "T"}
    hs.check(len(procs) > 20 and {"main", "leaf_mix", "fib", "run_sort"} <= {n for _, _, n in procs},
             f"the PDB's procedures: {sorted(procs)[:10]}")
    hs.eq({(r[0], r[1], n) for n, r in rows.items() if r[2] == "pdb"}, procs,
          "functions bounded by the PDB = its procedures (rva, size, name)")
    publics = {}
    for rva, _, name in ref.publics:
        publics.setdefault(rva, set()).add(name)
    by_public = {n: r for n, r in rows.items() if r[2] != "pdb" and r[4] == "pdb"}
    hs.check({"atexit", "mainCRTStartup", "malloc", "_fpreset"} <= set(by_public),
             f"functions named by a public: {sorted(by_public)}")
    hs.eq({n for n, r in by_public.items()
           if not any(re.fullmatch(re.escape("_" + n) + r"(@\d+)?", p) for p in publics.get(r[0], ()))}, set(),
          "functions named by a public that is not their name with its i386 decoration (_f, _f@12)")
    hs.eq(by_public["__dyn_tls_init"][0], min(r for r, names in publics.items() if "___dyn_tls_init@12" in names),
          "the stdcall __dyn_tls_init named without its @12")
    check_hooks(exe, rows, summary)


def test_wow64_functions_stripped():
    """Without its symbols (GNU strip) an i386 image still finds its
    functions: every FDE of .eh_frame is one, named sub_<rva> (the long
    section name stays readable: strip keeps the string table), with the
    unstripped image's exact extent; the others are the targets of the
    direct calls and tail jumps in that code (the import thunks, the stack
    probe), each bounded by the next start (`call`), as objdump -d finds
    them."""
    exe = hs.need(f"{hs.TARGETS32}/callconv.exe")
    full, _ = listing(exe)
    os.makedirs(hs.OUT, exist_ok=True)
    stripped = os.path.join(hs.OUT, "callconv_stripped.exe")
    p = subprocess.run(["i686-w64-mingw32-strip", "-o", stripped, os.path.join(hs.ROOT, exe)], capture_output=True)
    hs.eq(p.returncode, 0, f"i686-w64-mingw32-strip: {p.stderr.decode(errors='replace')}")
    rel = os.path.relpath(stripped, hs.ROOT)
    rows, summary = listing(rel, [f"hookscope: no symbols for callconv_stripped.exe (no PDB, no COFF symbols, "
                                  f"no exports): its functions are named sub_<rva>"])
    want = {f"sub_{r[0]:x}": (r[0], r[1], "eh_frame", r[3], "-") for r in full.values() if r[2] == "eh_frame"}
    hs.eq({n: r for n, r in rows.items() if r[2] == "eh_frame"}, want, "the stripped image's FDEs' extents")
    calls = {r[0] for r in rows.values() if r[2] == "call"}
    hs.eq(sorted(calls), sorted(call_targets(rel, fde_extents(rel))), "functions found by their calls (rvas)")
    known = {r[0]: n for n, r in full.items() if r[2] in ("next", "call")}
    hs.eq(sorted(known.get(r, f"sub_{r:x}") for r in calls), sorted(known.values()),
          "they are the unstripped image's import thunks (two reached by tail jumps only) and stack probe")
    hs.eq(set(rows), set(want) | {f"sub_{r:x}" for r in calls}, "nothing else")
    check_hooks(exe, rows, summary)


def test_wow64_functions_dll():
    """An i386 DLL linked stripped (exports32s.dll: no COFF symbols,
    `.eh_frame` cut to `.eh_fram`): its exports name its functions, each
    convention's export name undecorated (`dll_stdcall@12`,
    `@dll_fastcall@8`; `_underscored` keeps the underscore that is its
    own), and its functions are those of the same DLL linked with its
    symbols (exports32.dll), at the same rvas with the same bounds: each
    FDE's, as objdump reads them there, and the calls decoded."""
    full_dll = hs.need(f"{hs.TARGETS32}/exports32.dll")
    full, _ = listing(full_dll)
    fdes = fde_extents(full_dll)
    hs.eq({(r[0], r[1]) for r in full.values() if r[2] == "eh_frame"}, fdes, "exports32.dll: bounded by .eh_frame")
    hs.eq({r[0] for r in full.values() if r[2] == "call"},
          call_targets(full_dll, fdes) - {r[0] for r in full.values() if r[2] == "next"},
          "exports32.dll: functions found by their calls (where no symbol starts one)")
    stripped_dll = hs.need(f"{hs.TARGETS32}/exports32s.dll")
    rows, summary = listing(stripped_dll)
    exported = {n: r for n, r in rows.items() if r[4] == "export"}
    hs.eq(sorted(exported), ["_underscored", "dll_cdecl", "dll_fastcall", "dll_stdcall"], "exported functions")
    hs.eq({n: r[:4] for n, r in exported.items()}, {n: full[n][:4] for n in exported},
          "the exported functions against the unstripped DLL's (rva, size, bounds, hook)")
    hs.eq({r[2] for r in exported.values()}, {"eh_frame"}, "the exported functions' bounds")
    # the import thunks, bounded there by their symbols, are found here by their calls
    hs.eq(sorted(r[:3] for r in rows.values()),
          sorted((r[0], r[1], "call" if r[2] == "next" else r[2]) for r in full.values()),
          "every function, against the unstripped DLL's (rva, size, bounds)")
    check_hooks(stripped_dll, rows, summary)


def test_wow64_functions_hotpatch():
    """Functions reached only through pointers, without unwind tables,
    with the hot-patchable entry of system DLLs (tests/targets32/hotpatch):
    that entry starts them (`hotpatch`: a start, bounded by the next),
    where their symbols are (hotpatch.exe) and where there are none
    (hotpatchs.exe, linked stripped)."""
    rows, _ = listing(hs.need(f"{hs.TARGETS32}/hotpatch.exe"))
    hot = {n: r for n, r in rows.items() if r[2] == "hotpatch"}
    hs.eq(sorted(hot), ["hp_one", "hp_two"], "hot-patchable functions, by their COFF symbols")
    syms = objdump32(["-t"], f"{hs.TARGETS32}/hotpatch.exe")
    for n, r in hot.items():
        m = re.search(r"\(sec  1\)\(fl 0x00\)\(ty\s+20\)\(scl\s+2\) \(nx \d\) 0x([0-9a-f]+) _" + n + "$", syms, re.M)
        hs.check(m, f"objdump -t: no function symbol _{n}")
        hs.eq(r[0], 0x1000 + int(m.group(1), 16), f"rva of {n} (.text at 0x1000)")
    stripped, _ = listing(hs.need(f"{hs.TARGETS32}/hotpatchs.exe"),
                          ["hookscope: no symbols for hotpatchs.exe (no PDB, no COFF symbols, no exports): "
                           "its functions are named sub_<rva>"])
    hs.eq({n: r[:3] for n, r in stripped.items() if r[2] == "hotpatch"},
          {f"sub_{r[0]:x}": r[:3] for r in hot.values()}, "the same, linked stripped")


def test_wow64_system_dll_listed_by_hookscope():
    """A 32-bit program's system DLL with -m (kernelbase): the agent names
    it in the system directory, as the program sees it; hookscope, a 64-bit
    program that is not redirected, reads its SysWOW64 file for the
    function list, not the 64-bit DLL of that name (which made the list
    "the file changed since it was loaded" and left the filter to the
    agent's raw names: `_WaitForMultipleObjectsEx@20.part.0` was not
    admitted by WaitForMultipleObjects*). The functions hooked are those
    `hookscope functions -f` lists as hookable for the file."""
    hs.need_wow64()
    exe = hs.need(f"{hs.TARGETS32}/cpusplit.exe")
    pat = "WaitForMultipleObjects*"
    p = hs.hookscope(["functions", "-f", pat, r"C:\windows\syswow64\kernelbase.dll"])
    hs.eq(p.returncode, 0, "exit code of functions")
    listed = sorted(m.group(6) for m in map(ROW.match, out_lines(p)) if m and m.group(4).startswith("yes"))
    hs.check(len(listed) >= 2, f"functions -f {pat}: {listed}")
    t = hs.trace(exe, ["0"], modules=["kernelbase"], options=["-f", pat], name="wow64_sysdll_list")
    hs.eq(t.proc.returncode, 0, f"exit code (stderr {t.proc.stderr!r})")
    hooked = sorted(f["name"] for f in t.json["functions"] if f["module"] == "kernelbase.dll" and f["hooked"])
    hs.eq(hooked, listed, "kernelbase.dll's functions hooked, against those functions lists")


def test_wow64_functions_section_names():
    """A section's own COFF symbol (storage class static, type 0, the
    section's name) never names a function: in a static i686 C++ build
    (cxxexc32.exe) libstdc++'s static functions kept no symbol of their
    own (the archive's objects are stripped of local symbols), only that
    of the section g++ made for each, `.text$NAME`, NAME being the
    function's assembler name: each is named `_NAME`, the COFF name it
    would have had (where a function symbol sits at such a section's
    start, it is that name); code where only a section without a function
    in its name starts (`.text`, `.text.unlikely.NAME`: NAME's cold part
    or NAME itself) is named sub_<rva>."""
    exe = hs.need(f"{hs.TARGETS32}/cxxexc32.exe")
    syms = hs.coff_symbols(exe)
    only_section = {rva: [n for n, ty, scl in s] for rva, s in syms.items()
                    if all(scl == 3 and ty == 0 and n.startswith(".text") for n, ty, scl in s)}
    named = {rva: "_" + m.group(2) for rva, ns in only_section.items() for m in
             map(re.compile(r"^(\.text\$|\.text\.startup\.)(.+)$").match, ns) if m}
    hs.eq(sorted(named.values()),
          ["__GLOBAL__sub_I__ZN9__gnu_cxx9__freeresEv",
           "__ZL16get_adjusted_ptrPKSt9type_infoS1_PPv",
           "__ZL17parse_lsda_headerP15_Unwind_ContextPKhP16lsda_header_info",
           "__ZL20check_exception_specP16lsda_header_infoPKSt9type_infoPvl",
           "__ZL21base_of_encoded_valuehP15_Unwind_Context",
           "__ZL23__gxx_exception_cleanup19_Unwind_Reason_CodeP17_Unwind_Exception",
           "__ZL28read_encoded_value_with_basehjPKhPj",
           "__ZN12_GLOBAL__N_14pool4freeEPv.constprop.0",
           "__ZN12_GLOBAL__N_14pool8allocateEj.constprop.0",
           "___tcf_0"], "functions objdump -t knows only by their .text$NAME or .text.startup.NAME section")
    for rva, s in syms.items():
        fn = [n for n, ty, scl in s if ty & 0xF0 == 0x20]
        for n, _, _ in s:
            if n.startswith(".text$") and fn:
                hs.check("_" + n[len(".text$"):] in fn, f"{n} starts with function {fn} of another name")

    p = hs.hookscope(["functions", exe])
    hs.eq(p.returncode, 0, f"exit code of functions {exe}")
    rows = {int(m.group(1), 16): m.group(6) for m in map(ROW.match, out_lines(p)) if m}
    hs.eq({rva: n for rva, n in rows.items() if n.startswith(".")}, {}, "functions named by a section")
    unnamed = [rva for rva in only_section if rva not in named and rva in rows]
    hs.eq(len(unnamed), 17, "functions where only a section without a function's name starts")
    hs.eq({rva: rows[rva] for rva in unnamed}, {rva: f"sub_{rva:x}" for rva in unnamed},
          "the names of those")
    # the exact COFF names: a filter of raw names selects each at its rva
    p = hs.hookscope(["functions"] + [a for n in named.values() for a in ("-f", n)] + [exe])
    hs.eq(p.returncode, 0, "exit code with the names as filters")
    hs.eq(sorted(int(m.group(1), 16) for m in map(ROW.match, out_lines(p)) if m), sorted(named),
          "the rvas those names select")
    hs.eq({rva: rows[rva] for rva in named},
          {rva: subprocess.run(["c++filt"], input=n[1:], capture_output=True, text=True).stdout.strip()
           for rva, n in named.items()}, "their names undecorated, as c++filt reads them")


def test_wow64_functions_corrupt():
    """A cut or corrupt i386 image: one line and exit 125, as for x86-64."""
    src = open(os.path.join(hs.ROOT, hs.need(f"{hs.TARGETS32}/callconv.exe")), "rb").read()
    os.makedirs(hs.OUT, exist_ok=True)
    pe = struct.unpack_from("<I", src, 0x3C)[0]
    cases = []
    cut = os.path.join(hs.OUT, "pe32_cut.exe")            # the section table cut off
    with open(cut, "wb") as f:
        f.write(src[:pe + 24 + 224 + 8])
    cases.append((cut, "corrupt PE headers"))
    wide = bytearray(src)                                  # an i386 machine with a PE32+ header
    struct.pack_into("<H", wide, pe + 24, 0x20B)
    mixed = os.path.join(hs.OUT, "pe32_mixed.exe")
    open(mixed, "wb").write(wide)
    cases.append((mixed, "corrupt PE headers"))
    arm = bytearray(src)
    struct.pack_into("<H", arm, pe + 4, 0x1C4)
    armf = os.path.join(hs.OUT, "pe32_arm.exe")
    open(armf, "wb").write(arm)
    cases.append((armf, "not an x86 or x86-64 PE file"))
    for path, why in cases:
        rel = os.path.relpath(path, hs.ROOT)
        p = hs.hookscope(["functions", rel])
        hs.eq(p.returncode, 125, f"exit code for {rel}")
        hs.eq([l for l in p.stderr.decode(errors="replace").splitlines() if l.strip()],
              [f"hookscope: '{rel}': {why}"], f"stderr for {rel}")
        hs.eq(p.stdout, b"", f"stdout for {rel}")


# --- the suspend sampler on 32-bit programs (--no-hooks) ---------------------

SPLIT32 = f"{hs.TARGETS32}/cpusplit.exe"   # tests/targets/cpusplit.c built for i686, same flags
# cpusplit's own chains to its burners: its rounds, and the calibration
# main makes first (burn_a alone)
CHAINS32 = {("main", "round_of_calls", "burn_a"), ("main", "round_of_calls", "burn_b"),
            ("main", "round_of_calls", "burn_c"), ("main", "burn_a")}
# what a 32-bit program's main thread runs on under Wine 8: its 32-bit
# ntdll starts the thread (call_thread_func, which calls through the
# assembly call_thread_func_wrapper), kernel32 calls the exe's entry,
# whose mainCRTStartup tail-jumps to __tmainCRTStartup
START32 = ["ntdll.dll!call_thread_func", "ntdll.dll!call_thread_func_wrapper", "kernel32.dll!BaseThreadInitThunk",
           "cpusplit.exe!__tmainCRTStartup"]


def folded(t, name):
    """{tuple of frames (root first): count} of a folded file of a run."""
    text = t.file(name)
    hs.check(text is not None, f"{name} was not written")
    out = {}
    for line in text.splitlines():
        stack, n = line.rsplit(" ", 1)
        out[tuple(stack.split(";"))] = out.get(tuple(stack.split(";")), 0) + int(n)
    return out


def check_sampled32(t, what):
    """A --no-hooks run of cpusplit.exe (i686): the report says the target
    is 32-bit; the burners' self CPU samples split as the program measured
    each burner's time, within 5 points, or 4 standard deviations of the
    share with the samples there are where that is more (a loaded machine
    gives a thread few CPU samples: scripts/sample32_spread.py measured
    here at 500 Hz, 5 s, load near 6 on 2 cores, 416 to 2105 of them and
    the worst burner 0.3 to 2.8 points off in 10 runs; the calls' split
    is 15 to 30 points off); every CPU sample whose leaf is a burner has
    the whole real stack, exactly (START32, then one of CHAINS32: 0 other
    stacks in those 10 runs), and they are nearly all of the CPU
    samples."""
    import test_sampler
    hs.eq(t.rc, 0, f"{what}: exit code (stderr {t.stderr!r})")
    hs.eq(t.json["target"]["bits"], 32, f"{what}: report.json's target bits")
    line = [l for l in t.txt.splitlines() if l.startswith("target ")]
    hs.check(line and line[0].endswith("  (32-bit: i386 code under WOW64)"), f"{what}: report.txt's target line {line}")
    hs.eq(t.json["sampling"]["lost"], 0, f"{what}: lost samples ({t.json['sampling'].get('lost_why')})")
    b, _ = test_sampler.burners(t.stdout)
    stacks = folded(t, "cpu-stacks.folded")
    self_n = {k: sum(n for s, n in stacks.items() if s[-1] == "cpusplit.exe!burn_" + k) for k in b}
    n = sum(self_n.values())
    hs.check(n >= 300, f"{what}: only {n} CPU samples in the burners")
    total_us, total_calls = sum(us for _, us in b.values()), sum(c for c, _ in b.values())
    apart = 0
    for k, (calls, us) in b.items():
        measured, sampled = 100.0 * us / total_us, 100.0 * self_n[k] / n
        share = measured / 100.0
        bound = max(5.0, 400.0 * (share * (1 - share) / n) ** 0.5)
        hs.check(abs(measured - sampled) <= bound, f"{what}: burn_{k}: {sampled:.1f}% of the CPU samples, {measured:.1f}% "
                                                   f"measured ({n} samples, bound {bound:.1f} points)")
        apart = max(apart, abs(100.0 * calls / total_calls - measured))
    hs.check(apart > 15, f"{what}: the split of the calls is within {apart:.1f} points of the CPU split: the test "
                         "could not tell them apart")
    burners = {s: c for s, c in stacks.items() if s[-1].startswith("cpusplit.exe!burn_")}
    wrong = {s: c for s, c in burners.items()
             if list(s[:len(START32)]) != START32 or
             tuple(f.removeprefix("cpusplit.exe!") for f in s[len(START32):]) not in CHAINS32}
    hs.eq(wrong, {}, f"{what}: stacks of burner samples that are not the program's real stacks")
    all_cpu = sum(stacks.values())
    hs.check(n >= 0.95 * all_cpu, f"{what}: {n} of {all_cpu} CPU samples are in the burners")


def test_wow64_sampled_no_hooks():
    """`hookscope run --no-hooks` of a 32-bit program samples it as a
    64-bit one (the suspend sampler: its 32-bit registers, stack, modules
    and the x86 walker): check_sampled32, on the i686 build of the 64-bit
    tests' cpusplit.exe at 500 Hz."""
    hs.need_wow64()
    exe = hs.need(SPLIT32)
    t = hs.trace(exe, ["8", "alone"], options=["--no-hooks", "--sample-rate", "500"], name="wow64_sampled")
    check_sampled32(t, "run --no-hooks")
    # the saved run renders again byte for byte, the target's bits with it
    again = hs.outdir("wow64_sampled_again")
    p = hs.hookscope(["report", t.out, "-o", again])
    hs.eq(p.returncode, 0, f"report: exit code ({p.stderr!r})")
    for name in ("report.txt", "report.json", "cpu-stacks.folded"):
        hs.eq(open(os.path.join(hs.ROOT, again, name), "rb").read(), open(os.path.join(hs.ROOT, t.out, name), "rb").read(),
              f"{name} written again by `hookscope report`")
    names = {m["name"].lower(): m["path"].lower() for m in t.json["loaded_modules"]}
    hs.eq(sorted(n for n in names if n != "cpusplit.exe"), ["kernel32.dll", "kernelbase.dll", "msvcrt.dll", "ntdll.dll"],
          "the 32-bit program's modules")
    hs.eq({n: p for n, p in names.items() if n != "cpusplit.exe" and "\\syswow64\\" not in p}, {},
          "system DLLs not named by their 32-bit files (SysWOW64)")


def test_wow64_sampled_output_untouched():
    """Sampled with --no-hooks, a 32-bit program's output is byte for byte
    its untraced output, and its exit code is the same (the ground-truth
    program, i686 build; callconv.exe)."""
    hs.need_wow64()
    fx = hs.fixture("groundtruth")
    cwd = os.path.join(hs.ROOT, fx["cwd"])
    exe = os.path.relpath(os.path.join(hs.ROOT, hs.need(f"{hs.TARGETS32}/groundtruth.exe")), cwd)
    plain = hs.wine([exe] + fx["args"], cwd=cwd)
    t = hs.trace(exe, fx["args"], options=["--no-hooks"], name="wow64_output", cwd=fx["cwd"])
    hs.eq(t.rc, plain.returncode, f"exit code sampled against untraced (stderr {t.stderr!r})")
    hs.check(plain.stdout, "the untraced program printed nothing")
    hs.eq(t.stdout, plain.stdout, "stdout sampled against untraced")
    hs.eq(t.json["target"]["bits"], 32, "report.json's target bits")
    cc = hs.need(f"{hs.TARGETS32}/callconv.exe")
    plain = hs.wine([cc])
    t = hs.trace(cc, options=["--no-hooks"], name="wow64_output_callconv")
    hs.eq((t.rc, t.stdout), (plain.returncode, plain.stdout), "callconv.exe: exit code and stdout against untraced")


def test_wow64_sampled_frameless_leaf():
    """A leaf without a frame pointer called from a function with one
    (tests/targets32/leafcall.c): every CPU sample in the leaf has the
    stack main -> framed -> leaf exactly, from the thread's start (the
    ebp chain alone would leave framed out: the leaf's return address
    is known only from its `.eh_frame`), and nearly all CPU samples are
    there; its output and exit code are its own."""
    hs.need_wow64()
    exe = hs.need(f"{hs.TARGETS32}/leafcall.exe")
    t = hs.trace(exe, ["3"], options=["--no-hooks", "--sample-rate", "500"], name="wow64_leafcall")
    hs.eq((t.rc, t.stdout.decode().replace("\r\n", "\n")), (0, "leafcall done\n"), f"exit code and output ({t.stderr!r})")
    start = [f.replace("cpusplit.exe", "leafcall.exe") for f in START32]
    stacks = folded(t, "cpu-stacks.folded")
    in_leaf = {s: c for s, c in stacks.items() if s[-1] == "leafcall.exe!leaf"}
    hs.eq(sorted(set(in_leaf)), [tuple(start + ["leafcall.exe!main", "leafcall.exe!framed", "leafcall.exe!leaf"])],
          "the stacks of the samples in leaf")
    n, all_cpu = sum(in_leaf.values()), sum(stacks.values())
    hs.check(n >= 100 and n >= 0.9 * all_cpu, f"{n} of {all_cpu} CPU samples in leaf")


def test_wow64_sampled_fpo():
    """Code without frame pointers whose frames only its PDB describes
    (build/fixtures/pdb/fpo32.exe: clang + lld -O2 for i686, LLVM's
    FrameData records, no .eh_frame; tests/fixtures/pdb/fpo32.c): every
    CPU sample in the leaf burn has the stack main -> level1 -> level2 ->
    level3 -> burn exactly, from the thread's start, past the return
    addresses each level keeps in its locals as decoys; the walks took
    frames from the frame data (-v). The same image without its PDB
    (nofpo/) loses the three levels and main (the ebp chain goes from burn
    to main's caller): the PDB is what found them. Output and exit code
    are the program's own."""
    hs.need_wow64()
    exe = hs.need("build/fixtures/pdb/fpo32.exe")
    plain = hs.wine([exe, "300"])
    t = hs.trace(exe, ["300"], options=["--no-hooks", "--sample-rate", "500", "-v"], name="wow64_fpo")
    hs.eq((t.rc, t.stdout), (plain.returncode, plain.stdout), f"exit code and output against untraced ({t.stderr!r})")
    m = re.search(r"sampler: (\d+) walks of 32-bit stacks, (\d+) frames, (\d+) of them found by frame data",
                  t.stderr.decode(errors="replace"))
    hs.check(m and int(m.group(3)) >= 100, f"frames found by frame data (-v): {m and m.group(0)}")
    stacks = folded(t, "cpu-stacks.folded")
    in_burn = {s: c for s, c in stacks.items() if s[-1] == "fpo32.exe!burn"}
    levels = ("fpo32.exe!main", "fpo32.exe!level1", "fpo32.exe!level2", "fpo32.exe!level3", "fpo32.exe!burn")
    wrong = {s: c for s, c in in_burn.items()
             if list(s[:3]) != START32[:3] or len(s) != 9 or not s[3].startswith("fpo32.exe") or s[4:] != levels}
    hs.eq(wrong, {}, "stacks of the samples in burn that are not main -> level1 -> level2 -> level3 -> burn "
                     "under the C runtime's start")
    n, all_cpu = sum(in_burn.values()), sum(stacks.values())
    hs.check(n >= 100 and n >= 0.9 * all_cpu, f"{n} of {all_cpu} CPU samples in burn")
    # without its PDB
    t = hs.trace(hs.need("build/fixtures/pdb/nofpo/fpo32.exe"), ["300"], options=["--no-hooks", "--sample-rate", "500"],
                 name="wow64_nofpo")
    hs.eq((t.rc, t.stdout), (plain.returncode, plain.stdout), f"without its PDB: exit code and output ({t.stderr!r})")
    stacks = folded(t, "cpu-stacks.folded")
    deep, n = sum(c for s, c in stacks.items() if len(s) >= 9), sum(stacks.values())
    # (the odd sample outside burn can come out that deep by the walker's
    # scan: 1 of 493 once; with the PDB nearly all are, exactly)
    hs.check(n >= 100 and deep <= 0.05 * n,
             f"without its PDB, {deep} of {n} CPU samples still have the levels' frames: the test would not see "
             "frame data missing")


def test_wow64_attach_no_hooks():
    """`hookscope attach PID --no-hooks` of a running 32-bit program
    (leafcall.exe, started untraced) samples it as `run` does: the report
    says 32-bit, every CPU sample in its leaf has the stack main -> framed
    -> leaf from the thread's start, exactly; the program goes on to its
    own end, its output and exit code its own."""
    hs.need_wow64()
    exe = hs.need(f"{hs.TARGETS32}/leafcall.exe")
    with hs.Process([exe, "6", "pid"]) as p:
        m = re.fullmatch(r"pid (\d+)", p.readline(timeout=30))
        hs.check(m, "leafcall.exe did not print its pid")
        t = hs.attach(m.group(1), ["--no-hooks", "--sample-rate", "500", "--duration", "2"], name="wow64_attach")
        hs.eq(t.rc, 0, f"attach: exit code (stderr {t.stderr!r})")
        hs.eq((p.rest(timeout=30), p.wait(timeout=30)), (["leafcall done"], 0), "leafcall.exe's output and exit code")
    hs.eq(t.json["target"]["bits"], 32, "report.json's target bits")
    line = [l for l in t.txt.splitlines() if l.startswith("target ")]
    hs.check(line and line[0].endswith("  (32-bit: i386 code under WOW64)"), f"report.txt's target line {line}")
    start = [f.replace("cpusplit.exe", "leafcall.exe") for f in START32]
    stacks = folded(t, "cpu-stacks.folded")
    in_leaf = {s: c for s, c in stacks.items() if s[-1] == "leafcall.exe!leaf"}
    hs.eq(sorted(set(in_leaf)), [tuple(start + ["leafcall.exe!main", "leafcall.exe!framed", "leafcall.exe!leaf"])],
          "the stacks of the samples in leaf")
    hs.check(sum(in_leaf.values()) >= 50, f"only {sum(in_leaf.values())} CPU samples in leaf")


def test_wow64_sampled_waits():
    """A 32-bit program's threads that only wait (cpusplit's waiter, on
    an event) or sleep (its sleeper) are in the wait profile, at their
    waits in the 32-bit ntdll under their whole stacks, and its busy
    thread never is (test_sampler.check_waiters, as for the x86-64
    build): a thread in an i386 system-call stub is seen waiting."""
    import test_sampler
    hs.need_wow64()
    t = hs.trace(hs.need(SPLIT32), ["3"], options=["--no-hooks", "--sample-rate", "100"], name="wow64_waits")
    hs.eq(t.rc, 0, f"exit code (stderr {t.stderr!r})")
    _, tids = test_sampler.burners(t.stdout)
    test_sampler.check_waiters(t, tids)
    for role in ("waiter", "sleeper"):
        stacks = {tuple(test_sampler.strip(f) for f in s["frames"]) for s in t.json["wait_stacks"]
                  if s["thread"] == tids[role]}
        hs.eq(sorted({s[-4:] for s in stacks}), [("cpusplit.exe!" + role, "kernel32.dll!BaseThreadInitThunk",
                                                   "ntdll.dll!call_thread_func_wrapper", "ntdll.dll!call_thread_func")],
              f"the {role} thread's wait stacks from its start")


def test_wow64_sampled_hooked():
    """With hooks (the 32-bit agent in the target) the samples are as
    true (check_sampled32: the split, every burner stack exactly, the
    system DLLs named from their SysWOW64 files, where the 32-bit agent
    records them in system32), and each burner's calls are exact."""
    import test_sampler
    hs.need_wow64()
    t = hs.trace(hs.need(SPLIT32), ["8", "alone"], options=["--sample-rate", "500"], name="wow64_sampled_hooked")
    check_sampled32(t, "run (hooked)")
    b, _ = test_sampler.burners(t.stdout)
    hs.eq({k: test_sampler.func(t, "burn_" + k, "cpusplit.exe")["calls"] for k in b}, {k: c for k, (c, _) in b.items()},
          "the burners' calls")


def test_wow64_timed_entry_stacks_through_main():
    """--time --stacks on a 32-bit program: main (i686 gcc's, which
    realigns its stack and pushes its return address again, a copy of the
    return thunk's once main is timed) is passed by the agent's own stack
    walk with its true caller: every entry stack of round_of_calls is the
    whole chain to the thread's start, one per call (before, the copy
    stopped the chain at main: __tmainCRTStartup and BaseThreadInitThunk
    were missing)."""
    import test_sampler
    hs.need_wow64()
    t = hs.trace(hs.need(SPLIT32), ["2", "alone"], options=["--time", "--stacks=8", "--no-sample"],
                 name="wow64_timed_stacks")
    hs.eq(t.rc, 0, f"exit code ({t.stderr!r})")
    chains = {}
    for st in t.json["stacks"]:
        if st["function"] == "round_of_calls":
            names = tuple(f.split("+")[0] for f in st["frames"])
            chains[names] = chains.get(names, 0) + st["count"]
    calls = test_sampler.func(t, "round_of_calls", "cpusplit.exe")["calls"]
    hs.eq(chains, {("cpusplit.exe!round_of_calls", "cpusplit.exe!main") + tuple(reversed(START32)): calls},
          "the entry stacks of round_of_calls")


def check_entry_stacks_levels(exe, source, name):
    """--stacks on a build of tests/fixtures/pdb/fpo32.c (main -> level1 ->
    level2 -> level3 -> burn, no frame pointers, a decoy return address in
    each level's locals): every entry stack of burn is exactly that chain
    under the C runtime's start, one per call, the levels stepped out of by
    the frame data the agent got from `source` (-v: the function service's
    records of it); the same with --time (each level's return address the
    return thunk's, the true one on the shadow stack); output and exit code
    are the program's own."""
    import test_sampler
    hs.need_wow64()
    plain = hs.wine([exe, "3"])
    base = os.path.basename(exe)
    levels = tuple(f"{base}!{f}" for f in ("burn", "level3", "level2", "level1", "main"))
    for timed in ([], ["--time"]):
        what = "with --time: " if timed else ""
        t = hs.trace(exe, ["3"], options=["--stacks", "--no-sample", "-v"] + timed, name=name + "_time" * bool(timed))
        hs.eq((t.rc, t.stdout), (plain.returncode, plain.stdout),
              f"{what}exit code and output against untraced ({t.stderr!r})")
        chains = {}
        for st in t.json["stacks"]:
            if st["function"] == "burn":
                names = tuple(f.split("+")[0] for f in st["frames"])
                chains[names] = chains.get(names, 0) + st["count"]
        wrong = {c: n for c, n in chains.items()
                 if c[:5] != levels or len(c) != 9 or not c[5].startswith(base + "!") or list(c[6:]) != START32[2::-1]}
        hs.eq(wrong, {}, f"{what}entry stacks of burn that are not main -> level1 -> level2 -> level3 -> burn under "
                         "the C runtime's start")
        calls = test_sampler.func(t, "burn", base)["calls"]
        hs.eq((sum(chains.values()), calls), (6, 6), f"{what}burn's entry stacks and calls (two per round)")
        m = re.search(r"frame data of " + re.escape(base) + r": (\d+) records from its PDB, (\d+) rows of its "
                      r"\.eh_frame", t.stderr.decode(errors="replace"))
        hs.check(m and int(m.group(1 if source == "pdb" else 2)) > 0,
                 f"{what}frame data sent from its {source} (-v): {m and m.group(0)}")


def test_wow64_entry_stacks_fpo():
    """The 32-bit agent's entry stacks through callers whose frames only
    the image's PDB describes (build/fixtures/pdb/fpo32.exe: clang -O2 for
    i686, LLVM's FrameData records; check_entry_stacks_levels). Before, the
    walk by the ebp chain alone went from burn's caller level3 to the C
    runtime's start: level2, level1 and main were missing."""
    check_entry_stacks_levels(hs.need("build/fixtures/pdb/fpo32.exe"), "pdb", "wow64_entry_fpo")


def test_wow64_entry_stacks_eh_frame():
    """The same through callers whose frames only gcc's `.eh_frame`
    describes (fpo32.c built by i686 gcc -O2: build/tests32/fpo32-gcc.exe;
    check_entry_stacks_levels)."""
    check_entry_stacks_levels(hs.need(f"{hs.TARGETS32}/fpo32-gcc.exe"), "eh_frame", "wow64_entry_eh_frame")


def test_wow64_sampled_timed():
    """With --time the 32-bit agent puts its return thunk where each open
    timed call's return address was (and main, which realigns its stack,
    pushes a copy of it): the sampler takes the true addresses from the
    thread's shadow stack, so the samples are as true as untimed ones
    (check_sampled32; before, every sample stopped in hookscope's code:
    0 CPU samples, 2483 in hookscope's), few samples are hookscope's own,
    and each burner's calls are exact and timed."""
    import test_sampler
    hs.need_wow64()
    t = hs.trace(hs.need(SPLIT32), ["8", "alone"], options=["--time", "--sample-rate", "500"], name="wow64_sampled_timed")
    check_sampled32(t, "run --time")
    s = t.json["sampling"]
    hs.check(s["hookscope_samples"] <= 0.05 * s["samples"], f"{s['hookscope_samples']} samples in hookscope's code, "
                                                             f"{s['samples']} CPU samples of the program")
    b, _ = test_sampler.burners(t.stdout)
    hs.eq({k: (test_sampler.func(t, "burn_" + k, "cpusplit.exe")["calls"],
               test_sampler.func(t, "burn_" + k, "cpusplit.exe")["time"]["calls"]) for k in b},
          {k: (c, c) for k, (c, _) in b.items()}, "the burners' calls, and their timed calls")


def test_wow64_filter_on_itanium_names():
    """An i386 image keeps a C++ function's Itanium name with the C
    decoration's '_' in front (`__ZN...`): `-f '_ZN*'` selects in the
    i686 build what it selects in the x86-64 one, and exactly what
    `-f '__ZN*'` selects there (cxxexc32.exe's libstdc++ functions)."""
    exe = hs.need(f"{hs.TARGETS32}/cxxexc32.exe")

    def selected(pattern):
        p = hs.hookscope(["functions", "-f", pattern, exe])
        hs.eq(p.returncode, 0, f"functions -f {pattern}: exit code ({p.stderr!r})")
        return sorted(l.split()[0] for l in p.stdout.decode().splitlines() if l.startswith("0x"))

    plain, decorated = selected("_ZN*"), selected("__ZN*")
    hs.check(len(decorated) >= 20, f"-f '__ZN*' selects only {len(decorated)} functions")
    hs.eq(plain, decorated, "functions selected by '_ZN*' and by '__ZN*'")
