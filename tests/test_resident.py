"""An agent left in the process is reused by the next attach.

After `attach --time` detaches while a timed call is still running, the
agent stays loaded (the call returns into its wrapper), every patch out.
A later attach must reuse it (a session of its own) instead of failing,
count exactly, and detach; once the old call has returned, the agent
unloads at the next detach. A hookscope still attached is named as such;
the agent of a hookscope that was killed is taken over.

The target is tests/targets/resident.c: "enter" starts a thread inside
held_call() until "release"; "work" calls work() 1000 times."""
import os
import re
import subprocess
import time

import hs

EXE = "build/tests/resident.exe"


def start():
    p = hs.Process([EXE])
    m = re.fullmatch(r"pid (\d+) code-matches 1", p.readline(timeout=30))
    hs.check(m, "the target did not start")
    return p, int(m.group(1))


def attach_bg(pid, options, name):
    out = hs.outdir(name)
    proc = subprocess.Popen([os.path.join(hs.ROOT, "hookscope"), "attach", str(pid), "-q", "-o", out] + options,
                            cwd=hs.ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=hs.env())
    return proc, out


def wait_hooked(p, what, timeout=60):
    """Until the exe's code bytes differ from the file (hooks in)."""
    deadline = time.time() + timeout
    while hs.code_differences(p.proc.pid, EXE, 0x140000000) == 0:
        hs.check(time.time() < deadline, f"{what}: the hooks did not go in within {timeout} s")
        time.sleep(0.1)


def finish(proc, out, what):
    try:
        stdout, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"{what}: hookscope did not finish")
    return hs.Trace(subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), out)


def command(p, cmd, expect):
    p.send(cmd.encode() + b"\n")
    line = p.readline(timeout=60)
    hs.eq(line, expect, f"the target's answer to {cmd}")


def test_resident_agent_is_reused():
    reused(jump=False)


def test_resident_agent_is_reused_and_the_old_call_unwinds():
    """The call open since the first attach leaves by longjmp: the unwind
    through the wrapper frame is recorded in the first session (where the
    frame was entered), so the agent knows no call is open any more."""
    reused(jump=True)


def reused(jump):
    # (the two tests run at once: each has output directories of its own)
    tag = "resident_jump" if jump else "resident"
    hs.need(EXE)
    p, pid = start()
    with p:
        lp = p.proc.pid
        # 1: --time, and a call enters held_call while hooked and stays
        proc, out = attach_bg(pid, ["--time", "--duration", "4"], tag + "_1")
        wait_hooked(p, "attach 1")
        command(p, "enter-jump" if jump else "enter", "entered")
        command(p, "work", "worked")
        t = finish(proc, out, "attach 1")
        hs.eq(t.rc, 0, f"attach 1: exit status ({t.stderr!r})")
        hs.check(any("timed calls were still running" in w for w in t.json["warnings"]),
                 f"attach 1: warnings {t.json['warnings']}")
        hs.eq(t.calls("resident.exe")["work"], 1000, "attach 1: work")
        hs.eq(t.calls("resident.exe")["held_call"], 1, "attach 1: held_call")
        hs.check(hs.agent_mappings(lp), "attach 1: the agent stays loaded")
        hs.eq(hs.code_differences(lp, EXE, 0x140000000), 0, "attach 1: code bytes after the detach")

        # 2: plain; reuses the resident agent
        proc, out = attach_bg(pid, ["--duration", "3"], tag + "_2")
        wait_hooked(p, "attach 2")
        command(p, "work", "worked")
        t = finish(proc, out, "attach 2")
        err = t.stderr.decode(errors="replace")
        hs.eq(t.rc, 0, f"attach 2: exit status ({err!r})")
        hs.check("already has a hookscope session" not in err, f"attach 2: {err!r}")
        hs.eq(t.calls("resident.exe")["work"], 1000, "attach 2: work, counted exactly")
        hs.eq(t.calls("resident.exe").get("held_call", 0), 0, "attach 2: held_call (entered before)")
        hs.check(hs.agent_mappings(lp), "attach 2: the agent stays (the old call is still open)")
        hs.eq(hs.code_differences(lp, EXE, 0x140000000), 0, "attach 2: code bytes after the detach")

        # the call open since attach 1 returns through the agent's wrapper
        p.send(b"release\n")
        hs.eq(p.readline(timeout=60), "returned 8", "held_call's result")

        # 3: no call open any more: the agent unloads at the detach
        t = hs.attach(pid, ["--duration", "1"], name=tag + "_3", timeout=120)
        hs.eq(t.rc, 0, f"attach 3: exit status ({t.stderr!r})")
        hs.eq(t.json["warnings"], [], "attach 3: warnings")
        hs.eq(hs.agent_mappings(lp), [], "attach 3: the agent is unloaded")
        hs.eq(hs.code_differences(lp, EXE, 0x140000000), 0, "attach 3: code bytes")

        command(p, "stop", "bad 0 code-matches 1")
        hs.eq(p.wait(timeout=30), 0, "the target's exit code")


def test_second_hookscope_is_told_who_traces():
    hs.need(EXE)
    p, pid = start()
    with p:
        proc, out = attach_bg(pid, ["--duration", "4"], "resident_first")
        wait_hooked(p, "the first attach")
        second = hs.attach(pid, ["--duration", "1"], name="resident_second", timeout=60)
        err = second.stderr.decode(errors="replace").strip()
        hs.eq(second.rc, 125, f"the second attach's exit status ({err!r})")
        hs.check(re.fullmatch(rf"hookscope: process {pid} is being traced by another hookscope \(process \d+\)",
                              err), f"the second attach's message {err!r}")
        t = finish(proc, out, "the first attach")
        hs.eq(t.rc, 0, "the first attach's exit status")
        command(p, "stop", "bad 0 code-matches 1")


def test_agent_of_a_killed_hookscope_is_taken_over():
    """hookscope is killed while attached: its hooks stay in. The next
    attach takes them out (and the agent with them) and traces. (The
    killed one does not sample: killed while its sampler holds a thread
    suspended, it leaves that thread suspended for good, as any killed
    suspender does; the program then hangs: 1 of 5 fresh-clone runs.)"""
    hs.need(EXE)
    p, pid = start()
    with p:
        lp = p.proc.pid
        proc, out = attach_bg(pid, ["--duration", "60", "--no-sample"], "resident_killed")
        wait_hooked(p, "the attach to be killed")
        proc.kill()
        proc.wait(timeout=30)
        hs.check(hs.code_differences(lp, EXE, 0x140000000) > 0, "the hooks are still in after the kill")
        t = hs.attach(pid, ["--duration", "1"], name="resident_after_kill", timeout=120)
        hs.eq(t.rc, 0, f"exit status ({t.stderr!r})")
        hs.eq(t.json["target"]["stop"], "detach", "stop")
        hs.eq(hs.code_differences(lp, EXE, 0x140000000), 0, "code bytes after the detach")
        hs.eq(hs.agent_mappings(lp), [], "the agent is unloaded")
        command(p, "work", "worked")
        command(p, "stop", "bad 0 code-matches 1")
