"""hookscope's symbol code built for Windows (build/tests/symdump.exe) under
Wine: the PDB reader gives what the native build gives; Wine's DbgHelp,
read through the DbgHelp backend, is compared with it (where they agree and
exactly where and why they do not: injector/symbols/FINDINGS.md); MSVC
names are undecorated as llvm-undname does.

Inputs: the pdb and pdblua fixtures (make fixtures)."""
import os
import subprocess
import sys

import hs

sys.path.insert(0, os.path.join(hs.ROOT, "tests", "support"))
import pdbref  # noqa: E402

SYMDUMP_WIN = "build/tests/symdump.exe"
SYMDUMP_NAT = os.path.join(hs.ROOT, "build", "native", "tools", "symdump")


def fixture(rel):
    p = os.path.join("build", "fixtures", rel)
    if not os.path.exists(os.path.join(hs.ROOT, p)):
        raise hs.Skip(f"{p} is not built (make fixtures)")
    return p


def win(args, check=True, env=None):
    hs.need(SYMDUMP_WIN)
    p = hs.wine([SYMDUMP_WIN] + args, timeout=300, extra_env=env)
    out = p.stdout.decode("utf-8", "replace").replace("\r\n", "\n")
    if check and p.returncode != 0:
        raise AssertionError(f"symdump.exe {' '.join(args)}: exit {p.returncode}: "
                             + p.stderr.decode(errors="replace").strip())
    return out


def nat(args):
    if not os.path.exists(SYMDUMP_NAT):
        raise hs.Skip("build/native/tools/symdump is not built (make unit)")
    return subprocess.run([SYMDUMP_NAT] + args, cwd=hs.ROOT, capture_output=True, text=True,
                          check=True, timeout=300).stdout


def records(text, tag, fields):
    return [l.split(" ", fields)[1:] for l in text.splitlines() if l.startswith(tag + " ")]


def unix(path):
    """DbgHelp under Wine turns a PDB's Unix file names into Z:\\ paths."""
    if path.startswith("Z:\\"):
        return path[2:].replace("\\", "/")
    return path


def test_windows_build_reads_pdbs_as_the_native_one():
    """Procedures, publics, first lines, line entries and the line of every
    procedure byte: byte-identical output from the Windows and Linux builds."""
    for exe in ("pdb/pdbc.exe", "pdb/pdbcxx.exe", "pdb/pdbmsvc.exe", "pdblua/lua.exe"):
        path = fixture(exe)
        args = ["--procs", "--publics", "--first", "--lines"] + (["--at-procs"] if "lua" not in exe else [])
        w, n = win(args + [path]), nat(args + [path])
        hs.check(len(n.splitlines()) > 100, f"{exe}: native output is {len(n.splitlines())} lines")
        if w != n:
            wl, nl = w.splitlines(), n.splitlines()
            first = next((i for i, (a, b) in enumerate(zip(wl, nl)) if a != b), min(len(wl), len(nl)))
            raise AssertionError(f"{exe}: Windows and native output differ at line {first + 1}: "
                                 f"{wl[first:first + 1]} vs {nl[first:first + 1]} ({len(wl)} vs {len(nl)} lines)")


def test_dbghelp_procedures_equal_the_pdb_reader():
    """Wine's DbgHelp lists every procedure of these PDBs with the same rva,
    exact size and name (SymTagFunction), leaf functions included."""
    for exe in ("pdb/pdbc.exe", "pdb/pdbcxx.exe", "pdb/pdbmsvc.exe", "pdblua/lua.exe"):
        path = fixture(exe)
        d = win(["--dbghelp", "--procs", path])
        hs.eq(d.splitlines()[0], "symtype 3", f"{exe}: DbgHelp module type (SymPdb)")
        got = sorted((int(r, 16), int(s), n) for r, s, _, n in records(d, "proc", 4))
        want = sorted((int(r, 16), int(s), n) for r, s, _, n in records(nat(["--procs", path]), "proc", 4))
        hs.check(len(want) > 15 and got == want,
                 f"{exe}: DbgHelp {len(got)} procedures, the PDB reader {len(want)}; "
                 f"differences {sorted(set(got) ^ set(want))[:5]}")


