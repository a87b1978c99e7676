#!/usr/bin/env python3
"""What llvm-pdbutil (Debian's llvm) says a PDB holds: the independent
reference for hookscope's PDB reader and for Wine's DbgHelp.

usage: pdbref.py PDB [--procs] [--publics] [--lines] [--line-at RVA...]
                     [--pdbutil PATH]

Runs `llvm-pdbutil dump -symbols -publics -l -section-headers -summary PDB`
once and prints, numbers in lowercase hex without 0x unless said:

    info <GUID> <age dec>                  (--info, the PDB info stream)
    proc <rva> <size dec> <G|L> <name>     every S_GPROC32/S_LPROC32 (and
                                           _ID forms), thunks as <T>, sorted
    pub <rva> <F|-> <name>                 every S_PUB32 (F: function flag)
    line <rva> <line dec> <file>           every line entry, by rva (PDB order
                                           among equal rvas)
    at <rva> <file>:<line dec> | at <rva> none      (--line-at)

rva = the section's virtual address (from the PDB's section headers) plus
the offset. Python 3 standard library only; the module is also imported by
tests (parse()).
"""
import argparse
import bisect
import re
import shutil
import subprocess
import sys

MOD = re.compile(r"^Mod (\d+) \| `(.*)`:\s*$")
REC = re.compile(r"^\s*\d+ \| (S_\w+) \[size = \d+\] `(.*)`\s*$")
PROC_ADDR = re.compile(r"addr = ([0-9A-Fa-f]{4}):(\d+), code size = (\d+)")
THUNK_ADDR = re.compile(r"off = (\d+), seg = (\d+), len = (\d+)")
PUB = re.compile(r"flags = ([a-z |]+), addr = ([0-9A-Fa-f]{4}):(\d+)")
SECT = re.compile(r"^\s*SECTION HEADER #(\d+)\s*$")
VADDR = re.compile(r"^\s*([0-9A-Fa-f]+) virtual address\s*$")
VSIZE = re.compile(r"^\s*([0-9A-Fa-f]+) virtual size\s*$")
FILE = re.compile(r"^(\S.*) \((?:MD5: [0-9A-Fa-f]+|SHA1: [0-9A-Fa-f]+|SHA256: [0-9A-Fa-f]+|no checksum)\)\s*$")
BLOCK = re.compile(r"^\s+([0-9A-Fa-f]{4}):([0-9A-Fa-f]{8})-([0-9A-Fa-f]{8}), line/addr entries = (\d+)")
ENTRY = re.compile(r"(\d+) ([0-9A-Fa-f]{8}) ([! ])")
GUID = re.compile(r"GUID: \{([0-9A-Fa-f-]+)\}")
AGE = re.compile(r"^\s*Age: (\d+)\s*$")

PROC_KINDS = {"S_GPROC32": "G", "S_LPROC32": "L", "S_GPROC32_ID": "G", "S_LPROC32_ID": "L",
              "S_THUNK32": "T"}


def pdbutil_path(given=None):
    for p in ([given] if given else []) + ["llvm-pdbutil", "llvm-pdbutil-14"]:
        if p and shutil.which(p):
            return shutil.which(p)
    raise SystemExit("llvm-pdbutil not found (package llvm; run 'make deps')")


def run_pdbutil(pdb, pdbutil=None):
    return subprocess.run([pdbutil_path(pdbutil), "dump", "-summary", "-section-headers", "-symbols",
                           "-publics", "-l", pdb], check=True, capture_output=True,
                          text=True, errors="replace").stdout


class Ref:
    """procs: [(rva, size, kind, name, module)], publics: [(rva, is_function,
    name)], lines: [(rva, range end, line, file)] sorted by rva (stable),
    guid, age, sections: [va]."""

    def __init__(self):
        self.procs, self.publics, self.lines, self.sections = [], [], [], []
        self.guid, self.age = None, None

    def rva(self, seg, off):
        seg = int(seg, 16) if isinstance(seg, str) else seg
        if not 1 <= seg <= len(self.sections):
            return None
        return self.sections[seg - 1] + off

    def line_at(self, rva):
        """(file, line) covering rva, or None (see parse)."""
        i = bisect.bisect_right(self._starts(), rva)
        if i == 0:
            return None
        start, end, line, f = self.lines[i - 1]
        if rva >= end or line in (0, 0xFEEFEE, 0xF00F00):
            return None
        return f, line

    def _starts(self):
        if getattr(self, "_start_cache", None) is None:
            self._start_cache = [l[0] for l in self.lines]
        return self._start_cache


