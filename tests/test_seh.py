"""Structured exceptions and longjmp through hooked frames
(tests/targets/seh.c; how a handler is attached with mingw-w64 gcc is
explained there: .seh_handler __C_specific_handler with a scope table,
the way <excpt.h>'s __try1 does it, with a label per use).

Under --time the target's functions run inside wrapper frames. The
handlers must still run in the right frame with the callee-saved
registers intact (the target checks them and prints the result), and
each call that ends by an unwind (RtlUnwindEx from __C_specific_handler,
or msvcrt's longjmp, which unwinds when setjmp recorded a frame) must be
counted as an unwind of exactly that function.
"""
import hs

EXE = "build/tests/seh.exe"

# function: (calls, calls that end by an unwind), from seh.c's main:
#   raise(0x42)   handle_raise -> raiser raises, handled in handle_raise
#   no raise      handle_raise -> raiser returns
#   nested(0x43)  handle_nested -> decline_raise -> raiser; decline_raise's
#                 filter declines, handle_nested handles: two unwinds
#   av            handle_av -> av_mid -> av_leaf writes to 0: two unwinds
#   longjmp(5)    do_longjmp -> lj_a -> lj_b -> lj_c -> longjmp: three unwinds
#   rawjmp        do_raw_longjmp -> rj_a -> rj_b -> longjmp to a _setjmp
#                 without a frame: no unwind at all (see below)
#   loop(100)     loop_raise -> handle_raise x100 -> raiser raises
# filter_execute runs once per handled exception, filter_decline once.
EXPECTED = {
    "main": (1, 0),
    "regs_call": (7, 0),
    "handle_raise": (102, 0),
    "raiser": (103, 102),
    "handle_nested": (1, 0),
    "decline_raise": (1, 1),
    "handle_av": (1, 0),
    "av_mid": (1, 1),
    "av_leaf": (1, 1),
    "do_longjmp": (1, 0),
    "lj_a": (1, 1),
    "lj_b": (1, 1),
    "lj_c": (1, 1),
    "do_raw_longjmp": (1, 0),
    "loop_raise": (1, 0),
    "filter_execute": (103, 0),
    "filter_decline": (1, 0),
}

# A longjmp that does not unwind is seen by nobody: the calls of rj_a and
# rj_b are counted at entry, never end (no return, no unwind), and are not
# open at the end either: do_raw_longjmp's return re-synchronises the
# shadow stack and drops their records. report.txt lists them as not seen
# to end.
VANISHED = {"rj_a": 1, "rj_b": 1}


def check_exact(t):
    funcs = {f["name"]: f for f in t.functions("seh.exe")}
    for name, (calls, unwinds) in EXPECTED.items():
        f = funcs[name]
        hs.check(f["hooked"], f"{name} not hooked: {f['skip_reason']}")
        hs.eq(f["entry_only"], None, f"{name} has the timing wrapper")
        hs.eq(f["calls"], calls, f"calls of {name}")
        hs.eq(f["time"]["calls"], calls, f"exits of {name}")
        hs.eq(f["time"]["open"], 0, f"open calls of {name}")
        hs.eq(f["unwinds"], unwinds, f"unwinds of {name}")
    for name, calls in VANISHED.items():
        f = funcs[name]
        hs.eq(f["entry_only"], None, f"{name} has the timing wrapper")
        hs.eq(f["calls"], calls, f"calls of {name}")
        hs.eq((f["time"]["calls"], f["time"]["open"], f["unwinds"]), (0, 0, 0),
              f"{name}: left by a longjmp without unwinding (exits, open, unwinds)")
    hs.check("2 calls of 2 timed functions were not seen to end" in t.txt and
             "rj_b (1) rj_a (1)" in t.txt, "report.txt names the calls not seen to end")


def plain_run():
    exe = hs.need(EXE)
    plain = hs.wine([exe])
    hs.eq(plain.returncode, 0, "untraced exit code")
    out = plain.stdout.decode()
    for line in ("handled 1, code 0xE0000042", "handled 1, code 0xE0000043",
                 "handled 1, code 0xC0000005", "setjmp returned 7", "_setjmp returned 6",
                 "handled 100 of 100", "filters declined: 1", "all ok"):
        hs.check(line in out, f"untraced output lacks {line!r}: {out}")
    return exe, plain


def test_seh_and_longjmp_through_wrapped_frames():
    exe, plain = plain_run()
    t = hs.trace(exe, options=["--time"], name="seh_time")
    hs.eq(t.rc, 0, "exit code (1 would mean a register check failed)")
    hs.eq(t.stdout, plain.stdout, "stdout")
    check_exact(t)


def test_seh_with_stacks():
    exe, plain = plain_run()
    t = hs.trace(exe, options=["--time", "--stacks=16"], name="seh_time_stacks")
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    check_exact(t)
    captured = {}
    for s in t.json["stacks"]:
        captured[s["function"]] = captured.get(s["function"], 0) + s["count"]
    hs.eq(captured.get("raiser"), 103, "raiser's stacks")
    hs.eq(captured.get("av_leaf"), 1, "av_leaf's stack")
    st = [s for s in t.json["stacks"] if s["function"] == "av_leaf"][0]
    names = [f.split("!")[1].split("+")[0] for f in st["frames"]]
    hs.eq(names[:5], ["av_leaf", "av_mid", "handle_av", "regs_call", "scenario"],
          "av_leaf's entry stack (wrapper frames folded)")


def test_seh_counting_only():
    exe, plain = plain_run()
    t = hs.trace(exe, name="seh_count")
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    calls = t.calls("seh.exe")
    for name, (n, _) in EXPECTED.items():
        hs.eq(calls[name], n, f"calls of {name}")
