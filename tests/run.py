#!/usr/bin/env python3
"""Run every hookscope test and print one line per test, then the total.

Two kinds of tests:
  - native unit test programs (build/native/unit/test_*, and the same
    built with ASan and UBSan in build/native-asan/unit, run as asan/*;
    the hook engine's 32-bit mode built as 32-bit code in
    build/native32/unit, run as unit32/*), which print one line per case:
    "ok - NAME" or "not ok - NAME: why"; a missing build directory of any
    is a failure ("unit/*", "unit32/*", "asan/*");
  - Python tests: functions named test_* in tests/test_*.py, which run
    hookscope under Wine and check exact outcomes. A test passes when it
    returns, is skipped when it raises hs.Skip, and fails otherwise.

Every test runs in a process group of its own (a Python test in a child
`tests/run.py --one NAME`): a test that outlives --limit seconds is killed
with everything it started (Wine processes included) and fails, so one hung
program can never hang the run. Once --budget seconds have passed, tests not
yet started are not started and count as failed.

Every skip is counted and printed with its reason ("skip - NAME: WHY"
lines of a unit test, hs.Skip of a Python test); a skip is accepted only
where tests/skips.py names the fact of this machine that justifies it,
any other is unexplained and fails the run. A check tests/skips.py lists
as a known failure is reported as a skip with its documented reason (and
fails the run once it passes, so that the entry is taken out).

Golden files are rewritten only with --regen-golden (which sets
HS_REGEN_GOLDEN=1 for the tests): HS_REGEN_GOLDEN in the environment
alone is refused, so that no run passes by rewriting what it compares.

usage: tests/run.py [-j N] [-v] [-k SUBSTRING]... [--limit S] [--budget S]
                    [--regen-golden] [--skips]
The last line is "N passed, N failed, N skipped (N unexplained)"; the exit
status is 1 if anything failed or a skip is unexplained.
"""
import argparse
import concurrent.futures
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import hs  # noqa: E402  (tests/hs.py)
import skips  # noqa: E402  (tests/skips.py)


class Result:
    def __init__(self, name, status, message="", seconds=0.0):
        self.name, self.status, self.message, self.seconds = name, status, message, seconds
        self.why = None      # a skip: what justifies it here (None: unexplained)
        self.notes = []      # what the test's helpers said on stderr that the log keeps (hs.wine)


def judge(r):
    """Hold a result against tests/skips.py: a skip is explained or not, a
    known failure becomes a skip with its reason, a known failure that
    passes fails."""
    if r.status == "SKIP":
        r.why = skips.explain_skip(r.name, r.message)
    elif r.status == "FAIL" and skips.known_failure(r.name):
        r.why = "known failure: " + skips.known_failure(r.name)
        r.message = (r.message or "failed").splitlines()[0]
        r.status = "SKIP"
    elif r.status == "PASS" and skips.known_failure(r.name):
        r.status = "FAIL"
        r.message = "passes, but tests/skips.py lists it as a known failure: take the entry out"
    return r


# The sanitizer build of the units (build/native-asan/unit) runs as
# asan/test_*: a leak, a read outside a buffer or undefined behaviour ends
# the program with a report; its fuzz tests go on for this many seconds.
ASAN_FUZZ_SECONDS = 30
ASAN_ENV = {"ASAN_OPTIONS": "abort_on_error=0:halt_on_error=1:detect_leaks=1",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
            "HS_FUZZ_SECONDS": str(ASAN_FUZZ_SECONDS)}


def unit_tests():
    """One job per native unit test program (name, path, extra environment);
    each yields several results."""
    jobs = []
    for sub, prefix, env in (("native", "unit/", {}), ("native32", "unit32/", {}),
                             ("native-asan", "asan/", ASAN_ENV)):
        d = os.path.join(ROOT, "build", sub, "unit")
        if not os.path.isdir(d):
            # not built: a failure, not a run that quietly has no such tests
            jobs.append((prefix + "*", (None, os.path.relpath(d, ROOT))))
            continue
        for f in sorted(os.listdir(d)):
            p = os.path.join(d, f)
            if f.startswith("test_") and os.access(p, os.X_OK) and not f.endswith(".d"):
                jobs.append((prefix + f, (p, env)))
    return jobs


