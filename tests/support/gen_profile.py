"""Write a synthetic saved run (report.json) with N unique CPU sample
stacks, for the flame graph's size and rendering at scale:

    python3 tests/support/gen_profile.py OUT_DIR [N]

The stacks form a tree of shared prefixes (3 roots, then 10 children per
frame along the digits of the stack's number), 4 to 11 frames deep with a
distinct leaf each; the k-th stack has 2,000,000 / (k + 1) samples (at
least 1), so a few stacks are wide and most are narrower than a pixel.
Deterministic: the same N gives the same file.
"""
import json
import os
import sys

NFUNCS = 5000


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    os.makedirs(out, exist_ok=True)
    seed = 12345
    stacks = []
    total = 0
    for k in range(n):
        seed = (seed * 1103515245 + 12345) & 0xFFFFFFFF
        depth = 4 + (seed >> 16) % 8
        count = max(1, 2000000 // (k + 1))
        path, frames = k, []
        for level in range(depth):
            f = path % 3 if level == 0 else 3 + (path * 7 + level * 131) % (NFUNCS - 3)
            path //= 3 if level == 0 else 10
            frames.append(f"big.exe!fn_{f}+0x{level:x}")
        frames[-1] = f"big.exe!fn_{3 + k % (NFUNCS - 3)}+0x{k:x}"
        frames.reverse()   # leaf first
        stacks.append({"count": count, "thread": 1 + k % 4, "frames": frames})
        total += count
    report = {
        "version": 1,
        "tool": {"name": "hookscope", "version": "0.1.0", "command": "run", "agent_tls_index": 0},
        "target": {"path": "C:\\synthetic\\big.exe", "args": [], "pid": 1, "exit_code": 0, "crash": None,
                   "stop": "exit", "wall_time_s": 1.0},
        "threads": 4, "regions_reused": 0, "total_calls": 0, "overflow_calls": 0, "warnings": [],
        "modules": [{"name": "big.exe", "path": "C:\\synthetic\\big.exe", "id": 0, "base": "0x140000000",
                     "size": 16777216, "timestamp": 0, "functions_found": NFUNCS, "functions_hooked": 0,
                     "install_s": 0, "main": True, "loaded_late": False, "unloaded": False, "skipped": {},
                     "patch_kinds": {}, "entry_only": {}}],
        "functions": [],
        "options": {"edges": False, "stacks": None, "time": False},
        "sampling": {"backend": "suspend", "rate_hz": 1000, "samples": total, "wait_samples": 0, "lost": 0,
                     "threads": 4, "cpu_time_s": None},
        "sample_stacks": stacks,
        "wait_stacks": [],
        "loaded_modules": [],
    }
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