def parse(text):
    ref = Ref()
    lines = text.splitlines()
    # summary and section headers first: rvas need the sections
    for i, l in enumerate(lines):
        m = GUID.search(l)
        if m and ref.guid is None:
            ref.guid = m.group(1).upper()
        m = AGE.match(l)
        if m and ref.age is None:
            ref.age = int(m.group(1))
        if SECT.match(l):
            for k in range(i + 1, min(i + 6, len(lines))):
                m = VADDR.match(lines[k])
                if m:
                    ref.sections.append(int(m.group(1), 16))
                    break
    module, section = "", None
    block = None          # (seg, start, end, entries)
    cur_file = None
    pending = None        # a record waiting for its address line
    for l in lines:
        if "Section Headers" in l or "Public Symbols" in l or "Lines" == l.strip() or \
                "Symbols" == l.strip():
            section = l.strip()
        m = MOD.match(l)
        if m:
            module, cur_file = m.group(2), None
            continue
        if section == "Lines":
            m = FILE.match(l)
            if m:
                cur_file = m.group(1)
                continue
            m = BLOCK.match(l)
            if m:
                block = (int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16))
                continue
            if block and cur_file is not None and ENTRY.search(l) and not l.strip().startswith("0"):
                ents = ENTRY.findall(l)
                for ln, off, _ in ents:
                    ref.lines.append([ref.rva(block[0], int(off, 16)), None, int(ln), cur_file,
                                      ref.rva(block[0], block[2])])
                continue
        m = REC.match(l)
        if m:
            pending = (m.group(1), m.group(2))
            continue
        if pending:
            kind, name = pending
            if kind in ("S_GPROC32", "S_LPROC32", "S_GPROC32_ID", "S_LPROC32_ID"):
                m = PROC_ADDR.search(l)
                if m:
                    ref.procs.append((ref.rva(m.group(1), int(m.group(2))), int(m.group(3)),
                                      PROC_KINDS[kind], name, module))
                    pending = None
            elif kind == "S_THUNK32":
                m = THUNK_ADDR.search(l)
                if m:
                    ref.procs.append((ref.rva(int(m.group(2)), int(m.group(1))), int(m.group(3)),
                                      "T", name, module))
                    pending = None
            elif kind == "S_PUB32":
                m = PUB.search(l)
                if m:
                    ref.publics.append((ref.rva(m.group(2), int(m.group(3))),
                                        "function" in m.group(1), name))
                    pending = None
            else:
                pending = None
    # The line of an address: the last entry (in PDB order among equal
    # addresses) at or below it, if the address is inside that entry's
    # DEBUG_S_LINES range (the block line's start-end). Entries of the files
    # of one range interleave; a zero-length entry covers nothing.
    order = sorted(range(len(ref.lines)), key=lambda i: (ref.lines[i][0], i))
    ref.lines = [(ref.lines[i][0], ref.lines[i][4], ref.lines[i][2], ref.lines[i][3]) for i in order]
    ref.procs.sort()
    ref.publics.sort()
    return ref


def load(pdb, pdbutil=None):
    return parse(run_pdbutil(pdb, pdbutil))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pdb")
    ap.add_argument("--info", action="store_true")
    ap.add_argument("--procs", action="store_true")
    ap.add_argument("--publics", action="store_true")
    ap.add_argument("--lines", action="store_true")
    ap.add_argument("--line-at", nargs="*", default=[])
    ap.add_argument("--pdbutil")
    a = ap.parse_args()
    ref = load(a.pdb, a.pdbutil)
    out = []
    if a.info:
        out.append(f"info {{{ref.guid}}} {ref.age}")
    if a.procs:
        out += [f"proc {r:x} {s} {k} {n}" for r, s, k, n, _ in ref.procs]
    if a.publics:
        out += [f"pub {r:x} {'F' if f else '-'} {n}" for r, f, n in ref.publics]
    if a.lines:
        out += [f"line {r:x} {ln} {f}" for r, e, ln, f in ref.lines]
    for x in a.line_at:
        at = ref.line_at(int(x, 16))
        out.append(f"at {int(x, 16):x} {at[0]}:{at[1]}" if at else f"at {int(x, 16):x} none")
    sys.stdout.write("".join(l + "\n" for l in out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