def run_killable(cmd, limit, env=None):
    """Run cmd in a process group of its own, its output into files (a
    leftover process holding a pipe cannot keep the run waiting); kill the
    whole group after `limit` seconds, and kill what the command left
    running when it ends. env: more environment. Returns (returncode, or
    None if it was killed, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                             start_new_session=True, env=dict(os.environ, **(env or {})))
        try:
            rc = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            rc = None
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        p.wait()
        out.seek(0)
        err.seek(0)
        return rc, out.read().decode(errors="replace"), err.read().decode(errors="replace")


def run_unit(name, arg, limit):
    path, env = arg
    if path is None:
        return [Result(name, "FAIL", f"{env} is missing: `make test-build` builds the unit tests there")]
    start = time.time()
    rc, stdout, stderr = run_killable([path], limit, env)
    if rc is None:
        return [Result(name, "FAIL", f"timed out after {limit} s (killed)", time.time() - start)]
    results = []
    for line in stdout.splitlines():
        if line.startswith("ok - "):
            results.append(Result(f"{name}: {line[5:].strip()}", "PASS"))
        elif line.startswith("not ok - "):
            rest = line[9:]
            case, _, why = rest.partition(": ")
            results.append(Result(f"{name}: {case.strip()}", "FAIL", why.strip()))
        elif line.startswith("skip - ") or line.startswith("# skip "):
            # (a "# skip NAME: WHY" diagnostic is a skip too: none goes uncounted)
            case, _, why = line[7:].partition(": ")
            results.append(Result(f"{name}: {case.strip()}", "SKIP", why.strip()))
    if rc != 0 and not any(r.status == "FAIL" for r in results):
        # a sanitizer's report: its first lines say what and where
        report = [l for l in stderr.splitlines() if "ERROR: " in l or "runtime error" in l or l.startswith("    #")]
        tail = report[:4] or (stdout + stderr).strip().splitlines()[-5:]
        results.append(Result(name, "FAIL", f"exit status {rc}: " + " | ".join(tail)))
    if not results:
        results.append(Result(name, "FAIL", "printed no test results"))
    secs = time.time() - start
    for r in results:
        r.seconds = secs / len(results)
    return results


def python_tests():
    """The names (file.function) of the Python tests; each runs in a child."""
    jobs = []
    for f in sorted(os.listdir(HERE)):
        if not (f.startswith("test_") and f.endswith(".py")):
            continue
        spec = importlib.util.spec_from_file_location(f[:-3], os.path.join(HERE, f))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for attr in sorted(dir(mod)):
            fn = getattr(mod, attr)
            if attr.startswith("test_") and callable(fn):
                jobs.append(f"{f[:-3]}.{attr}")
    return jobs   # files, then tests within a file, in name order


def run_one(name):
    """In the child: run one Python test, print its outcome as one JSON line."""
    mod_name, _, fn_name = name.partition(".")
    spec = importlib.util.spec_from_file_location(mod_name, os.path.join(HERE, mod_name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
        getattr(mod, fn_name)()
        status, message = "PASS", ""
    except hs.Skip as e:
        status, message = "SKIP", str(e)
    except AssertionError as e:
        status, message = "FAIL", str(e) or traceback.format_exc()
    except Exception:
        status, message = "FAIL", traceback.format_exc()
    sys.stdout.flush()
    print("\n@@hookscope-test " + json.dumps({"status": status, "message": message}))
    return 0


def run_python(name, _arg, limit):
    start = time.time()
    rc, stdout, stderr = run_killable([sys.executable, os.path.abspath(__file__), "--one", name], limit)
    secs = time.time() - start
    if rc is None:
        return [Result(name, "FAIL", f"timed out after {limit} s (killed with every process it started)", secs)]
    # what the helpers did that a passing test should still show (hs.wine's
    # starts tried again): printed after the test's line
    notes = [l for l in stderr.splitlines() if l.startswith("hs.wine: ")]
    for line in reversed(stdout.splitlines()):
        if line.startswith("@@hookscope-test "):
            r = json.loads(line[len("@@hookscope-test "):])
            res = Result(name, r["status"], r["message"], secs)
            res.notes = notes
            return [res]
    tail = " | ".join((stdout + stderr).strip().splitlines()[-5:])
    return [Result(name, "FAIL", f"the test process ended (status {rc}) without a result: {tail}", secs)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=2, help="tests run at once (default 2)")
    ap.add_argument("-k", action="append", default=[], help="only tests whose name contains this")
    ap.add_argument("-v", action="store_true", help="print passing tests' timings too")
    ap.add_argument("--limit", type=float, default=float(os.environ.get("HS_TEST_LIMIT", 420)),
                    help="seconds one test may take before it is killed (default 420)")
    ap.add_argument("--budget", type=float, default=float(os.environ.get("HS_TEST_BUDGET", 3600)),
                    help="seconds after which no further test is started (default 3600)")
    ap.add_argument("--regen-golden", action="store_true",
                    help="rewrite the golden files the tests compare with (review the diff after)")
    ap.add_argument("--skips", action="store_true", help="print the accepted skips and known failures")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        return run_one(args.one)
    if args.skips:
        print(skips.describe())
        return 0
    if os.environ.get("HS_REGEN_GOLDEN") and not args.regen_golden:
        print("tests/run.py: HS_REGEN_GOLDEN is set: golden tests would rewrite their goldens and pass; "
              "unset it, or ask for it with --regen-golden", file=sys.stderr)
        return 2
    if args.regen_golden:
        os.environ["HS_REGEN_GOLDEN"] = "1"

    server = hs.WineServer()
    jobs = [(n, run_unit, p) for n, p in unit_tests()] + [(n, run_python, None) for n in python_tests()]
    if args.k:
        jobs = [j for j in jobs if any(k in j[0] for k in args.k)]

    lock = threading.Lock()
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    failures, unexplained = [], []

    def report(results):
        with lock:
            for r in map(judge, results):
                counts[r.status] += 1
                if r.status == "PASS":
                    line = f"PASS {r.name}"
                    if args.v:
                        line += f" ({r.seconds:.1f} s)"
                    print(line)
                    for n in r.notes:
                        print(f"     note: {n}")
                elif r.status == "SKIP":
                    if r.why:
                        print(f"SKIP {r.name}: {r.message} (accepted: {r.why})")
                    else:
                        print(f"SKIP {r.name}: {r.message} (UNEXPLAINED: tests/skips.py does not justify it here)")
                        unexplained.append(r.name)
                else:
                    first, *rest = (r.message or "failed").splitlines() or ["failed"]
                    print(f"FAIL {r.name}: {first}")
                    for l in rest[:40] + [f"note: {n}" for n in r.notes]:
                        print(f"     {l}")
                    failures.append(r.name)
            sys.stdout.flush()

    start = time.time()

    def job(name, runner, arg):
        if time.time() - start > args.budget:
            return [Result(name, "FAIL", f"not run: the budget of {args.budget:.0f} s was spent")]
        return runner(name, arg, args.limit)

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.j)) as ex:
            futs = [ex.submit(job, name, runner, arg) for name, runner, arg in jobs]
            for fut in concurrent.futures.as_completed(futs):
                report(fut.result())
    finally:
        server.stop()

    print(f"\n{len(failures)} failed: " + ", ".join(failures) if failures else "")
    if unexplained:
        print(f"{len(unexplained)} skipped without a reason tests/skips.py accepts here: " + ", ".join(unexplained))
    if args.regen_golden:
        print("goldens rewritten (--regen-golden): review `git diff tests/golden tests/unit/profiles`")
    print(f"({time.time() - start:.0f} s)")
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped "
          f"({len(unexplained)} unexplained)")
    return 1 if counts["FAIL"] or unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
