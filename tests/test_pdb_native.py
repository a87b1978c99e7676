"""hookscope's PDB reader, DWARF line reader and PDB locator on Linux
(build/native/tools/symdump), against independent readers of the same
files: llvm-pdbutil (tests/support/pdbref.py), llvm-symbolizer and
addr2line. No Wine involved.

Inputs: the pdb and pdblua fixtures (make fixtures). A fixture that is not
built skips the test."""
import os
import subprocess
import sys

import hs

sys.path.insert(0, os.path.join(hs.ROOT, "tests", "support"))
import pdbref  # noqa: E402

SYMDUMP = os.path.join(hs.ROOT, "build", "native", "tools", "symdump")
PDB_DIR = os.path.join(hs.ROOT, "build", "fixtures", "pdb")
PDBS = ["pdb/pdbc.pdb", "pdb/pdbcxx.pdb", "pdb/pdbmsvc.pdb", "pdb/pdbc-instr.pdb",
        "pdb/pdbcxx-instr.pdb", "pdblua/lua.pdb"]


def fixture_path(rel):
    p = os.path.join(hs.ROOT, "build", "fixtures", rel)
    if not os.path.exists(p):
        raise hs.Skip(f"build/fixtures/{rel} is not built (make fixtures)")
    return p


def symdump(args, check=True):
    if not os.path.exists(SYMDUMP):
        raise hs.Skip("build/native/tools/symdump is not built (make unit)")
    p = subprocess.run([SYMDUMP] + args, capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"symdump {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def records(text, tag, fields):
    """Lines starting with tag, split into fields (the last one may hold spaces)."""
    return [l.split(" ", fields)[1:] for l in text.splitlines() if l.startswith(tag + " ")]


def test_pdb_procedures_equal_llvm_pdbutil():
    """Every S_GPROC32/S_LPROC32/S_THUNK32 llvm-pdbutil lists: same rva,
    exact size, kind and name; nothing more."""
    for rel in PDBS:
        pdb = fixture_path(rel)
        ref = pdbref.load(pdb)
        want = sorted((r, s, k, n) for r, s, k, n, _ in ref.procs)
        got = sorted((int(r, 16), int(s), k, n)
                     for r, s, k, n in records(symdump(["--procs", pdb]).stdout, "proc", 4))
        hs.check(len(want) >= 17, f"{rel}: llvm-pdbutil lists only {len(want)} procedures")
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        hs.check(got == want, f"{rel}: {len(got)} procedures read, llvm-pdbutil lists {len(want)}; "
                              f"missing {missing[:5]}, extra {extra[:5]}")


def test_pdb_publics_equal_llvm_pdbutil():
    """Every S_PUB32 name at its rva (folded into the procedure at the same
    rva as its raw name, or a symbol of its own)."""
    for rel in PDBS:
        pdb = fixture_path(rel)
        want = sorted((r, n) for r, _, n in pdbref.load(pdb).publics)
        got = sorted((int(r, 16), n) for r, n in records(symdump(["--publics", pdb]).stdout, "pub", 2))
        hs.check(got == want, f"{rel}: {len(got)} public names read, llvm-pdbutil lists {len(want)}; "
                              f"first differences {sorted(set(want) ^ set(got))[:5]}")


def test_pdb_line_entries_equal_llvm_pdbutil():
    """Every C13 line entry (rva, line, file), in the order of the PDB."""
    for rel in PDBS:
        pdb = fixture_path(rel)
        want = [(r, ln, f) for r, _, ln, f in pdbref.load(pdb).lines]
        got = [(int(r, 16), int(ln), f) for r, ln, f in records(symdump(["--lines", pdb]).stdout, "line", 3)]
        hs.check(len(want) > 30, f"{rel}: llvm-pdbutil lists only {len(want)} line entries")
        hs.eq(len(got), len(want), f"{rel}: line entries")
        bad = [(a, b) for a, b in zip(got, want) if a != b]
        hs.check(not bad, f"{rel}: {len(bad)} entries differ, first {bad[:3]}")


def test_pdb_line_of_every_procedure_byte():
    """The line of every byte of every procedure equals what llvm-pdbutil's
    line table says covers it (the last entry at or below the address, in
    its range), and the first line of each procedure is its first entry."""
    for rel in PDBS:
        pdb = fixture_path(rel)
        ref = pdbref.load(pdb)
        out = symdump(["--at-procs", "--first", pdb]).stdout
        got = {int(r, 16): v for r, v in records(out, "at", 2)}
        n = bad = 0
        for r, s, k, name, _ in ref.procs:
            if k == "T":
                continue
            for a in range(r, r + s):
                at = ref.line_at(a)
                want = f"{at[0]}:{at[1]}" if at else "none"
                n += 1
                if got.get(a) != want:
                    bad += 1
                    if bad <= 3:
                        print(f"{rel} {a:#x} ({name}): {got.get(a)} want {want}")
        hs.check(n > 500 and bad == 0, f"{rel}: {bad} of {n} addresses have another line")
        firsts = {int(r, 16): v for r, v in records(out, "first", 2)}
        for r, s, k, name, _ in ref.procs:
            entries = [e for e in ref.lines if e[0] == r]
            want = f"{entries[0][3]}:{entries[0][2]}" if entries else None
            hs.eq(firsts.get(r), want, f"{rel}: first line of {name}")


def test_pdb_lines_against_llvm_symbolizer():
    """llvm-symbolizer (its own PDB reader) agrees at every byte except where
    a range has several entries at one address: there it answers the first
    of them at that exact address, the line table's later entry covering
    the code (a function's declaration line vs its first statement)."""
    for prog in ("pdbc", "pdbcxx"):
        exe = fixture_path(f"pdb/{prog}.exe")
        ref = pdbref.load(fixture_path(f"pdb/{prog}.pdb"))
        out = symdump(["--at-procs", exe]).stdout
        got = {int(r, 16): v for r, v in records(out, "at", 2)}
        addrs = sorted(got)
        base = 0x140000000
        p = subprocess.run(["llvm-symbolizer", "--obj=" + exe, "--output-style=GNU", "--functions=none"],
                           input="".join(f"{base + a:#x}\n" for a in addrs), capture_output=True,
                           text=True, timeout=300)
        sym = [l.rsplit(":", 1) for l in p.stdout.splitlines()]
        hs.eq(len(sym), len(addrs), f"{prog}: llvm-symbolizer answers")
        starts = {}
        for r, _, ln, f in ref.lines:
            starts.setdefault(r, []).append((f, ln))
        differ, dup = [], 0
        for a, (f, ln) in zip(addrs, sym):
            theirs = f"{f}:{ln.split()[0]}"
            if theirs == got[a]:
                continue
            several = starts.get(a, [])
            if len(several) > 1 and theirs == f"{several[0][0]}:{several[0][1]}":
                dup += 1
                continue
            differ.append((hex(a), got[a], theirs))
        hs.check(not differ, f"{prog}: llvm-symbolizer differs at {differ[:5]}")
        hs.check(dup > 0, f"{prog}: no address with several entries (the case this test explains)")


def addr2line_equal(exe):
    out = symdump(["--dwarf", "--at-procs", exe]).stdout
    rows = records(out, "at", 2)
    addrs = [int(r, 16) for r, _ in rows]
    p = subprocess.run(["x86_64-w64-mingw32-addr2line", "-e", exe] + [f"{0x140000000 + a:#x}" for a in addrs],
                       capture_output=True, text=True, timeout=300)
    theirs = p.stdout.splitlines()
    hs.eq(len(theirs), len(addrs), f"{exe}: addr2line answers")
    bad = []
    with_line = 0
    for (r, mine), t in zip(rows, theirs):
        t = t.split(" (discriminator")[0]
        if t.startswith("??:") or t.endswith(":?"):
            t = "none"
        with_line += t != "none"
        if mine != t:
            bad.append((r, mine, t))
    return len(addrs), with_line, bad


def test_dwarf_lines_equal_addr2line():
    """Every byte of every function of the gcc builds (DWARF 4 and 5): the
    same file:line as addr2line, or no line where it has none."""
    for exe in ("pdb/pdbc-gcc.exe", "pdb/pdbc-gcc5.exe"):
        n, with_line, bad = addr2line_equal(fixture_path(exe))
        hs.check(n > 10000 and with_line > n // 2, f"{exe}: only {with_line} of {n} addresses with lines")
        hs.check(not bad, f"{exe}: {len(bad)} of {n} addresses differ from addr2line: {bad[:5]}")


def test_locate_in_the_fixture_layouts():
    """The PDB of pdbc.exe found next to it, at its RSDS path, in a srv*
    cache through _NT_SYMBOL_PATH, in a cache* folder, in a --symbols list;
    the PDB of a rebuilt image and one of another age refused with one line
    naming both; no PDB at all is one line; 0x200 does not matter here."""
    d = fixture_path("pdb")
    win = "Z:" + d.replace("/", "\\")
    guid = subprocess.run([sys.executable, os.path.join(hs.ROOT, "tests", "support", "pe_rsds.py"),
                           os.path.join(d, "pdbc.exe")], capture_output=True, text=True,
                          check=True).stdout.split()[0]
    key = subprocess.run([sys.executable, os.path.join(hs.ROOT, "tests", "support", "pe_rsds.py"),
                          os.path.join(d, "pdbc.exe"), "--key"], capture_output=True, text=True,
                         check=True).stdout.strip()
    rebuilt = pdbref.load(os.path.join(d, "rebuilt", "pdbc.pdb")).guid
    found = [
        (["next/pdbc.exe"], f"{d}/next/pdbc.pdb", "image folder"),
        (["rsds/pdbc.exe"], f"{win}\\rsds-store\\pdbc.pdb", "rsds"),
        (["--nt-path", f"{win}\\nothing;srv*{win}\\srv-cache*https://msdl.microsoft.com/download/symbols",
          "srv/pdbc.exe"], f"{win}\\srv-cache\\pdbc.pdb\\{key}\\pdbc.pdb", "_NT_SYMBOL_PATH"),
        (["--symbols", f"cache*{d}/srv-cache", "srv/pdbc.exe"],
         f"{d}/srv-cache/pdbc.pdb/{key}/pdbc.pdb", "--symbols"),
        (["--symbols", f"{d}/nothing;{d}/dir-syms", "dir/pdbc.exe"], f"{d}/dir-syms/pdbc.pdb", "--symbols"),
        (["--nt-path", f"{d}/dir-syms", "dir/pdbc.exe"], f"{d}/dir-syms/pdbc.pdb", "_NT_SYMBOL_PATH"),
        (["--symbols", f"{d}/dir-syms", "rebuilt/pdbc.exe"], f"{d}/dir-syms/pdbc.pdb", "--symbols"),
        (["stripped/pdbc.exe"], f"{d}/stripped/pdbc.pdb", "image folder"),
    ]
    for args, path, via in found:
        args = args[:-1] + [os.path.join(d, args[-1])]
        p = symdump(["--procs"] + args)
        first = p.stdout.splitlines()[0]
        hs.eq(first, f"found {path} via {via} guid {guid} age 1", " ".join(args))
        hs.eq(len(records(p.stdout, "proc", 4)), 24, f"{' '.join(args)}: procedures")
    refused = [
        ("rebuilt", f"{d}/rebuilt/pdbc.pdb does not match pdbc.exe "
                    f"(PDB GUID {{{rebuilt}}} age 1, image wants {guid} age 1)"),
        ("age", f"{d}/age/pdbc.pdb does not match pdbc.exe (PDB GUID {guid} age 1, image wants {guid} age 2)"),
        ("nopdb", "no symbols for pdbc.exe: pdbc.pdb not found (looked at C:\\hookscope-absent\\pdbc.pdb, "
                  "the image's folder, 0 --symbols places, 0 _NT_SYMBOL_PATH places)"),
        ("srv", "no symbols for pdbc.exe: pdbc.pdb not found (looked at C:\\hookscope-absent\\pdbc.pdb, "
                "the image's folder, 0 --symbols places, 0 _NT_SYMBOL_PATH places)"),
    ]
    for where, msg in refused:
        p = symdump(["--procs", os.path.join(d, where, "pdbc.exe")], check=False)
        hs.eq(p.returncode, 1, f"{where}: exit status")
        hs.eq(p.stderr, f"symdump: {msg}\n", f"{where}: message")
        hs.eq(p.stdout, "", f"{where}: output")


def llvm_frames(pdb):
    """The FrameData records llvm-pdbutil lists ("New FPO Data"), as
    (rva, end, locals, params, saved, prolog, uses_ebp, ebp_saved_at): the
    prolog counted only at a function start (a later record describes the
    frame as of its own first byte), and the program read here by
    pattern, not by hookscope's evaluator: a frame on ebp when T0 is
    `$ebp 4 +`, else ebp saved where `$ebp $T0 N - ^ =` says."""
    import re
    out = subprocess.run(["llvm-pdbutil", "dump", "--fpo", pdb], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    rows = []
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) != 11 or not re.fullmatch(r"[0-9A-F]{8}", cells[0]):
            continue
        rva, code, locals_, params, _stack, prolog, saved, _seh, _eh, start = cells[:10]
        prog = cells[10]
        uses_ebp = prog.startswith("$T0 $ebp 4 + =")
        m = re.search(r"\$ebp \$T0 (\d+) - \^ =", prog)
        at = int(m.group(1)) if m and not uses_ebp else 0
        rows.append((int(rva, 16), int(rva, 16) + int(code), int(locals_), int(params), int(saved),
                     int(prolog) if start == "true" else 0, uses_ebp, at))
    return sorted(rows)


def test_pdb_frame_data_equals_llvm_pdbutil():
    """pdbc32.pdb (clang + lld for i686): every FrameData record
    hs_pdb_frames reads equals llvm-pdbutil's, field by field, with what
    its program string says about ebp; the fixture has frames of both
    kinds (on ebp, and without a frame pointer with ebp saved)."""
    pdb = fixture_path("pdb/pdbc32.pdb")
    want = llvm_frames(pdb)
    got = sorted((int(r, 16), int(e, 16), int(l), int(p), int(s), int(pr), u == "E", int(a))
                 for r, e, l, p, s, pr, u, a in records(symdump(["--frames", pdb]).stdout, "frame", 8))
    hs.check(len(want) >= 40, f"llvm-pdbutil lists only {len(want)} FrameData records")
    hs.check(any(w[6] for w in want) and any(w[7] for w in want),
             "the fixture lacks a frame on ebp or a saved ebp (the test would not see them)")
    diff = sorted(set(want) ^ set(got))
    hs.check(got == want, f"{len(got)} records read, llvm-pdbutil lists {len(want)}; differing: {diff[:6]}")


def test_pdb_frame_data_none_in_x64_pdbs():
    """An x86-64 PDB has no FPO or FrameData stream: no records, no error."""
    p = symdump(["--frames", fixture_path("pdb/pdbc.pdb")])
    hs.check(p.stdout == "", f"frame records from an x86-64 PDB: {p.stdout[:200]!r}")
