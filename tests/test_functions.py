"""hookscope functions FILE."""
import re

import hs


def test_functions_lists_and_classifies():
    exe = hs.need("build/tests/echo.exe")
    p = hs.hookscope(["functions", exe])
    hs.eq(p.returncode, 0, "exit code")
    lines = p.stdout.decode().splitlines()
    hs.eq(lines[0].split(), ["rva", "size", "bounds", "hook", "source", "name"], "header")
    rows = {}
    nrows = 0
    for l in lines[1:]:
        m = re.match(r"^0x([0-9a-f]{8})\s+(\d+)\s+(pdata|eh_frame|pdb|dwarf|dbghelp|next)\s+(yes \(\S+\)|yes|no: \S+)"
                     r"\s+(pdb|coff|export|dbghelp|-)\s+(.+)$", l)
        if m:
            nrows += 1
            rows[m.group(6)] = (int(m.group(1), 16), int(m.group(2)), m.group(4), m.group(5), m.group(3))
    hs.check("main" in rows and "show" in rows, f"main/show missing: {sorted(rows)[:10]}")
    hs.eq(rows["show"][2], "yes", "show is hookable")
    hs.eq(rows["show"][3], "coff", "show is named by the COFF symbol table")
    hs.eq(rows["show"][4], "pdata", "show's bounds are its .pdata entry's")
    summary = [l for l in lines if re.match(r"^\d+ functions, \d+ hookable", l)]
    hs.eq(len(summary), 1, "one summary line")
    total = int(summary[0].split()[0])
    hs.eq(total, nrows, "summary counts every listed function")
    # the same classification as a traced run
    t = hs.trace(exe, ["x"], name="functions_vs_run")
    hooked = {f["name"] for f in t.functions() if f["hooked"]}
    listed = {n for n, r in rows.items() if r[2].startswith("yes")}
    hs.eq(hooked, listed, "functions hooked in a run = listed as hookable")


def test_functions_section_symbols_name_none():
    """A section's own COFF symbol never names a function on x86-64
    either: symdump.exe links libstdc++'s demangler statically, whose
    static functions kept no symbol (its objects are stripped of local
    symbols) but the `.text` of their object where the first starts,
    and a `.text.unlikely` of cold parts; each is listed as sub_<rva>."""
    exe = hs.need("build/tests/symdump.exe")
    at = {rva: [n if (scl, ty) == (3, 0) and n.startswith(".") else None for n, ty, scl in syms]
          for rva, syms in hs.coff_symbols(exe).items()}
    p = hs.hookscope(["functions", exe])
    hs.eq(p.returncode, 0, "exit code")
    rows = {int(m.group(1), 16): m.group(2) for m in
            (re.match(r"^0x([0-9a-f]{8})\s+\d+\s+\S+\s+(?:yes \(\S+\)|yes|no: \S+)\s+\S+\s+(.+)$", l)
             for l in p.stdout.decode().splitlines()) if m}
    hs.eq({rva: n for rva, n in rows.items() if n.startswith(".")}, {}, "functions named by a section")
    only_section = [rva for rva, ns in at.items() if None not in ns and rva in rows]
    hs.eq(sorted({n for rva in only_section for n in at[rva]}), [".text", ".text.unlikely"],
          "the sections alone where listed functions start")
    hs.eq({rva: rows[rva] for rva in only_section}, {rva: f"sub_{rva:x}" for rva in only_section},
          "the names of those functions")
