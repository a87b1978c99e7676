"""Call counts against ground truth: the same program built with
-finstrument-functions and a counting runtime (tests/support)."""
import hs


def compare(fx, t):
    """Every instrumented function (the twin's functions that call the
    counting runtime, read from its code) is found by hookscope, and each
    one hooked has the instrumented build's count: the calls it counted,
    or 0 for a function the run never called (a function whose body jumps
    back to its entry, read from the plain build's code: at least that)."""
    truth, _ = hs.cyg_counts(fx)
    hs.check(truth, "the instrumented build wrote no counts")
    instr = hs.instrumented_functions(fx)
    hs.eq(sorted(set(truth) - instr), [], "counted functions that are not instrumented (the listing is wrong)")
    got = t.calls(fx["module"])
    all_funcs = {f["name"]: f for f in t.functions(fx["module"])}
    missing = sorted(instr - set(all_funcs))
    hs.check(not missing, f"instrumented functions hookscope did not find: {missing[:20]}")
    hooked = sorted(n for n in instr if all_funcs[n]["hooked"])
    hs.check(len(hooked) >= 0.95 * len(instr),
             f"only {len(hooked)} of {len(instr)} instrumented functions hooked: "
             f"{[(n, all_funcs[n]['skip_reason']) for n in instr if not all_funcs[n]['hooked']][:20]}")
    # a loop whose head is the entry is counted per turn (README): at least
    # the calls, and none when never called
    loops = hs.loops_to_entry(fx)
    wrong = [(n, got.get(n, 0), truth.get(n, 0)) for n in hooked
             if (got.get(n, 0) != truth.get(n, 0) if n not in loops
                 else got.get(n, 0) < truth.get(n, 0) or (got.get(n, 0) == 0) != (truth.get(n, 0) == 0))]
    never = [n for n in hooked if n not in truth]
    hs.check(not wrong, f"{len(wrong)} of {len(hooked)} counts differ ({len(never)} of them never called) "
                        f"(name, hookscope, truth): {wrong[:20]}")
    return len(hooked), len(instr), len(never)


def test_groundtruth_program_counts():
    fx = hs.fixture("groundtruth")
    plain = hs.wine([fx["program"]] + fx["args"], cwd=hs.os.path.join(hs.ROOT, fx["cwd"]))
    t = hs.trace(fx["program"], fx["args"], modules=[fx["module"]], name="groundtruth", cwd=fx["cwd"])
    hs.eq(t.rc, fx["exit_code"], "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    hooked, own, never = compare(fx, t)
    hs.check(own >= 30, f"ground truth program has only {own} functions")
    hs.check(never >= 1, "no instrumented function was left uncalled: never_called is")


def test_lua_counts_equal_instrumented_build():
    fx = hs.fixture("lua-workload")
    cwd = hs.os.path.join(hs.ROOT, fx["cwd"])
    plain = hs.wine([fx["program"]] + fx["args"], cwd=cwd)
    t = hs.trace(fx["program"], fx["args"], modules=[fx["module"]], name="lua_truth", cwd=fx["cwd"],
                 timeout=600)
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    hooked, own, never = compare(fx, t)
    hs.check(own >= 500, f"lua has only {own} instrumented functions")
    hs.check(never >= 100, f"only {never} of lua's hooked functions are never called by the workload")


def test_sqlite_counts_equal_instrumented_build():
    """sqlite's shell on its workload (the count-preserving build,
    fixtures-sqlite.sh): every instrumented function counted as its
    -finstrument-functions twin counts it."""
    fx = hs.fixture("sqlite-counts")
    with open(hs.os.path.join(hs.ROOT, fx["cwd"], fx["stdin"]), "rb") as f:
        stdin = f.read()
    plain = hs.wine([fx["program"]] + fx["args"], input=stdin, cwd=hs.os.path.join(hs.ROOT, fx["cwd"]))
    t = hs.trace(fx["program"], fx["args"], modules=[fx["module"]], name="sqlite_truth", input=stdin,
                 cwd=fx["cwd"], timeout=600)
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    hooked, own, never = compare(fx, t)
    hs.check(own >= 1000 and never >= 500, f"sqlite: {own} instrumented functions, {never} never called")
