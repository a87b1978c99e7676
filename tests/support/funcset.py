#!/usr/bin/env python3
"""Check that a plain exe and its -finstrument-functions twin have the same
functions, and that every function of the plain exe has a name.

usage: funcset.py PLAIN.exe INSTR.exe --runtime cyg_profile.o [--nm NM]

1. Function set: the names of all text symbols (nm type T/t, names not
   starting with '.') of PLAIN and of INSTR must be equal, after removing
   from both what the counting runtime brings in: every symbol that nm
   lists for the runtime object (defined or undefined; "__imp_X" also
   removes the import thunk "X"). gcc's IPA clones (.constprop.N, .isra.N,
   .part.N) are where the two builds usually differ; a difference is
   printed as a diff and the exit code is 1.
2. Names: every function start in PLAIN's exception directory (.pdata,
   chained entries skipped) must carry a symbol. GNU as drops the symbols
   of *static* functions whose names begin with 'L' (it takes them for
   local labels), which would leave hookscope and the ground truth with
   nameless functions. Missing names are listed; exit code 1. An i386
   image (PE32) has no .pdata, and needs no such check: its C symbols
   begin with '_' ('_Lfoo'), which as keeps.

Prints one summary line: "<n> functions (<m> in .pdata) identical in both
builds". Python 3 standard library only.
"""
import argparse
import os
import struct
import subprocess
import sys


def nm_lines(nm, path):
    return subprocess.run([nm, path], check=True, capture_output=True,
                          text=True, errors="replace").stdout.splitlines()


def text_symbols(nm, path):
    """{name} and {value: [names]} of the text symbols of an image."""
    names, at = set(), {}
    for line in nm_lines(nm, path):
        p = line.split()
        if len(p) == 3 and p[1] in ("T", "t") and not p[2].startswith("."):
            names.add(p[2])
            at.setdefault(int(p[0], 16), []).append(p[2])
    return names, at


def runtime_names(nm, obj):
    out = set()
    for line in nm_lines(nm, obj):
        name = line.split()[-1] if line.split() else ""
        if not name:
            continue
        out.add(name)
        if name.startswith("__imp_"):
            out.add(name[len("__imp_"):])
    return out


def pdata_starts(path):
    """(image_base, [begin rva of every non-chained RUNTIME_FUNCTION])"""
    with open(path, "rb") as f:
        d = f.read()
    lfanew = struct.unpack_from("<I", d, 0x3C)[0]
    nsec, = struct.unpack_from("<H", d, lfanew + 6)
    optsz, = struct.unpack_from("<H", d, lfanew + 20)
    opt = lfanew + 24
    magic = struct.unpack_from("<H", d, opt)[0]
    if magic == 0x10B:                           # PE32: no .pdata (see above)
        return struct.unpack_from("<I", d, opt + 28)[0], []
    if magic != 0x20B:
        raise SystemExit(f"{path}: not a PE32 or PE32+ image")
    base, = struct.unpack_from("<Q", d, opt + 24)
    exc_rva, exc_size = struct.unpack_from("<II", d, opt + 112 + 3 * 8)
    secs = []
    for i in range(nsec):
        o = opt + optsz + 40 * i
        vsize, va, rsize, raw = struct.unpack_from("<IIII", d, o + 8)
        secs.append((va, max(vsize, rsize), raw))

    def off(rva):
        for va, size, raw in secs:
            if va <= rva < va + size:
                return rva - va + raw
        raise SystemExit(f"{path}: rva {rva:#x} outside every section")

    starts = []
    if exc_size:
        o = off(exc_rva)
        for i in range(exc_size // 12):
            begin, end, unwind = struct.unpack_from("<III", d, o + 12 * i)
            if begin == 0 and end == 0:
                continue
            if unwind & 1:                       # points to another entry
                continue
            flags = d[off(unwind)] >> 3
            if flags & 0x4:                      # UNW_FLAG_CHAININFO
                continue
            starts.append(begin)
    return base, starts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("plain")
    ap.add_argument("instr")
    ap.add_argument("--runtime", required=True, help="the runtime's object file")
    ap.add_argument("--nm", default=os.environ.get("NM", "x86_64-w64-mingw32-nm"))
    args = ap.parse_args(argv)

    skip = runtime_names(args.nm, args.runtime)
    plain, plain_at = text_symbols(args.nm, args.plain)
    instr, _ = text_symbols(args.nm, args.instr)
    plain -= skip
    instr -= skip
    ok = True
    if plain != instr:
        ok = False
        print(f"funcset: FUNCTION SETS DIFFER: {args.plain} vs {args.instr}", file=sys.stderr)
        for n in sorted(plain - instr):
            print(f"  only in plain: {n}", file=sys.stderr)
        for n in sorted(instr - plain):
            print(f"  only in instr: {n}", file=sys.stderr)

    base, starts = pdata_starts(args.plain)
    unnamed = [s for s in starts if base + s not in plain_at]
    if unnamed:
        ok = False
        print(f"funcset: {len(unnamed)} functions of {args.plain} have no symbol "
              "(static functions named L*?):", file=sys.stderr)
        for s in unnamed:
            print(f"  rva {s:#x}", file=sys.stderr)
    if not ok:
        return 1
    print(f"funcset: {len(plain)} functions ({len(starts)} in .pdata) identical in "
          f"{os.path.basename(args.plain)} and {os.path.basename(args.instr)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
