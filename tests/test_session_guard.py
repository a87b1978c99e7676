"""The session boundary: no other process can find or take the session,
and a target that scribbles over its session cannot hurt hookscope.

- While a run is live, no object of this Windows session has a name with
  "hookscope" in it, and the names hookscope once gave the session and its
  events do not open (tests/targets/objprobe.c lists the session's named
  objects, after checking that it lists one of its own).
- Those names taken first by another process (a squatter) do not stop an
  attach: the session has no name to collide with.
- tests/targets/scribble.c overwrites its own session with random and
  adversarial values, at random moments and at its end (also when it
  crashes): over many runs and thousands of scribbles, with and without
  --time, --stacks and --timeline (its rings drained while the target
  scribbles on them), by run and by attach (scribbling on through the
  detach), hookscope never faults or hangs, writes its reports, writes
  nothing outside its output directory, and says in one line that the
  session was corrupted whenever the last scribble came.
"""
import json
import os
import re
import shutil
import subprocess
import time

import hs

SCRIBBLE = "build/tests/scribble.exe"
PROBE = "build/tests/objprobe.exe"
OUTPUTS = {"report.txt", "report.json", "cpu-stacks.folded", "wait-stacks.folded", "entry-stacks.folded",
           "entry-time.folded", "flamegraph.svg", "profile.speedscope.json", "callgrind.out",
           "ready-stacks.folded", "hookscope-stacks.folded", "profile.pb.gz", "trace.json", "timeline.bin",
           "profile.firefox.json"}
LINE = "hookscope: session corrupted by the target: "


def probe(target):
    p = hs.wine([hs.need(PROBE), "list", target], timeout=60)
    out = p.stdout.decode(errors="replace").replace("\r\n", "\n")
    hs.check(p.returncode == 0 and "named-count" in out, f"objprobe list: {out!r}")
    return out


