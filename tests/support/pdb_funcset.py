#!/usr/bin/env python3
"""Check that two PDBs (a program and its -finstrument-functions twin) list
the same procedures, apart from those of the counting runtime.

usage: pdb_funcset.py PLAIN.pdb INSTR.pdb [--runtime-module SUBSTRING]

Procedures are the S_GPROC32/S_LPROC32 records llvm-pdbutil lists
(tests/support/pdbref.py), compared as a multiset of names; procedures of
modules whose name contains SUBSTRING (the runtime's object, e.g.
cyg_profile) are left out of INSTR. A difference is printed and the exit
status is 1; else one line "<n> procedures identical in both builds".
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pdbref  # noqa: E402


def names(pdb, skip):
    ref = pdbref.load(pdb)
    return collections.Counter(n for _, _, k, n, m in ref.procs
                               if k != "T" and not (skip and skip in m))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("plain")
    ap.add_argument("instr")
    ap.add_argument("--runtime-module")
    a = ap.parse_args()
    p, i = names(a.plain, None), names(a.instr, a.runtime_module)
    if p != i:
        for n in sorted(set(p) | set(i)):
            if p[n] != i[n]:
                print(f"  {n}: {p[n]} in {a.plain}, {i[n]} in {a.instr}")
        return 1
    print(f"{sum(p.values())} procedures identical in both builds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
