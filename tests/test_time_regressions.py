"""Regression tests for four bugs of the timing wrapper (--time), found by
the issue 4 tests and fixed in the agent:

  time_dropped: calls that went untimed because a thread's shadow stack
      was full are counted (wrapper.S, .Lshadow_full).
  tail_call_edges: a function reached by a tail jump from a timed function
      sees the wrapper's return address; its caller is taken from the
      wrapper's frame, so --time does not change edges (stubs.c, probes.c).
  stack_depth: the wrapper's frames, folded out of every report, do not
      count against --stacks=DEPTH (probes.c, walk).
  attach_time_detach: a detach while a timed call is still running keeps
      the agent loaded (inactive, every hook out) instead of unloading code
      that the call returns into.
"""
import os

import hs


def test_time_dropped_is_never_counted():
    """deeprec 100000 on a thread with a 512 MB stack: 100001 nested calls
    of depth_sum, more than a shadow stack holds (65536 records, one taken
    by the thread's start routine). Every call is either timed (an exit)
    or counted in time_dropped."""
    exe = hs.need("build/tests/deeprec.exe")
    t = hs.trace(exe, ["100000", "thread"], options=["--time"], name="bug_time_dropped")
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, b"depth_sum(100000) = 5000050000\r\n", "stdout")
    f = [f for f in t.functions("deeprec.exe") if f["name"] == "depth_sum"][0]
    hs.eq(f["calls"], 100001, "calls")
    timed = f["time"]["calls"]
    hs.check(timed < 100001, f"the shadow stack overflowed ({timed} calls timed)")
    hs.eq(t.json["time_dropped"], 100001 - timed,
          f"time_dropped ({timed} of 100001 calls timed, the rest went untimed)")


def test_tail_call_edges_under_time():
    """tailcall.exe: tail() tail-jumps to callee(); main calls tail 3 times
    and callee once. Without --time the edges are main -> tail 3 and
    main -> callee 4 (callee returns straight into main), as
    -finstrument-functions would say. --time must not change edges."""
    exe = hs.need("build/tests/tailcall.exe")
    plain = hs.trace(exe, name="bug_tail_count")
    timed = hs.trace(exe, options=["--time"], name="bug_tail_time")
    hs.eq((plain.rc, timed.rc), (0, 0), "exit codes")

    def edges(t):
        return sorted((e["caller"], e["callee"], e["calls"]) for e in t.json["edges"]
                      if e["callee"] in ("tail", "callee"))

    hs.eq(edges(plain), [("main", "callee", 4), ("main", "tail", 3)], "edges without --time")
    hs.eq(edges(timed), edges(plain), "edges with --time")


def test_stack_depth_counts_wrapper_frames():
    """folded.exe with --stacks=6: leaf's stack under top and mid has more
    than 6 frames, so it is cut at 6 - with or without --time alike."""
    exe = hs.need("build/tests/folded.exe")
    plain = hs.trace(exe, options=["--stacks=6"], name="bug_depth")
    timed = hs.trace(exe, options=["--stacks=6", "--time"], name="bug_depth_time")
    hs.eq((plain.rc, timed.rc), (0, 0), "exit codes")

    def leaf_stacks(t):
        return sorted(s["frames"] for s in t.json["stacks"] if s["function"] == "leaf")

    p, q = leaf_stacks(plain), leaf_stacks(timed)
    hs.check(len(p) == 6 and all(len(f) == 6 for f in p), f"six stacks of 6 frames without --time: {p}")
    hs.eq([len(f) for f in q], [len(f) for f in p], "frames in each of leaf's stacks with --time")
    hs.eq(q, p, "leaf's stacks with --time")


def test_attach_time_detach_crashes_target():
    """napper.exe sleeps 50 ms in napper() (called by outer()) for about 4 s.
    Attach with --time for 1 s and detach: the target must go on and print
    "done"."""
    exe = hs.need("build/tests/napper.exe")
    with hs.Process([exe]) as target:
        first = target.readline(timeout=30).split()
        hs.check(first[:1] == ["pid"], f"napper printed {first}")
        out = hs.outdir("bug_attach_time")
        a = hs.hookscope(["attach", first[1], "--time", "-d", "1", "-q", "-o", out], timeout=120)
        hs.eq(a.returncode, 0, "hookscope attach exit status: " + a.stderr.decode(errors="replace"))
        rest = target.rest(timeout=60)
        err = b"".join(target.err)
    hs.check(any("done" in line for line in rest), "the target did not finish after the detach: " +
             err.decode(errors="replace")[:300].replace(os.linesep, " | "))
