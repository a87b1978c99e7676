"""32-bit programs held against their ground truth: the fixtures with
-finstrument-functions twins built for i686 (build/fixtures32/, the runs
named NAME32 in tests/fixtures/fixtures.json) traced by the 32-bit agent
behave exactly as untraced (stdout byte for byte, the exit code), at
least 97% of the module's functions are hooked, the same ones
`hookscope functions` calls hookable in the file, and every instrumented
function hooked has the twin's calls (test_groundtruth's comparison) and
the twin's caller edges (test_edges_stacks's)."""
import os

import hs
import test_edges_stacks as edges
import test_groundtruth as truth
import test_real_programs as real


def traced_like_untraced(name, options=("--no-sample",)):
    """Run fixture `name` untraced and traced; the output and exit code
    are the same, and the module is hooked as `functions` says."""
    hs.need_wow64()
    fx = hs.fixture(name)
    cwd = os.path.join(hs.ROOT, fx["cwd"])
    stdin = real.read_stdin(fx)
    plain = hs.wine([fx["program"]] + fx["args"], input=stdin, cwd=cwd, timeout=300)
    hs.eq(plain.returncode, fx["exit_code"], "untraced exit code")
    with open(os.path.join(hs.ROOT, fx["expected_stdout"]), "rb") as f:
        hs.eq(plain.stdout.replace(b"\r\n", b"\n"), f.read(), "untraced stdout against the expected")
    t = hs.trace(fx["program"], fx["args"], modules=[fx["module"]], options=options, name=f"truth_{name}",
                 input=stdin, cwd=fx["cwd"], timeout=600)
    hs.eq((t.rc, t.stdout), (plain.returncode, plain.stdout), "exit code and stdout, traced")
    real.check_module(t, fx["module"])
    return fx, t


def counts_and_edges(fx, t):
    """Calls of every instrumented function, and the caller edges into
    them, exactly as the twin counted them; returns (hooked, instrumented,
    never called, edges compared)."""
    hooked, own, never = truth.compare(fx, t)
    want, keep, mod = edges.truth_edges(fx, t)
    hs.eq(t.json["edges_lost"], 0, "edges lost")
    got = edges.hs_edges(t, mod, keep)
    # a loop whose head is the entry counts each turn, on the edge of the
    # call that entered it: at least the calls there (as compare() counts)
    loops = hs.loops_to_entry(fx)
    d = [(k, w, g) for k, w, g in edges.diff(want, got)
         if k[1] not in loops or w is None or g is None or g < w]
    hs.check(not d, f"{len(d)} of {len(want)} edges differ ((caller, callee), truth, hookscope): {d[:20]}")
    return hooked, own, never, len(want)


def test_wow64_groundtruth_counts_equal_instrumented_build():
    fx, t = traced_like_untraced("groundtruth32")
    hooked, own, never, n = counts_and_edges(fx, t)
    # groundtruth.c's 36 and mingw's inline printf wrapper, all hooked
    hs.eq((hooked, own), (37, 37), "instrumented functions hooked, of those there are")
    hs.check(never >= 1 and n > 30, f"{never} never called, {n} edges compared")


def held_to_truth(name, own_min, never_min, edges_min):
    """traced_like_untraced, then counts_and_edges, on a program large
    enough: at least own_min instrumented functions, never_min of them
    never called by the run, edges_min caller edges compared."""
    fx, t = traced_like_untraced(name)
    hooked, own, never, n = counts_and_edges(fx, t)
    hs.check(own >= own_min and never >= never_min and n >= edges_min,
             f"{name}: {own} instrumented functions, {never} never called, {n} edges")
    return t


def test_wow64_lua_counts_equal_instrumented_build():
    held_to_truth("lua-workload32", 500, 100, 1000)


def test_wow64_lua_exit_code_and_counts():
    """lua's os.exit(3) from a script: the exit code passes through, and
    the calls up to the exit are the twin's (its counts written inside
    exit())."""
    hs.eq(held_to_truth("lua-exit3-32", 500, 100, 100).rc, 3, "exit code")


def test_wow64_sqlite_counts_equal_instrumented_build():
    held_to_truth("sqlite-counts32", 1000, 500, 1000)


def test_wow64_zstd_counts_equal_instrumented_build():
    """zstd's DLL (-O2, count-preserving flags), loaded by zstdwork.exe
    and hooked with -m: the calls of its functions and their caller edges
    as its -finstrument-functions twin counted them (written when that DLL
    is unloaded at exit)."""
    held_to_truth("zstd-counts32", 1000, 100, 500)
