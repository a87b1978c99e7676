"""Ctrl+C (SIGINT to the process group, as a terminal sends it): the
report is still written, never a hang."""
import json
import os
import signal
import subprocess
import time

import hs


def interrupted_run(args, name, wait=3.0):
    out = hs.outdir(name)
    p = subprocess.Popen([os.path.join(hs.ROOT, "hookscope"), "run", "-q", "-o", out, "--"] + args,
                         cwd=hs.ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=hs.env(),
                         start_new_session=True)
    time.sleep(wait)
    t0 = time.time()
    os.killpg(p.pid, signal.SIGINT)
    try:
        stdout, stderr = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        raise AssertionError("hookscope did not end after Ctrl+C")
    took = time.time() - t0
    with open(os.path.join(hs.ROOT, out, "report.json"), encoding="utf-8") as f:
        return p.returncode, stdout, stderr, json.load(f), took


def tick_calls(j):
    return [f["calls"] for f in j["functions"] if f["name"] == "tick"][0]


def test_ctrl_c_target_exits():
    exe = hs.need("build/tests/loop.exe")
    rc, out, err, j, took = interrupted_run([exe], "ctrlc_exit")
    # the target and hookscope get the Ctrl+C at the same time: the target
    # may be gone before hookscope's own handler has run
    hs.check(j["target"]["stop"] in ("interrupt", "exit"), f"stop: {j['target']['stop']}")
    hs.eq(rc, j["target"]["exit_code"] & 0xFF, "hookscope exits with the target's code")
    hs.check(took < 10, f"took {took:.1f} s")
    hs.check(tick_calls(j) >= 1000, "tick counted")
    hs.eq(out, b"looping\r\n", "stdout")


def test_ctrl_c_target_ignores_it():
    """The target ignores Ctrl+C: hookscope ends it after 2 s."""
    exe = hs.need("build/tests/loop.exe")
    rc, out, err, j, took = interrupted_run([exe, "ignore"], "ctrlc_ignore")
    hs.eq(j["target"]["stop"], "interrupt", "stop")
    hs.eq(j["target"]["exit_code"], 0xC000013A, "terminated as by Ctrl+C")
    hs.eq(rc, 0x3A, "exit status")
    hs.check(1.5 < took < 10, f"took {took:.1f} s (should wait ~2 s for the target)")
    hs.check(tick_calls(j) >= 1000, "tick counted")


def test_ctrl_c_detaches_attach():
    exe = hs.need("build/tests/attachee.exe")
    with hs.Process([exe], new_session=True) as target:
        pid = target.readline(timeout=30).split()[1]
        out = hs.outdir("ctrlc_attach")
        p = subprocess.Popen([os.path.join(hs.ROOT, "hookscope"), "attach", pid, "-q", "-o", out],
                             cwd=hs.ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=hs.env(),
                             start_new_session=True)
        time.sleep(3)
        os.killpg(p.pid, signal.SIGINT)
        try:
            p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            raise AssertionError("attach did not end after Ctrl+C")
        hs.eq(p.returncode, 0, "exit status")
        with open(os.path.join(hs.ROOT, out, "report.json"), encoding="utf-8") as f:
            j = json.load(f)
        hs.eq(j["target"]["stop"], "detach", "stop")
        work = [f["calls"] for f in j["functions"] if f["name"] == "work"][0]
        hs.check(work > 0, "work counted")
        target.send(b"done\n")
        line = target.readline(timeout=30).split()
        hs.eq(line[0:2], ["bad", "0"], "every result right")
        hs.eq(line[-2:], ["code-matches", "1"], "code bytes restored")
        hs.check(int(line[3]) >= work, "no more calls counted than made")
        hs.eq(target.wait(timeout=30), 0, "the target's exit code")