def test_dbghelp_lines_differ_only_after_several_entries_at_one_address():
    """Wine's DbgHelp keeps only the first line entry at an address
    (dbghelp/symbol.c, symt_add_func_line drops a later entry at the same
    address as a duplicate), so wherever the compiler put two entries at
    one address (a function's declaration line, then its first statement)
    DbgHelp answers the first one for the whole range the second covers.
    Everywhere else its lines are the PDB's."""
    total = diff = 0
    for prog in ("pdbc", "pdbcxx", "pdbmsvc"):
        path = fixture(f"pdb/{prog}.exe")
        ref = pdbref.load(os.path.join(hs.ROOT, fixture(f"pdb/{prog}.pdb")))
        starts = {}
        for r, _, ln, f in ref.lines:
            starts.setdefault(r, []).append(f"{f}:{ln}")
        cover = sorted(starts)
        mine = {int(r, 16): v for r, v in records(nat(["--at-procs", path]), "at", 2)}
        theirs = {int(r, 16): v for r, v in records(win(["--dbghelp", "--at-procs", path]), "at", 2)}
        hs.eq(sorted(theirs), sorted(mine), f"{prog}: addresses looked up")
        unexplained = []
        for a, v in mine.items():
            total += 1
            t = theirs[a]
            if t != "none":
                f, _, ln = t.rpartition(":")
                t = f"{unix(f)}:{ln}"
            if t == v:
                continue
            diff += 1
            # the entry covering a starts where the PDB has several entries
            import bisect
            at = cover[bisect.bisect_right(cover, a) - 1]
            if not (len(starts[at]) > 1 and t == starts[at][0] and v == starts[at][-1]):
                unexplained.append((hex(a), v, t))
        hs.check(not unexplained, f"{prog}: DbgHelp lines differ otherwise: {unexplained[:5]}")
    print(f"DbgHelp's line differs from the PDB's at {diff} of {total} procedure bytes")
    hs.check(diff > 0, "no difference at all: Wine's DbgHelp changed, revisit FINDINGS.md")


def test_dbghelp_search_under_wine():
    """Where Wine's DbgHelp finds a PDB (SymType 3) and where not (4:
    exports only, no error): next to the image, at the RSDS path and in a
    plain folder of the search path or of _NT_SYMBOL_PATH yes; through a
    srv* or cache* entry no (taken as a folder name); a rebuilt image's PDB
    and an image with 0x200 set no, silently."""
    d = os.path.join(hs.ROOT, fixture("pdb"))
    w = "Z:" + d.replace("/", "\\")
    cases = [
        ([], "next", 3), ([], "rsds", 3), ([], "srv", 4),
        (["--symbols", f"srv*{w}\\srv-cache"], "srv", 4),
        (["--symbols", f"cache*{w}\\srv-cache"], "srv", 4),
        (["--symbols", f"{w}\\dir-syms"], "dir", 3),
        ([], "rebuilt", 4), ([], "age", 4), ([], "stripped", 4), ([], "nopdb", 4),
    ]
    # with no search path given, SymInitialize takes _NT_SYMBOL_PATH
    cases += [({"_NT_SYMBOL_PATH": f"{w}\\dir-syms"}, "dir", 3),
              ({"_NT_SYMBOL_PATH": f"srv*{w}\\srv-cache"}, "srv", 4)]
    for extra, where, want in cases:
        env = extra if isinstance(extra, dict) else None
        args = [] if env else extra
        out = win(["--dbghelp", "--procs"] + args + [f"build/fixtures/pdb/{where}/pdbc.exe"], env=env)
        hs.eq(out.splitlines()[0], f"symtype {want}", f"DbgHelp on {where} {extra}")
        procs = len(records(out, "proc", 4))
        hs.check((procs == 24) == (want == 3), f"{where}: {procs} procedures with SymType {want}")


def test_msvc_names_undecorated_as_llvm_undname():
    """Every MSVC-decorated function name of the MSVC-target program: the
    full form equals llvm-undname's without access, calling convention,
    return type and member kind; the name form equals the PDB procedure's
    name at the same rva."""
    pdb = os.path.join(hs.ROOT, fixture("pdb/pdbmsvc.pdb"))
    ref = pdbref.load(pdb)
    procs = {r: n for r, _, k, n, _ in ref.procs}
    names = [(r, n) for r, fn, n in ref.publics if fn and n.startswith("?")]
    hs.check(len(names) >= 12, f"only {len(names)} MSVC function names")
    args = []
    for _, n in names:
        args += ["--undname", n]
    out = win(args)
    mine = {l.split(" ")[1]: l.split(" -> ", 1)[1] for l in out.splitlines() if l.startswith("undname ")}
    p = subprocess.run(["llvm-undname", "--no-access-specifier", "--no-calling-convention",
                        "--no-return-type", "--no-member-type"] + [n for _, n in names],
                       capture_output=True, text=True, check=True)
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    theirs = dict(zip(lines[0::2], lines[1::2]))
    for r, n in names:
        full, _, only = mine.get(n, " | ").partition(" | ")
        hs.eq(full, theirs.get(n), f"{n}: full form")
        hs.eq(only, procs.get(r), f"{n}: name form (the PDB procedure at {r:#x})")
