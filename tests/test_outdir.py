"""The output directory: a run leaves exactly its own outputs (files of an
earlier run into the same directory are removed, foreign files stay), two
runs cannot write into one directory at once, and `report DIR` writes a
run's files again byte for byte."""
import os
import shutil
import subprocess
import time

import hs


def listing(out):
    return sorted(os.listdir(os.path.join(hs.ROOT, out)))


def test_rerun_leaves_only_its_own_files():
    exe = hs.need("build/examples/demo.exe")
    out = hs.outdir("rerun")
    os.makedirs(os.path.join(hs.ROOT, out))
    with open(os.path.join(hs.ROOT, out, "notes.txt"), "w") as f:
        f.write("mine\n")
    p = hs.hookscope(["run", "-q", "-o", out, "--time", "--stacks=4", "--", exe])
    hs.eq(p.returncode, 0, "first run")
    hs.eq(listing(out), ["callgrind.out", "cpu-stacks.folded", "entry-stacks.folded", "entry-time.folded",
                         "flamegraph.svg", "hookscope-stacks.folded", "notes.txt", "profile.firefox.json",
                         "profile.pb.gz", "profile.speedscope.json", "ready-stacks.folded", "report.json", "report.txt",
                         "wait-stacks.folded"],
          "files of a run with --time --stacks (and samples)")
    p = hs.hookscope(["run", "-q", "-o", out, "--no-edges", "--no-sample", "--", exe])
    hs.eq(p.returncode, 0, "second run")
    hs.eq(listing(out), ["notes.txt", "profile.pb.gz", "report.json", "report.txt"],
          "files after a run without stacks, edges or samples")
    t = hs.Trace(p, out)
    hs.eq(t.json["options"]["stacks"], None, "report.json is the second run's")


def test_two_runs_into_one_directory():
    loop = hs.need("build/tests/loop.exe")
    exe = hs.need("build/tests/echo.exe")
    out = hs.outdir("locked")
    first = subprocess.Popen([os.path.join(hs.ROOT, "hookscope"), "run", "-q", "-d", "4", "-o", out, "--", loop],
                             cwd=hs.ROOT, env=hs.env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        lock = os.path.join(hs.ROOT, out, ".hookscope.lock")
        deadline = time.time() + 30
        while not os.path.exists(lock) and time.time() < deadline:
            time.sleep(0.05)
        hs.check(os.path.exists(lock), "the first run holds its lock")
        p = hs.hookscope(["run", "-o", out, "--", exe, "a"])
        hs.eq(p.returncode, 125, "the second run is refused")
        hs.eq(p.stdout, b"", "its target never ran")
        lines = p.stderr.decode().splitlines()
        hs.eq(len(lines), 1, f"one line: {lines}")
        hs.check(lines[0].startswith(f"hookscope: output directory {out} is in use by another hookscope run (pid ")
                 and lines[0].endswith("); choose another with -o"), lines[0])
        hs.eq(first.wait(timeout=60), 0, "the first run ends after --duration")
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    # the lock goes with the run that held it
    p = hs.hookscope(["run", "-q", "-o", out, "--", exe, "a"])
    hs.eq(p.returncode, 0, "a run after the first ended")
    hs.check(".hookscope.lock" not in listing(out), "no lock file left behind")


def run_and_report(name, opts, prog):
    out = hs.outdir("saved-" + name)
    p = hs.hookscope(["run", "-q", "-o", out] + opts + ["--"] + prog)
    hs.eq(p.returncode, 0, f"{name}: run ({p.stderr.decode(errors='replace')})")
    again = hs.outdir("again-" + name)
    shutil.copy(os.path.join(hs.ROOT, out, "report.json"), os.path.join(hs.ROOT, hs.OUT, "report-" + name + ".json"))
    p = hs.hookscope(["report", "-q", "-o", again, out])
    hs.eq(p.returncode, 0, f"{name}: report ({p.stderr.decode(errors='replace')})")
    hs.eq(listing(again), listing(out), f"{name}: the same files")
    for f in listing(out):
        a = open(os.path.join(hs.ROOT, out, f), "rb").read()
        b = open(os.path.join(hs.ROOT, again, f), "rb").read()
        hs.check(a == b, f"{name}: {f} written again differs")


def test_report_writes_a_run_again_byte_for_byte():
    run_and_report("stacks", ["--stacks=6", "--stack-every", "2"], [hs.need("build/examples/demo.exe")])
    run_and_report("lateload", ["-m", "lateload.exe", "-m", "latedll.dll", "--stacks=3"],
                   [hs.need("build/tests/lateload.exe")])


def test_report_writes_a_timed_run_again_byte_for_byte():
    run_and_report("time", ["--time", "--stacks=8"], [hs.need("build/tests/cxxexc.exe")])


def test_report_errors():
    out = hs.outdir("report-errors")
    os.makedirs(os.path.join(hs.ROOT, out))
    p = hs.hookscope(["report", out])
    hs.eq(p.returncode, 125, "no report.json")
    hs.check(p.stderr.decode().startswith(f"hookscope: cannot read {out}/report.json: "), p.stderr.decode())
    # a printed path keeps the separator style it was given in
    back = out.replace("/", "\\")
    p = hs.hookscope(["report", back + "\\"])
    hs.check(p.stderr.decode().startswith(f"hookscope: cannot read {back}\\report.json: "), p.stderr.decode())
    with open(os.path.join(hs.ROOT, out, "report.json"), "w") as f:
        f.write('{"version": 1,\n "tool": [')
    p = hs.hookscope(["report", out])
    hs.eq(p.returncode, 125, "broken report.json")
    hs.eq(p.stderr.decode().strip(), f"hookscope: {out}/report.json: not valid JSON: line 2 column 11: "
          "unexpected end of the text")
