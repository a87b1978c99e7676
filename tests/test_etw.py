"""The live ETW layer against a fake of the system's ETW functions
(tests/support/etwtest.c, tests/support/etw_fake.c): the calls and their
order, a private system-logger session of hookscope's own (named with the
interval to put back, its file capped), the machine's sampling interval
read, set and put back on every way out, no foreign session touched,
leftover sessions of hookscopes that are gone stopped, a failed stop
tried again by name, a file at its cap told, context switches and
readies enabled with their stacks, and the trace written at stop decoded
and named, its switches turned into wait and ready samples. Wine has no ETW: the real functions are
exercised only through this fake."""
import hs


def test_etw_layer_against_the_fake():
    exe = hs.need("build/tests/etwtest.exe")
    p = hs.wine([exe], timeout=120)
    out = p.stdout.decode(errors="replace").splitlines()
    cases = [l for l in out if l.startswith("ok - ") or l.startswith("not ok - ")]
    failed = [l for l in cases if l.startswith("not ok")]
    hs.eq(failed, [], "failed cases")
    hs.eq(len(cases), 37, f"cases run: {out}")
    hs.eq(p.returncode, 0, "exit code")
