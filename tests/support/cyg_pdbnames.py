#!/usr/bin/env python3
"""Name the RVAs of a cyg_profile.c counts file from the instrumented exe's
PDB (for programs that have no COFF symbols: cyg_names.py reads nm).

usage: cyg_pdbnames.py PDB COUNTS [-o OUT]
       cyg_pdbnames.py PDB --instrumented EXE [--objdump OBJDUMP]

Names are the PDB's procedure names (S_GPROC32/S_LPROC32, as llvm-pdbutil
lists them: tests/support/pdbref.py), e.g. `shapes::Rect::area`; a
function RVA with no procedure starting there is "?<rva hex>". A caller is
the procedure containing the call site minus one, "<external>" for the
pseudo site ffffffff, "<unknown>" outside every procedure. Counts of
functions with the same name (overloads) are added.

Output is JSON, keys sorted:
    {"functions": {name: calls}, "edges": [[caller, callee, calls], ...]}

--instrumented EXE writes instead {"instrumented": [name, ...]}: the
procedures of EXE (the instrumented exe the PDB describes) that call
__cyg_profile_func_enter (its public symbol), found by disassembling EXE
with x86_64-w64-mingw32-objdump (or --objdump): every instrumented
function, those a run called and those it never called alike.
Python 3 standard library only.
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pdbref  # noqa: E402
from cyg_names import pe_image_base  # noqa: E402

EXTERNAL_SITE = 0xFFFFFFFF


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pdb")
    ap.add_argument("counts", nargs="?")
    ap.add_argument("--instrumented", metavar="EXE")
    ap.add_argument("--objdump", default=os.environ.get("OBJDUMP", "x86_64-w64-mingw32-objdump"))
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    ref = pdbref.load(a.pdb)
    procs = [(r, s, n) for r, s, k, n, _ in ref.procs]
    start = {r: n for r, _, n in procs}
    if a.instrumented:
        return instrumented(a, ref, procs)
    if not a.counts:
        ap.error("COUNTS is needed (or --instrumented EXE)")

    def containing(site):
        if site == EXTERNAL_SITE:
            return "<external>"
        for r, s, n in procs:
            if r <= site - 1 < r + s:
                return n
        return "<unknown>"

    funcs, edges = {}, {}
    with open(a.counts, encoding="ascii") as f:
        for lineno, line in enumerate(f, 1):
            p = line.split()
            if not p:
                continue
            if p[0].startswith("#"):
                raise SystemExit(f"{a.counts}:{lineno}: {line.strip()}")
            if p[0] == "F" and len(p) == 3:
                n = start.get(int(p[1], 16), f"?{int(p[1], 16):x}")
                funcs[n] = funcs.get(n, 0) + int(p[2])
            elif p[0] == "E" and len(p) == 4:
                k = (containing(int(p[1], 16)), start.get(int(p[2], 16), f"?{int(p[2], 16):x}"))
                edges[k] = edges.get(k, 0) + int(p[3])
            else:
                raise SystemExit(f"{a.counts}:{lineno}: bad line: {line.rstrip()}")
    text = json.dumps({"functions": funcs, "edges": [[c, e, n] for (c, e), n in sorted(edges.items())]},
                      indent=1, sort_keys=True) + "\n"
    if a.output:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def instrumented(a, ref, procs):
    enter = [r for r, is_fn, n in ref.publics if n == "__cyg_profile_func_enter"]
    if len(enter) != 1:
        raise SystemExit(f"{a.pdb}: no single public __cyg_profile_func_enter")
    base = pe_image_base(a.instrumented)
    out = subprocess.run([a.objdump, "-d", "--no-show-raw-insn", a.instrumented], check=True, capture_output=True,
                         text=True, errors="replace").stdout
    found = set()
    for m in re.finditer(r"(?m)^\s*([0-9a-f]+):\s+call\s+0x([0-9a-f]+)", out):
        if int(m.group(2), 16) - base == enter[0]:
            site = int(m.group(1), 16) - base
            found.update(n for r, sz, n in procs if r <= site < r + sz)
    sys.stdout.write(json.dumps({"instrumented": sorted(found)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
