"""--srcline: the file:line of each function and stack frame in report.json
(and report.txt) equals what an independent reader says for the same
address: addr2line for the DWARF line table of a gcc build, llvm-pdbutil's
line table (tests/support/pdbref.py) for a PDB. A function's line is its
first line entry (the declaration); a frame's is the line of its
instruction: the entry for frame 0, the call (return address - 1) for the
others."""
import os
import shutil
import subprocess
import sys

import hs

sys.path.insert(0, os.path.join(hs.ROOT, "tests", "support"))
import pdbref  # noqa: E402


def frame_addresses(t, base):
    """(address looked up, "file:line" or None) of every frame of every entry
    stack of module `mod`'s functions."""
    rvas = {(f["module"], f["name"]): int(f["rva"], 16) for f in t.json["functions"] if f.get("rva")}
    out = []
    for s in t.json["stacks"]:
        for d, (frame, line) in enumerate(zip(s["frames"], s["frame_lines"])):
            mod, _, rest = frame.partition("!")
            name, _, off = rest.rpartition("+0x")
            rva = rvas.get((mod, name))
            if rva is None:
                continue
            addr = rva + int(off, 16) - (1 if d else 0)
            out.append((mod, addr, line))
    return out


def test_srcline_dwarf_equals_addr2line():
    exe = hs.need("build/examples/demo.exe")
    a2l = shutil.which("x86_64-w64-mingw32-addr2line")
    if not a2l:
        raise hs.Skip("x86_64-w64-mingw32-addr2line is not installed")
    t = hs.trace(exe, options=["--stacks=6", "--srcline"], name="srcline_dwarf")
    hs.eq(t.rc, 0, "exit code")
    base = 0x140000000
    frames = [(a, l) for m, a, l in frame_addresses(t, base) if m == "demo.exe"]
    funcs = [(int(f["rva"], 16), f.get("file"), f.get("line")) for f in t.functions("demo.exe") if f["calls"]]
    addrs = sorted({a for a, _ in frames} | {r for r, _, _ in funcs})
    p = subprocess.run([a2l, "-e", os.path.join(hs.ROOT, exe)] + [hex(base + a) for a in addrs],
                       capture_output=True, text=True, timeout=120)
    ref = {}
    for a, l in zip(addrs, p.stdout.splitlines()):
        l = l.split(" (discriminator")[0]
        ref[a] = None if l.startswith("??:") or l.endswith(":?") else l   # "file:?": no line
    bad = [(hex(a), l, ref[a]) for a, l in frames if l != ref[a]]
    hs.check(len(frames) > 100, f"only {len(frames)} frames")
    hs.eq(bad[:5], [], f"frames whose line differs from addr2line ({len(bad)} of {len(frames)})")
    # a function's line: the first line entry at its entry (objdump's
    # decoded line table, in table order)
    dump = subprocess.run(["x86_64-w64-mingw32-objdump", "--dwarf=decodedline", os.path.join(hs.ROOT, exe)],
                          capture_output=True, text=True, timeout=120).stdout
    first = {}
    for l in dump.splitlines():
        parts = l.split()
        if len(parts) >= 3 and parts[1].isdigit() and parts[2].startswith("0x"):
            first.setdefault(int(parts[2], 16) - base, int(parts[1]))
    badf = [(hex(r), ln, first.get(r)) for r, fl, ln in funcs if fl and first.get(r) != ln]
    hs.check(sum(1 for _, fl, _ in funcs if fl) > 20, "functions with a line")
    hs.eq(badf[:5], [], "functions whose line is not the first line entry at their entry")
    fib = [f for f in t.functions("demo.exe") if f["name"] == "fib"][0]
    hs.eq((os.path.basename(fib["file"]), fib["line"]), ("demo.c", 14), "fib's line")
    hs.check(f"{fib['file']}:14" in t.txt, "report.txt shows the function's line")


def test_srcline_pdb_equals_llvm_pdbutil():
    exe = hs.need("build/fixtures/pdb/pdbcxx.exe")
    pdb = hs.need("build/fixtures/pdb/pdbcxx.pdb")
    if not pdbref.pdbutil_path():
        raise hs.Skip("llvm-pdbutil is not installed")
    ref = pdbref.load(os.path.join(hs.ROOT, pdb))
    t = hs.trace(exe, options=["--stacks=8", "--srcline"], name="srcline_pdb")
    hs.eq(t.rc, 0, "exit code")
    frames = [(a, l) for m, a, l in frame_addresses(t, 0) if m == "pdbcxx.exe"]
    checked = 0
    bad = []
    for a, l in frames:
        at = ref.line_at(a)
        want = f"{at[0]}:{at[1]}" if at else None
        checked += want is not None
        if l != want:
            bad.append((hex(a), l, want))
    hs.check(checked > 50, f"only {checked} frames with a line")
    hs.eq(bad[:5], [], f"frames whose line differs from llvm-pdbutil ({len(bad)} of {len(frames)})")
