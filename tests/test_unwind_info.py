"""Unwind information for hookscope's generated code: a fault inside a
hooked function's relocated prologue (in its trampoline, after a push)
is unwound like in the original: the next frame is the caller."""
import hs


def test_fault_in_trampoline_unwinds_to_caller():
    exe = hs.need("build/tests/trampfault.exe")
    plain = hs.wine([exe])
    hs.eq(plain.stdout, b"faults 3 next-frame-is-caller 3 walks-reached-main 3 sum 129\r\n", "untraced")
    for opts, name in (([], "trampfault"), (["--no-edges"], "trampfault_plain")):
        t = hs.trace(exe, options=opts, name=name)
        hs.eq(t.stdout, plain.stdout, f"stdout with {opts}")
        f = [f for f in t.functions() if f["name"] == "deref_after_push"][0]
        hs.check(f["hooked"], "deref_after_push is hooked")
        hs.eq(f["calls"], 3, "calls")
