#!/usr/bin/env python3
"""Map the RVAs in a cyg_profile.c counts file to function names.

usage: cyg_names.py EXE COUNTS [--nm NM] [--nm-output FILE] [-o OUT]
       cyg_names.py EXE --instrumented [--objdump OBJDUMP] [--nm NM]
       cyg_names.py EXE --loops-to-entry [--objdump OBJDUMP] [--nm NM]

EXE is the instrumented exe that wrote COUNTS (see tests/support/cyg_profile.c
for the input format). Names come from `x86_64-w64-mingw32-nm EXE` (override
with --nm or $NM, or pass a saved nm listing with --nm-output): every text
symbol (nm type T or t, names starting with '.' skipped), its RVA being the
symbol value minus the image base read from EXE's PE header.

Output, sorted by name, one line each:

    F <name> <count>
    E <caller_name> <callee_name> <count>

- An i386 image (PE32) is read with the i686 tools
  (i686-w64-mingw32-nm, -objdump; --nm/--objdump still win) and its C
  symbols named as hookscope names them: the leading '_' and the stdcall
  or fastcall decoration undone (`_f`, `_f@12`, `@f@8`: `f`); a C++ name
  keeps its Itanium mangling without the extra '_' (`__ZN1a1bEv`:
  `_ZN1a1bEv`).
- A function RVA is named by the symbol at exactly that address. Several
  names at one address (aliases) -> the first of: global before local, fewer
  leading underscores, then alphabetical. No symbol there -> "?<rva_hex>".
- A caller is the function containing the call site. The call site is a
  return address, so it is looked up as (site - 1): the greatest symbol
  address <= site - 1 (a call to a noreturn function can be the last
  instruction of its function, making the return address the next
  function's first byte). The pseudo site ffffffff (a call from outside the
  exe, e.g. from msvcrt's qsort or from kernel32's thread start) becomes
  "<external>"; a site below every symbol becomes "<unknown>".
- Lines with the same names are merged (counts added): edges from several
  call sites in one caller, and static functions that share a name in
  different objects (e.g. mingw's inline printf wrappers).
- '#' lines in COUNTS (only "# dropped N", which means the runtime's tables
  overflowed) are copied to the output unchanged, first.

--instrumented lists, one "I <name>" line each, every function of EXE that
calls __cyg_profile_func_enter (found by disassembling it with
x86_64-w64-mingw32-objdump, or --objdump / $OBJDUMP): the instrumented
functions, those the run called and those it never called alike, named by
the rules above. A function absent from COUNTS was called 0 times.

--loops-to-entry lists, one "L <name>" line each, every function of EXE
(the plain build) whose body jumps back to its first instruction (a loop
whose head is the entry): a hook at the entry counts each such jump too.

Python 3 standard library only.
"""
import argparse
import bisect
import os
import re
import struct
import subprocess
import sys

EXTERNAL_SITE = 0xFFFFFFFF


