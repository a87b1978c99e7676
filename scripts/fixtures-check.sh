#!/usr/bin/env bash
# Run every fixture untraced under Wine and check that it works.
#
# Reads tests/fixtures/fixtures.json (cwd, program, args, stdin, expected
# exit code and stdout of each run) and, for each run:
#   - runs it (WINEDEBUG=-all wine PROGRAM ARGS < STDIN, in CWD, 120 s limit),
#   - checks the exit code, that stdout is not empty and equals the expected
#     output (CRLF -> LF), for hmac256 that the digest equals the one Python
#     computed at build time,
#   - if it has an instrumented twin: runs that too, checks it prints the
#     same and exits the same, that it wrote the counts file (HS_CYG_OUT),
#     that tests/support/cyg_names.py names every counted function, that
#     nothing was dropped, and some counts: lua's luaV_execute is called a
#     lot, groundtruth's functions exactly as documented in groundtruth.c,
#     and a second run, of a renamed copy in another directory, gives
#     identical counts (they must not depend on run, exe name or path).
# Prints one line per check and the wall time of each untraced run; exits 1
# if anything failed. Scratch files go to build/fixtures/.check/.
#
# usage: scripts/fixtures-check.sh [RUN_NAME...]     (default: all runs)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
command -v wine >/dev/null 2>&1 || { echo "fixtures-check: wine not found" >&2; exit 1; }
[ -d "$top/build/fixtures" ] || { echo "fixtures-check: run 'make fixtures' first" >&2; exit 1; }
exec python3 - "$top" "$@" <<'PYEOF'
import json, os, shutil, subprocess, sys, time

top = sys.argv[1]
only = set(sys.argv[2:])
manifest = json.load(open(os.path.join(top, "tests/fixtures/fixtures.json")))
scratch = os.path.join(top, "build/fixtures/.check")
os.makedirs(scratch, exist_ok=True)
names_py = os.path.join(top, "tests/support/cyg_names.py")
failures = []

# groundtruth.c's documented counts (cmp_ints depends on msvcrt's qsort)
GROUNDTRUTH = {
    "main": 1, "run_recursion": 1, "run_dispatch": 1, "run_sort": 1,
    "run_structs": 1, "run_args": 1, "run_loops": 1, "fib": 177,
    "is_even": 26, "is_odd": 25, "gcd": 37, "dispatch": 1000,
    "op_add": 250, "op_sub": 250, "op_mul": 250, "op_xor": 250,
    "fill_array": 1, "print_array": 1, "make_point": 100, "point_add": 100,
    "point_scale": 100, "sum6": 10, "sum8": 10, "leaf_1": 1, "leaf_3": 3,
    "leaf_10": 10, "leaf_100": 100, "leaf_1000": 1000, "leaf_10000": 10000,
    "checksum_step": 10001, "twice_called": 2, "printf": 18,
    "run_threads": 1, "thread_main": 2, "thread_leaf": 100000,
}
GROUNDTRUTH_EDGES = {
    ("fib", "fib"): 176, ("is_even", "is_odd"): 25, ("is_odd", "is_even"): 25,
    ("run_recursion", "twice_called"): 1, ("run_args", "twice_called"): 1,
    ("dispatch", "op_add"): 250, ("<external>", "cmp_ints"): None,
    ("__tmainCRTStartup", "main"): 1, ("<external>", "thread_main"): 2,
    ("thread_main", "thread_leaf"): 100000,
}


def report(ok, name, what):
    print(f"{'ok  ' if ok else 'FAIL'} {name:14s} {what}", flush=True)
    if not ok:
        failures.append(f"{name}: {what}")
    return ok


def run(r, program, extra_env=None, args=None):
    cwd = os.path.join(top, r["cwd"])
    env = dict(os.environ, WINEDEBUG="-all")
    env.update(extra_env or {})
    stdin = open(os.path.join(cwd, r["stdin"]), "rb") if r.get("stdin") else subprocess.DEVNULL
    t0 = time.monotonic()
    try:
        p = subprocess.run(["wine", program, *(r["args"] if args is None else args)], cwd=cwd, env=env, stdin=stdin,
                           capture_output=True, timeout=120)
    finally:
        if stdin is not subprocess.DEVNULL:
            stdin.close()
    return p, time.monotonic() - t0


def lf(b):
    return b.replace(b"\r\n", b"\n")


def counts_by_name(exe, counts):
    out = subprocess.run([sys.executable, names_py, exe, counts], check=True,
                         capture_output=True, text=True).stdout
    f, e, comments = {}, {}, []
    for line in out.splitlines():
        p = line.split()
        if p[0].startswith("#"):
            comments.append(line)
        elif p[0] == "F":
            f[p[1]] = int(p[2])
        elif p[0] == "E":
            e[(p[1], p[2])] = int(p[3])
    return f, e, comments


