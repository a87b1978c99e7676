"""hook/base/remote_win.c: a call that acts inside another process
(VirtualAllocEx, VirtualFreeEx, VirtualQueryEx, CreateRemoteThread) is
bounded by the target's end and a time limit. Under Wine such a call is
carried out by one of the target's threads and its caller waits for it
without a limit: hookscope attaching to a target that crashed at that
moment (test_session_guard's scribbling target) waited in VirtualFreeEx
forever, about once in sixty attaches.

tests/targets/remotebound.c drives it with a call that never returns: it is
given up on when the target ends and when the limit passes, its late
results are dropped (not written into the caller's arguments), and the
real calls answer as the Windows calls do (a region allocated, seen by
VirtualQueryEx, freed; a remote thread's exit code), and fail at once on a
target that has ended."""
import hs

EXE = "build/tests/remotebound.exe"
CASES = ["returned", "target-ended", "timed-out", "late-dropped", "alloc-query", "free", "free-error", "thread",
         "ended"]


def test_remote_calls_are_bounded():
    r = hs.wine([hs.need(EXE)], timeout=180)
    out = r.stdout.decode(errors="replace").replace("\r\n", "\n")
    lines = out.splitlines()
    hs.eq(lines, [f"ok {c}" for c in CASES] + ["done 0 failed"], f"remotebound (exit {r.returncode})")
    hs.eq(r.returncode, 0, "remotebound exit status")