def test_session_has_no_name():
    loop = hs.need("build/tests/loop.exe")
    out = hs.outdir("guard-noname")
    run = subprocess.Popen([os.path.join(hs.ROOT, "hookscope"), "run", "-q", "-d", "8", "-o", out, "--", loop],
                           cwd=hs.ROOT, env=hs.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    try:
        hs.eq(run.stdout.readline().decode().strip(), "looping", "the target runs, hooked")
        seen = probe("loop.exe")
    finally:
        run.wait(timeout=120)
    hs.eq(run.returncode, 0, f"the run ({run.stderr.read().decode(errors='replace')})")
    hs.check(re.search(r"^pid [1-9]\d*$", seen, re.M), f"the target's pid was found: {seen!r}")
    hs.check("named-count 0" in seen, f"no named object of hookscope's: {seen!r}")
    for what in ("session", "fnreq", "fnans"):
        hs.check(re.search(rf"^open Local\\hookscope-{what}-\d+ no$", seen, re.M), f"{what} does not open: {seen!r}")
    t = hs.Trace(subprocess.CompletedProcess([], 0, b"", b""), out)
    hs.check(t.json["total_calls"] > 0, "the agent counted with the session it was handed")


def test_squatted_names_do_not_stop_attach():
    with hs.Process([hs.need("build/tests/resident.exe")]) as target:
        m = re.fullmatch(r"pid (\d+) code-matches 1", target.readline(timeout=30))
        hs.check(m, "the target did not start")
        pid = m.group(1)
        with hs.Process([hs.need(PROBE), "squat", pid]) as squatter:
            hs.eq(squatter.readline(timeout=30), f"pid {pid}", "the squatter's target")
            hs.eq(squatter.readline(timeout=30), "squatting", "the old names are taken")
            target.send(b"work\n")
            t = hs.attach(pid, ["-d", "3", "--no-sample"], name="guard-squat")
            hs.eq(t.proc.returncode, 0, f"attach ({t.proc.stderr.decode(errors='replace')})")
            hs.check(t.json["total_calls"] >= 0 and t.json["modules"], "the attach hooked and reported")


def check_scribbled(p, cwd, stdout, what):
    """One scribbled run's outcome (p: CompletedProcess of hookscope)."""
    err = p.stderr.decode(errors="replace").replace("\r\n", "\n")
    out = os.path.join(cwd, "out")
    hs.eq(sorted(os.listdir(cwd)), ["out"], f"{what}: nothing written beside the output directory "
          f"(exit {p.returncode}, stderr {err[-1500:]!r})")
    files = set(os.listdir(out))
    hs.check(files <= OUTPUTS and {"report.txt", "report.json"} <= files,
             f"{what}: the output directory holds the reports and nothing else: {sorted(files)}")
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    hs.check(re.search(r"^hookscope: .*report in out\\report\.txt$", err, re.M),
             f"{what}: hookscope ran to its end: {err[-600:]!r}")
    hs.check(not re.search(r"\(D\) .*hookscope\.exe", err), f"{what}: hookscope itself crashed: {err[-2000:]!r}")
    lines = [ln for ln in err.splitlines() if ln.startswith(LINE)]
    if "blow" in stdout:
        hs.eq(len(lines), 1, f"{what}: one line names the corruption: {err[-1500:]!r}")
        hs.check(lines[0][len("hookscope: "):] in report["warnings"], f"{what}: the report has the line too")
    else:
        hs.check(len(lines) <= 1, f"{what}: at most one line: {lines}")


def test_scribbling_target_run():
    exe = os.path.join(hs.ROOT, hs.need(SCRIBBLE))
    variants = [[], ["--time"], ["--stacks=8"], ["--time", "--stacks=4", "--stack-every", "2"], ["--no-sample"],
                ["--timeline", "--timeline-buffer", "64"]]
    blown = 0
    runs = 18
    for seed in range(1, runs + 1):
        cwd = os.path.join(hs.OUT, f"guard-scribble-{seed}")
        shutil.rmtree(cwd, ignore_errors=True)
        os.makedirs(cwd)
        opts = variants[seed % len(variants)]
        start = time.time()
        try:
            p = hs.hookscope(["run", "-o", "out", "-d", "30"] + opts + ["--", exe, str(seed), "1500"], cwd=cwd,
                             timeout=120)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"seed {seed}: hookscope did not finish within 120 s")
        stdout = p.stdout.decode(errors="replace")
        check_scribbled(p, cwd, stdout, f"seed {seed} {' '.join(opts)}")
        blown += "blow" in stdout
        hs.check(time.time() - start < 60, f"seed {seed}: took {time.time() - start:.0f} s")
    hs.check(blown >= runs // 2, f"the last scribble came in {blown} of {runs} runs only")


def test_scribbling_target_attach():
    exe = hs.need(SCRIBBLE)
    for seed in (101, 102):
        cwd = os.path.join(hs.OUT, f"guard-scribble-attach-{seed}")
        shutil.rmtree(cwd, ignore_errors=True)
        os.makedirs(cwd)
        with hs.Process([exe, str(seed), "0", "wait"]) as target:
            m = re.fullmatch(r"ready (\d+)", target.readline(timeout=30))
            hs.check(m, "the target did not start")
            try:
                # -v: where it stood, should it not finish (it once waited forever in VirtualFreeEx:
                # Wine's cross-process calls wait on the target's threads; test_remote_bound)
                p = hs.hookscope(["attach", m.group(1), "-o", "out", "-d", "3", "--stacks=8", "-v"], cwd=cwd, timeout=180)
            except subprocess.TimeoutExpired as e:
                said = (e.stderr or b"").decode(errors="replace").replace("\r\n", "\n")
                raise AssertionError(f"seed {seed}: hookscope attach did not finish within 180 s; its -v lines: "
                                     f"{said[-3000:]!r}")
            # it scribbled through the attach and the detach; still alive or crashed, either is its own business
            err = p.stderr.decode(errors="replace").replace("\r\n", "\n")
            out = os.path.join(cwd, "out")
            hs.eq(sorted(os.listdir(cwd)), ["out"], f"seed {seed}: nothing beside the output directory")
            hs.check(set(os.listdir(out)) <= OUTPUTS and "report.json" in os.listdir(out),
                     f"seed {seed}: the reports, nothing else: {sorted(os.listdir(out))} {err[-800:]!r}")
            with open(os.path.join(out, "report.json")) as f:
                json.load(f)
            hs.check(not re.search(r"\(D\) .*hookscope\.exe", err), f"seed {seed}: hookscope crashed: {err[-2000:]!r}")
            hs.check(len([ln for ln in err.splitlines() if ln.startswith(LINE)]) <= 1,
                     f"seed {seed}: at most one corruption line")