for r in manifest["runs"]:
    name = r["name"]
    if only and name not in only:
        continue
    cwd = os.path.join(top, r["cwd"])
    if r["program"] != "cmd.exe" and not os.path.exists(os.path.join(cwd, r["program"])):
        report(False, name, f"{r['cwd']}/{r['program']} missing (make fixtures)")
        continue
    p, secs = run(r, r["program"])
    out = lf(p.stdout)
    report(p.returncode == r["exit_code"], name,
           f"exit code {p.returncode} (want {r['exit_code']}), {secs:.2f} s")
    report(len(out) > 0, name, f"stdout {len(out.splitlines())} lines")
    if r.get("expected_stdout"):
        want = open(os.path.join(top, r["expected_stdout"]), "rb").read()
        if not report(out == want, name, f"stdout equals {r['expected_stdout']}"):
            sys.stdout.write(out.decode(errors="replace")[:2000])
    if r.get("expected_digest"):
        digest = open(os.path.join(top, r["expected_digest"])).read().split()[0]
        got = out.decode(errors="replace").split()
        report(got[:2] == [digest, r["args"][-1]], name,
               f"HMAC-SHA256 {got[0] if got else '?'} == Python's {digest}")
    if p.stderr.strip():
        print(f"     {name:14s} stderr: {p.stderr.decode(errors='replace').strip()[:300]}")

    instr = r.get("instrumented")
    if not instr:
        continue
    exe = os.path.join(cwd, instr)
    # run 2 uses a copy with another name in another directory (same cwd):
    # the counts must not depend on how or from where the exe is started
    copy_dir = os.path.join(scratch, "elsewhere-with-a-longer-directory-name")
    os.makedirs(copy_dir, exist_ok=True)
    copy = os.path.join(copy_dir, "renamed-" + instr)
    shutil.copyfile(exe, copy)
    results = []
    for k, prog in ((1, instr), (2, copy)):
        counts = os.path.join(scratch, f"{name}-{k}.txt")
        if os.path.exists(counts):
            os.remove(counts)
        pi, si = run(r, prog, {"HS_CYG_OUT": counts}, r.get("instrumented_args"))
        if k == 1:
            report(pi.returncode == r["exit_code"] and lf(pi.stdout) == out, name,
                   f"{instr}: same stdout and exit code ({pi.returncode}), {si:.2f} s")
        if not report(os.path.exists(counts), name, f"{instr} run {k} wrote {counts}"):
            break
        results.append(open(counts).read())
    if len(results) != 2:
        continue
    report(results[0] == results[1], name,
           "counts identical in two runs (2nd: a renamed copy in another directory)")
    image = os.path.join(cwd, r.get("instrumented_image", instr))   # a DLL's twin: the DLL
    f, e, comments = counts_by_name(image, os.path.join(scratch, f"{name}-1.txt"))
    report(not comments, name, f"nothing dropped {comments if comments else ''}")
    unnamed = [n for n in f if n.startswith("?")]
    report(not unnamed, name, f"{len(f)} functions counted, all named {unnamed[:5] if unnamed else ''}")
    if "instrumented_image" not in r:
        report(f.get("main") == 1, name, f"main called {f.get('main')} time(s)")
    if name == "lua-workload":
        n = f.get("luaV_execute", 0)
        report(n > 100000, name, f"luaV_execute called {n} times")
        calls = sum(f.values())
        report(calls > 10_000_000, name, f"{calls} calls in total, {len(e)} distinct edges")
        for fn in ("luaH_get", "luaS_newlstr", "luaD_call", "str_format", "sort", "luaB_pcall",
                   "auxresume", "luaY_parser", "luaC_step"):
            report(f.get(fn, 0) > 0, name, f"{fn} called {f.get(fn, 0)} times")
    elif name == "lua-exit3":
        report(f.get("os_exit") == 1, name, "os_exit counted: the dump ran inside exit()")
    elif name == "groundtruth":
        bad = {k: (f.get(k, 0), v) for k, v in GROUNDTRUTH.items() if f.get(k, 0) != v}
        report(not bad, name, f"{len(GROUNDTRUTH)} documented counts match {bad if bad else ''}")
        report("never_called" not in f, name, "never_called not counted")
        report(f.get("cmp_ints", 0) > 0, name, f"cmp_ints (qsort callback) called {f.get('cmp_ints')}")
        for (a, b), v in GROUNDTRUTH_EDGES.items():
            got = e.get((a, b))
            report(got is not None and (v is None or got == v), name,
                   f"edge {a} -> {b}: {got} (want {v if v is not None else '> 0'})")

print()
if failures:
    print(f"fixtures-check: {len(failures)} check(s) FAILED:")
    for x in failures:
        print("  " + x)
    sys.exit(1)
print("fixtures-check: all fixtures run")
PYEOF