def pe_image(path):
    """(ImageBase, is_pe32) from the PE optional header (PE32+ or PE32)."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if head[:2] != b"MZ":
        raise ValueError(f"{path}: not an MZ/PE file")
    (lfanew,) = struct.unpack_from("<I", head, 0x3C)
    if head[lfanew:lfanew + 4] != b"PE\0\0":
        raise ValueError(f"{path}: no PE signature")
    opt = lfanew + 24
    (magic,) = struct.unpack_from("<H", head, opt)
    if magic == 0x20B:
        return struct.unpack_from("<Q", head, opt + 24)[0], False
    if magic == 0x10B:
        return struct.unpack_from("<I", head, opt + 28)[0], True
    raise ValueError(f"{path}: unknown optional header magic {magic:#x}")


def read_nm(exe, nm, nm_output):
    if nm_output:
        with open(nm_output, encoding="utf-8", errors="replace") as f:
            return f.read()
    res = subprocess.run([nm, exe], check=True, capture_output=True, text=True,
                         errors="replace")
    return res.stdout


def pe_image_base(path):
    return pe_image(path)[0]


def c_name32(sym):
    """An i386 COFF symbol as hookscope names it (see the module's doc)."""
    if sym.startswith("__Z"):
        return sym[1:]
    m = re.fullmatch(r"@(.+)@\d+", sym)
    if m:
        return m.group(1)
    m = re.fullmatch(r"_(.+?)(@\d+)?", sym)
    return m.group(1) if m else sym


def alias_rank(name_and_global):
    name, is_global = name_and_global
    return (0 if is_global else 1, len(name) - len(name.lstrip("_")), name)


def build_symbols(nm_text, image_base, pe32=False):
    """-> (sorted list of rvas, {rva: name})"""
    at = {}
    for line in nm_text.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[1] not in ("T", "t"):
            continue
        value, kind, name = parts
        if name.startswith("."):
            continue
        try:
            rva = int(value, 16) - image_base
        except ValueError:
            continue
        if rva <= 0:
            continue
        at.setdefault(rva, []).append((name, kind == "T"))
    names = {rva: min(cands, key=alias_rank)[0] for rva, cands in at.items()}
    if pe32:
        names = {rva: c_name32(n) for rva, n in names.items()}
    return sorted(names), names


def disassembly(exe, objdump):
    return subprocess.run([objdump, "-d", "--no-show-raw-insn", exe], check=True, capture_output=True,
                          text=True, errors="replace").stdout.splitlines()


def instrumented(exe, objdump, base, addrs, names):
    """Names of the functions that call __cyg_profile_func_enter."""
    found = set()
    for line in disassembly(exe, objdump):
        if "call" in line and line.rstrip().endswith(("<__cyg_profile_func_enter>", "<___cyg_profile_func_enter>")):
            site = int(line.split(":", 1)[0], 16) - base
            i = bisect.bisect_right(addrs, site) - 1
            found.add(names[addrs[i]] if i >= 0 else f"?{site:x}")
    return found


def loops_to_entry(exe, objdump, base, addrs, names):
    """Names of the functions with a jump from their body to their entry."""
    found = set()
    for line in disassembly(exe, objdump):
        m = re.match(r"^\s*([0-9a-f]+):\s+j\w+\s+([0-9a-f]+)\b", line)
        if not m:
            continue
        site, target = int(m.group(1), 16) - base, int(m.group(2), 16) - base
        i = bisect.bisect_right(addrs, site) - 1
        if i >= 0 and addrs[i] == target and site > target:
            found.add(names[target])
    return found


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("exe")
    ap.add_argument("counts", nargs="?")
    ap.add_argument("--nm")
    ap.add_argument("--nm-output", help="use this saved nm listing of EXE")
    ap.add_argument("--instrumented", action="store_true",
                    help="list the instrumented functions of EXE instead")
    ap.add_argument("--loops-to-entry", action="store_true",
                    help="list the functions of EXE that jump back to their entry instead")
    ap.add_argument("--objdump")
    ap.add_argument("-o", "--output", help="write here instead of stdout")
    args = ap.parse_args(argv)

    base, pe32 = pe_image(args.exe)
    # $NM and $OBJDUMP are the x86-64 tools' overrides
    tools, env = ("i686-w64-mingw32-", {}) if pe32 else ("x86_64-w64-mingw32-", os.environ)
    args.nm = args.nm or env.get("NM") or tools + "nm"
    args.objdump = args.objdump or env.get("OBJDUMP") or tools + "objdump"
    addrs, names = build_symbols(read_nm(args.exe, args.nm, args.nm_output), base, pe32)
    if args.instrumented or args.loops_to_entry:
        tag, scan = ("I", instrumented) if args.instrumented else ("L", loops_to_entry)
        sys.stdout.write("".join(f"{tag} {n}\n" for n in sorted(scan(args.exe, args.objdump, base, addrs, names))))
        return 0
    if not args.counts:
        ap.error("COUNTS is needed (or --instrumented)")

    def fn_name(rva):
        return names.get(rva) or f"?{rva:x}"

    def caller_name(site):
        if site == EXTERNAL_SITE:
            return "<external>"
        i = bisect.bisect_right(addrs, site - 1) - 1
        return names[addrs[i]] if i >= 0 else "<unknown>"

    comments, fcount, ecount = [], {}, {}
    with open(args.counts, encoding="ascii") as f:
        for lineno, line in enumerate(f, 1):
            p = line.split()
            if not p:
                continue
            if p[0].startswith("#"):
                comments.append(line.rstrip("\r\n"))
            elif p[0] == "F" and len(p) == 3:
                n = fn_name(int(p[1], 16))
                fcount[n] = fcount.get(n, 0) + int(p[2])
            elif p[0] == "E" and len(p) == 4:
                key = (caller_name(int(p[1], 16)), fn_name(int(p[2], 16)))
                ecount[key] = ecount.get(key, 0) + int(p[3])
            else:
                raise SystemExit(f"{args.counts}:{lineno}: bad line: {line.rstrip()}")

    out = [*comments]
    out += [f"F {n} {c}" for n, c in sorted(fcount.items())]
    out += [f"E {a} {b} {c}" for (a, b), c in sorted(ecount.items())]
    text = "\n".join(out) + ("\n" if out else "")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
