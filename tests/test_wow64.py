"""32-bit (i386) programs under Wine's WOW64: the programs of
build/tests32 (tests/targets32, built with the i686 toolchain) run
untraced and print exactly what they say, and what hookscope does with
them today.

Where Wine cannot run 32-bit programs here, the tests that run one skip
with the reason scripts/deps32.sh (make deps) found (hs.need_wow64);
hookscope's answer to a 32-bit target needs only the 64-bit side."""
import os

import hs


def stated_output(source):
    """The lines a target's header comment gives under "Output (exact"."""
    lines, inside = [], False
    with open(os.path.join(hs.ROOT, source)) as f:
        for line in f:
            if "Output (exact" in line:
                inside = True
            elif inside:
                text = line.strip()
                if text in ("*", "*/"):
                    break
                lines.append(text[1:].strip())
    hs.check(lines, f"{source} states no output")
    return lines


def out_lines(p):
    return p.stdout.decode(errors="replace").replace("\r\n", "\n").splitlines()


def test_wow64_programs_run_untraced():
    """callconv.exe (a function of each x86 calling convention) prints what
    its header states; the ground-truth fixture's program built for i686
    prints what its x86-64 build prints."""
    hs.need_wow64()
    exe = hs.need(f"{hs.TARGETS32}/callconv.exe")
    p = hs.wine([exe])
    hs.eq(p.returncode, 0, "exit code of callconv.exe")
    hs.eq(out_lines(p), stated_output("tests/targets32/callconv.c"), "output of callconv.exe")

    fx = hs.fixture("groundtruth")
    cwd = os.path.join(hs.ROOT, fx["cwd"])
    p64 = hs.wine([fx["program"]] + fx["args"], cwd=cwd)
    p32 = hs.wine([os.path.relpath(os.path.join(hs.ROOT, hs.need(f"{hs.TARGETS32}/groundtruth.exe")), cwd)]
                  + fx["args"], cwd=cwd)
    hs.eq((p32.returncode, p64.returncode), (fx["exit_code"], fx["exit_code"]), "exit codes (i686, x86-64)")
    hs.check(out_lines(p64), "the x86-64 ground-truth program printed nothing")
    hs.eq(out_lines(p32), out_lines(p64), "the i686 ground-truth program's output against the x86-64 one's")


def test_wow64_run_refused():
    """`hookscope run` refuses a 32-bit program before starting it: exit
    125 and one line saying so (hookscope.exe reads the image's headers,
    so no 32-bit Wine is needed for this)."""
    exe = hs.need(f"{hs.TARGETS32}/callconv.exe")
    p = hs.hookscope(["run", "-o", hs.outdir("wow64_refused"), "--", exe])
    hs.eq(p.returncode, 125, "exit code")
    lines = [l for l in p.stderr.decode(errors="replace").splitlines() if l.strip()]
    hs.eq(lines, [f"hookscope: '{exe}': 32-bit targets are not supported yet"], "stderr")
    hs.eq(p.stdout, b"", "stdout")
