"""When the threads of a process cannot all be stopped to put the hooks
in, attach fails within a bounded time with one clear line, and leaves
the process as it was: no patch, no thread left suspended, the agent
unloaded.

A real cause (under Wine: a thread being created whose creator stays
suspended) cannot be produced on demand, so the environment variable
HOOKSCOPE_TEST_STUCK_FREEZE=1 makes the freeze that puts the modules'
hooks in behave as if one thread never stopped: every round is undone
and tried again until the budget (10 s) is spent, as for a real one.
The target is threadstorm.exe, whose threads are created and end all the
time and which counts the progress of every kind of thread."""
import os
import re
import subprocess
import time

import hs
import storm


def test_attach_fails_cleanly_when_threads_cannot_be_stopped():
    p, pid = storm.start()
    with p:
        lp = p.proc.pid
        env = dict(hs.env(), HOOKSCOPE_TEST_STUCK_FREEZE="1")
        t0 = time.time()
        r = subprocess.run([os.path.join(hs.ROOT, "hookscope"), "attach", str(pid), "-o",
                            hs.outdir("attach_stuck"), "--duration", "1"],
                           cwd=hs.ROOT, capture_output=True, env=env, timeout=180)
        took = time.time() - t0
        err = [l for l in r.stderr.decode(errors="replace").splitlines() if l.strip()]
        hs.eq(r.returncode, 125, f"exit status ({err})")
        hs.eq(len(err), 1, f"one line: {err}")
        hs.check(re.fullmatch(r"hookscope: the agent failed: could not stop the target's threads within 10000 ms "
                              r"\(\d+ tries; thread \d+ never stopped\)", err[0]), f"the line: {err[0]!r}")
        hs.check(took < 60, f"attach took {took:.0f} s to fail")
        hs.eq(hs.agent_mappings(lp), [], "the agent is unloaded")
        hs.eq(hs.code_differences(lp, storm.EXE, 0x140000000), 0, "code bytes")
        storm.check_intact(p, "after the failed attach")
        # and the next attach works
        t = hs.attach(pid, ["--duration", "1"], name="attach_after_stuck", timeout=120)
        hs.eq(t.rc, 0, f"the next attach ({t.stderr!r})")
        hs.eq(hs.agent_mappings(lp), [], "the agent is unloaded after the next attach")
        storm.stop(p)
