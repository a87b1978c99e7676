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
