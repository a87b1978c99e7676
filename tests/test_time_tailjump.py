"""--time leaves a program's behaviour alone and hooks what a plain run hooks.

  tail jumps: a timed function runs on a copy of its argument area; a
      function it tail-jumps to reads that copy, so the copy must hold every
      stack slot the whole chain of tail jumps reads (hook/tail.c); where
      the chain reaches a function whose reads are not known (through a
      pointer, a varargs import, a system call) the copy is the widest
      (64 slots, bounded by the stack base); only a jump into code that no
      call enters leaves a function an entry probe (`tail-jump-stack-args`).
  tail jumps to system calls: tailsleep's sleeper (`jmp [__imp_Sleep]`)
      and its caller, whose last call is a tail jump, are timed, with
      their arguments unchanged.
  same functions: the full analysis of --time never hooks fewer functions
      than a plain run (data inside a function's code, such as clang's jump
      tables, is never decoded as instructions).
"""
import os
import re
import subprocess

import hs

TAILFWD = ["build/tests/tailfwd-O2.exe", "build/tests/tailfwd-O3.exe", "build/tests/tailfwd-Os.exe"]
MINGW_BIN = "/usr/x86_64-w64-mingw32/bin"

# functions of tailfwd.c whose tail jumps can be followed, and those whose
# targets' reads are not known (a function pointer; varargs _snprintf
# through an import): timed with the widest copy
PROVEN = ["thunk5i", "thunk5i_2", "mid5i", "mid5i_call", "thunk6d", "thunk6d_2", "thunk5p",
          "mid5_asm", "jcc5_asm", "frame5_asm", "f5i", "f6d", "f5p"]
WIDE = ["via_ptr", "to_import"]


def tail_jumps(exe):
    """{function: its instructions} of tailfwd's functions, from objdump."""
    out = subprocess.run(["x86_64-w64-mingw32-objdump", "-d", "--no-show-raw-insn", os.path.join(hs.ROOT, exe)],
                         capture_output=True, text=True, check=True).stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(\w+)>:$", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
        elif cur is not None and re.match(r"^\s+[0-9a-f]+:\s", line):
            cur.append(line.split(":", 1)[1].strip())
    return funcs


def hooked_set(t, module):
    return sorted((f["rva"], f["name"], f["hooked"], f["skip_reason"]) for f in t.functions(module))


def test_tail_jumps_forward_stack_arguments():
    """tailfwd at -O2, -O3, -Os: the same output untraced, with --time and
    with --time --stacks; every function whose chain of tail jumps can be
    followed is timed, and so are the two whose targets are not known
    (with the widest copy); the same functions are hooked with and
    without --time."""
    for exe in TAILFWD:
        hs.need(exe)
        base = os.path.basename(exe)
        code = tail_jumps(exe)
        # the premise: the thunks really are tail jumps at every level
        for fn, target in (("thunk5i", "f5i"), ("thunk5i_2", "thunk5i"), ("thunk6d_2", "thunk6d"),
                           ("thunk5p", "f5p")):
            hs.check(code[fn] and re.match(rf"jmp\s+\S+ <{target}>", code[fn][0]),
                     f"{base}: {fn} does not start with a jump to {target}: {code[fn][:2]}")
        hs.check(any(re.match(r"jmp\s+\S+ <f5i>", i) for i in code["mid5i"][1:]),
                 f"{base}: mid5i has no tail jump to f5i past its entry")
        plain_out = hs.wine([exe])
        hs.eq(plain_out.returncode, 0, f"{base} untraced exit code")
        hs.check(b"thunk5p 13" in plain_out.stdout, f"{base} untraced output: {plain_out.stdout[:200]!r}")
        plain = hs.trace(exe, name=f"tailfwd_{base}_plain")
        hs.eq((plain.rc, plain.stdout), (0, plain_out.stdout), f"{base} without --time")
        for opts in (["--time"], ["--time", "--stacks"]):
            t = hs.trace(exe, options=opts, name=f"tailfwd_{base}_{len(opts)}")
            hs.eq(t.rc, 0, f"{base} {opts} exit code")
            hs.eq(t.stdout, plain_out.stdout, f"{base} {opts} output")
            hs.eq(hooked_set(t, base), hooked_set(plain, base), f"{base} {opts}: functions hooked")
            funcs = {f["name"]: f for f in t.functions(base)}
            for fn in PROVEN + WIDE:
                f = funcs[fn]
                if f["hooked"]:
                    hs.eq(f["entry_only"], None, f"{base} {opts}: {fn} is timed")
                    hs.eq(f["time"]["calls"], f["calls"], f"{base} {opts}: {fn} timed calls")
                else:
                    # -Os: a 2-byte `jmp` between two functions leaves no room for a patch
                    hs.eq((base, f["skip_reason"]), ("tailfwd-Os.exe", "too-short"), f"{fn} not hooked")


def test_mpicalc_negative_division():
    """libgcrypt's gcry_mpi_div is a bare `jmp _gcry_mpi_div`, which reads
    its fifth argument from the stack: mpicalc prints -07 for (3 - 10) / 2
    untraced and under --time, with gcry_mpi_div timed."""
    exe = hs.need(os.path.join(MINGW_BIN, "mpicalc.exe"))
    plain = hs.wine([exe], input=b"3 10 - 2 / p\n")
    hs.eq((plain.returncode, plain.stdout.strip()), (0, b"-07"), "untraced")
    runs = {}
    for opts in ([], ["--time"], ["--time", "--stacks"]):
        t = hs.trace(exe, modules=["libgcrypt-20.dll"], options=opts, input=b"3 10 - 2 / p\n",
                     name=f"mpicalc_{len(opts)}")
        hs.eq((t.rc, t.stdout), (0, plain.stdout), f"mpicalc {opts}")
        runs[len(opts)] = t
    for n in (1, 2):
        t = runs[n]
        hs.eq(hooked_set(t, "libgcrypt-20.dll"), hooked_set(runs[0], "libgcrypt-20.dll"),
              "libgcrypt functions hooked with and without --time")
        div = {f["name"]: f for f in t.functions("libgcrypt-20.dll")}
        for fn in ("gcry_mpi_div", "_gcry_mpi_div"):
            hs.eq((div[fn]["entry_only"], div[fn]["time"]["calls"]), (None, 1), f"{fn} timed once")


