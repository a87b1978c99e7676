"""Hooks go in and out 1000 times while two threads call the hooked
function (tests/targets/stress.c, which drives the agent's exports itself):
every phase's count is exact and every result right."""
import re

import hs

CYCLES = 1000


def test_stress_unhook_rehook_1000_cycles():
    exe = hs.need("build/tests/stress.exe")
    hs.need("build/bin/hookscope-agent.dll")
    p = hs.wine([exe, "build\\bin\\hookscope-agent.dll", str(CYCLES)], timeout=300)
    out = p.stdout.decode(errors="replace").strip()
    err = p.stderr.decode(errors="replace").strip()
    m = re.fullmatch(r"cycles (\d+) exact (\d+) empty (\d+) bad (\d+) bad_delta (\d+) calls (\d+) "
                     r"counted (\d+) freezes (\d+) moved (\d+)", out)
    hs.check(m, f"unexpected output {out!r}; stderr {err!r}")
    cycles, exact, empty, bad, bad_delta, calls, counted, freezes, moved = map(int, m.groups())
    hs.eq(cycles, CYCLES, "cycles")
    hs.eq(exact, CYCLES, f"phases whose count was exact (stderr: {err[:500]!r})")
    hs.eq(bad, 0, "wrong results")
    hs.eq(bad_delta, 0, "calls counted more than once")
    # freezes: one to put in the detours that watch how the process ends,
    # one to install the exe's hooks, an unhook and a rehook per cycle, and
    # the final unhook
    hs.eq(freezes, 1 + 1 + 2 * CYCLES + 1, "freezes")
    hs.check(0 < counted < calls, f"counted {counted} of {calls} calls")
    hs.check(empty < CYCLES, f"no call was counted in {empty} of {CYCLES} phases")
    # a worker stopped inside a patched window is moved (to the trampoline,
    # or back): measured 33-37 times in the 2 x 2001 thread-freezes (each
    # about 1%, so none in all of them has odds below 1e-15); at most both
    # workers in every freeze
    hs.check(0 < moved <= 2 * freezes, f"threads moved out of a patched window: {moved} in {freezes} freezes")
    hs.eq(err, "", "stderr (a phase that is not exact prints a line)")
    hs.eq(p.returncode, 0, "exit code")
