"""Call counts against ground truth: the same program built with
-finstrument-functions and a counting runtime (tests/support)."""
import hs


def compare(fx, t):
    """Every function hookscope hooked has the instrumented build's count."""
    truth, _ = hs.cyg_counts(fx)
    hs.check(truth, "the instrumented build wrote no counts")
    got = t.calls(fx["module"])
    all_funcs = {f["name"]: f for f in t.functions(fx["module"])}
    own = [n for n in truth if n in all_funcs]
    missing = sorted(set(truth) - set(all_funcs))
    hs.check(not missing, f"instrumented functions hookscope did not find: {missing[:20]}")
    hooked = [n for n in own if all_funcs[n]["hooked"]]
    hs.check(len(hooked) >= 0.95 * len(own),
             f"only {len(hooked)} of {len(own)} own functions hooked: "
             f"{[(n, all_funcs[n]['skip_reason']) for n in own if not all_funcs[n]['hooked']][:20]}")
    wrong = [(n, got.get(n, 0), truth[n]) for n in hooked if got.get(n, 0) != truth[n]]
    hs.check(not wrong, f"{len(wrong)} of {len(hooked)} counts differ (name, hookscope, truth): {wrong[:20]}")
    # functions the instrumented build never called must not be counted either
    extra = [(n, c) for n, c in got.items() if c and n in all_funcs and n not in truth
             and n in own]
    hs.check(not extra, f"counted but never called: {extra[:20]}")
    return len(hooked), len(own)


def test_groundtruth_program_counts():
    fx = hs.fixture("groundtruth")
    plain = hs.wine([fx["program"]] + fx["args"], cwd=hs.os.path.join(hs.ROOT, fx["cwd"]))
    t = hs.trace(fx["program"], fx["args"], modules=[fx["module"]], name="groundtruth", cwd=fx["cwd"])
    hs.eq(t.rc, fx["exit_code"], "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    hooked, own = compare(fx, t)
    hs.check(own >= 30, f"ground truth program has only {own} functions")


def test_lua_counts_equal_instrumented_build():
    fx = hs.fixture("lua-workload")
    cwd = hs.os.path.join(hs.ROOT, fx["cwd"])
    plain = hs.wine([fx["program"]] + fx["args"], cwd=cwd)
    t = hs.trace(fx["program"], fx["args"], modules=[fx["module"]], name="lua_truth", cwd=fx["cwd"],
                 timeout=600)
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    hooked, own = compare(fx, t)
    hs.check(own >= 500, f"lua has only {own} instrumented functions")
