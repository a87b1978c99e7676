#!/usr/bin/env python3
"""How truly the suspend sampler samples a 32-bit program, over many runs:
build/tests32/cpusplit.exe (tests/targets/cpusplit.c built for i686) under
`hookscope run --no-hooks`, and per run the worst burner's difference
between its share of the CPU samples and its share of the time the
program measured itself (points), the burners' CPU samples and their
share of all CPU samples, and the burner stacks that are not the real
ones (the figures test_wow64.check_sampled32 bounds).

usage: scripts/sample32_spread.py [--runs N] [--seconds S] [--rate HZ]
(under Wine 8, WINEPREFIX as for the tests; after make test-build)
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from test_wow64 import CHAINS32, START32  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rate", type=int, default=500)
    a = ap.parse_args()
    worst = []
    for i in range(a.runs):
        out = tempfile.mkdtemp(prefix="sample32-")
        p = subprocess.run([os.path.join(ROOT, "hookscope"), "run", "-q", "--no-hooks", "--sample-rate", str(a.rate),
                            "-o", out, "--", "build/tests32/cpusplit.exe", str(a.seconds), "alone"],
                           cwd=ROOT, capture_output=True)
        us = {m.group(1): int(m.group(2)) for m in re.finditer(r"burn_(\w) calls \d+ us (\d+)", p.stdout.decode())}
        stacks = {}
        for line in open(os.path.join(out, "cpu-stacks.folded")):
            s, n = line.rsplit(" ", 1)
            stacks[tuple(s.split(";"))] = stacks.get(tuple(s.split(";")), 0) + int(n)
        self_n = {k: sum(n for s, n in stacks.items() if s[-1] == "cpusplit.exe!burn_" + k) for k in us}
        n, total = sum(self_n.values()), sum(us.values())
        diff = max(abs(100.0 * self_n[k] / max(n, 1) - 100.0 * us[k] / total) for k in us)
        wrong = sum(c for s, c in stacks.items() if s[-1].startswith("cpusplit.exe!burn_") and
                    (list(s[:len(START32)]) != START32 or
                     tuple(f.replace("cpusplit.exe!", "") for f in s[len(START32):]) not in CHAINS32))
        worst.append(diff)
        print(f"run {i}: exit {p.returncode}, worst burner {diff:.2f} points off, {n} burner samples of "
              f"{sum(stacks.values())} CPU samples, {wrong} not the real stack", flush=True)
    print(f"worst burner over {a.runs} runs: {min(worst):.2f} to {max(worst):.2f} points")


if __name__ == "__main__":
    main()
