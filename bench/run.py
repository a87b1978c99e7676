#!/usr/bin/env python3
"""Run hookscope's benchmarks and print each against an unhooked run.

  bench/run.py calls      ns per call: untraced vs `hookscope run` (entry counting)

Every number is the best of several rounds inside one process; the
"control" rows are the same code in a DLL hookscope does not hook, so
they show how much of a difference is machine noise.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, WINEDEBUG="-all")
OUT = "build/bench/out"


def run(cmd):
    p = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    return dict((l.split()[0], float(l.split()[1])) for l in p.stdout.splitlines() if l.strip())


def calls():
    exe = "build/bench/callbench.exe"
    plain = run(["wine", exe])
    traced = run(["./hookscope", "run", "-q", "-o", OUT, "--", exe])
    print("== per-call overhead of entry counting (ns per call, best of 7 rounds x 20M calls)")
    print(f"{'call':<16}{'untraced':>10}{'hooked':>10}{'added':>10}{'ratio':>9}")
    for k in ("chain", "chain-control", "empty", "empty-control"):
        a, b = plain[k], traced[k]
        label = k if "control" not in k else k.replace("-control", " (unhooked)")
        print(f"{label:<16}{a:>10.2f}{b:>10.2f}{b - a:>10.2f}{b / a:>8.2f}x")
    print("chain: x = f(x), a dependent multiply-add; empty: a function that only returns.")
    print("(unhooked) rows: the same code in a DLL that is not hooked, in the same runs.")


if __name__ == "__main__":
    which = sys.argv[1:] or ["calls"]
    for w in which:
        globals()[w]()