def test_same_functions_hooked_with_time():
    """The jump tables clang puts inside a function's code (switchtab: a
    switch in a __chkstk frame, like bzip2's testf) and the C++ runtime:
    --time hooks exactly the functions a plain run hooks, and times
    process()."""
    exe = hs.need("build/tests/switchtab.exe")
    plain_out = hs.wine([exe, "3000"])
    hs.eq(plain_out.returncode, 0, "untraced")
    plain = hs.trace(exe, ["3000"], name="switchtab_plain")
    timed = hs.trace(exe, ["3000"], options=["--time"], name="switchtab_time")
    for t in (plain, timed):
        hs.eq((t.rc, t.stdout), (0, plain_out.stdout), "switchtab output")
    hs.eq(hooked_set(timed, "switchtab.exe"), hooked_set(plain, "switchtab.exe"), "switchtab functions hooked")
    f = {x["name"]: x for x in timed.functions("switchtab.exe")}
    hs.eq((f["process"]["hooked"], f["process"]["entry_only"], f["process"]["time"]["calls"]), (True, None, 1),
          "process hooked and timed")
    # classify is a leaf without unwind data (clang emits none): timed, the
    # wrapper's frame has unwind data and the leaf needs none
    hs.eq((f["classify"]["hooked"], f["classify"]["entry_only"], f["classify"]["time"]["calls"]),
          (True, None, f["classify"]["calls"]), "classify hooked and timed")
    hs.check(f["classify"]["calls"] > 3000, f"classify: main's 3000 calls and process's: {f['classify']['calls']}")

    cxx = hs.need("build/tests/cxxexc.exe")
    p = hs.trace(cxx, modules=["cxxexc.exe", "libstdc++-6.dll"], name="cxx_plain")
    q = hs.trace(cxx, modules=["cxxexc.exe", "libstdc++-6.dll"], options=["--time"], name="cxx_time")
    hs.eq((p.rc, q.rc, q.stdout), (0, 0, p.stdout), "cxxexc output")
    for m in ("cxxexc.exe", "libstdc++-6.dll"):
        hs.eq(hooked_set(q, m), hooked_set(p, m), f"{m}: functions hooked with and without --time")


def test_tail_jumps_to_system_calls():
    """tailsleep (-O2): sleeper is `mov ecx, 20; jmp [__imp_Sleep]`, parent
    calls it 5 times from a loop whose last call is a tail jump, relay6
    hands two stack arguments on through a function pointer. Under --time
    the output and exit code are the untraced ones, the functions are
    timed (no called function is left untimed for a tail jump or for
    having no unwind data), sleeper's total is within 10% of 100 ms and
    parent's and main's self times are under 10 ms."""
    exe = hs.need("build/tests/tailsleep.exe")
    code = tail_jumps(exe)
    hs.check(re.match(r"(rex.W )?jmp\s+\*.*<__imp_Sleep>", code["sleeper"][1]), f"sleeper: {code['sleeper'][:2]}")
    hs.check(any(re.match(r"jmp\s+\S+ <sleeper>", i) for i in code["parent"]), f"parent: {code['parent']}")
    plain = hs.wine([exe])
    hs.eq(plain.returncode, 0, "untraced exit code")
    hs.check(b"relay6 3 2 3 4 52 602" in plain.stdout, f"untraced output: {plain.stdout!r}")
    for opts in (["--time"], ["--time", "--stacks"]):
        t = hs.trace(exe, options=opts, name=f"tailsleep_{len(opts)}")
        hs.eq((t.rc, t.stdout), (0, plain.stdout), f"{opts}: exit code and output")
        funcs = {f["name"]: f for f in t.functions("tailsleep.exe")}
        for fn, calls in (("sleeper", 5), ("parent", 1), ("relay6", 3), ("show6", 3), ("main", 1)):
            f = funcs[fn]
            hs.eq((f["calls"], f["entry_only"], f["time"]["calls"]), (calls, None, calls), f"{opts}: {fn} timed")
        for f in funcs.values():
            if f["calls"]:
                hs.check(f["entry_only"] not in ("tail-jump-stack-args", "no-unwind-info"),
                         f"{opts}: {f['name']} untimed: {f['entry_only']}")
        # 5 x Sleep(20): 100 ms, or what the program measured itself when
        # a loaded machine overslept
        m = re.search(rb"measured parent_us (\d+)", t.stderr)
        hs.check(m, f"{opts}: the program's own measure: {t.stderr[-300:]!r}")
        measured = int(m.group(1)) / 1000
        hs.check(measured >= 99, f"{opts}: parent(5) took {measured:.1f} ms by its own clock")
        total = funcs["sleeper"]["time"]["total_ns"] / 1e6
        hs.check(abs(total - 100) <= 10 or abs(total - measured) <= 0.1 * measured,
                 f"{opts}: sleeper total {total:.1f} ms, not 100 ms (nor the measured {measured:.1f} ms) within 10%")
        for fn in ("parent", "main"):
            self_ms = funcs[fn]["time"]["self_ns"] / 1e6
            hs.check(self_ms < 10, f"{opts}: {fn} self {self_ms:.1f} ms")
