"""Caller edges and entry stacks: against the -finstrument-functions
ground truth, --stack-every arithmetic, entry-stacks.folded, and the
report.txt sections that show them.

How callers are compared with the ground truth: cyg_profile.c records
each call's return address; a return address outside the exe (msvcrt's
qsort calling a comparator, kernel32 starting a thread) becomes the pseudo
caller "<external>". hookscope names callers in every loaded module
(msvcrt.dll!compare_wrapper, kernel32.dll!BaseThreadInitThunk), so every
hookscope caller outside the traced exe is mapped to "<external>" and
their counts added, then the edges are compared exactly. Only edges into
functions that are instrumented (the program's own, not the static CRT;
read from the instrumented build's code, so those the run never called
are compared too: they must have no edge) and hooked by hookscope are
compared: a function hookscope cannot hook has no edges at all (that is
listed by its skip reason, and the ground-truth count test checks that
almost everything is hooked).
"""
import re

import hs


def truth_edges(fx, t):
    """(ground truth, hookscope) edges {(caller, callee): calls}, restricted
    to instrumented callees that hookscope hooked: every one, called or not
    (an edge into a function the run never called is a wrong edge)."""
    truth_f, truth_e = hs.cyg_counts(fx)
    mod = fx["module"].lower()
    hooked = {f["name"] for f in t.functions(fx["module"]) if f["hooked"]}
    keep = {n for n in hs.instrumented_functions(fx) if n in hooked}
    hs.check(keep & set(truth_f), "no called function among those compared")
    truth = {k: v for k, v in truth_e.items() if k[1] in keep}
    return truth, keep, mod


def hs_edges(t, mod, keep):
    got = {}
    for e in t.json["edges"]:
        if e["callee_module"].lower() != mod or e["callee"] not in keep:
            continue
        caller = e["caller"] if (e["caller_module"] or "").lower() == mod else "<external>"
        got[(caller, e["callee"])] = got.get((caller, e["callee"]), 0) + e["calls"]
    return got


def stack_edges(t, mod, keep):
    """Sum every function's entry stacks by the function of frame 1 (its
    caller: frame 0 is its own entry)."""
    got = {}
    for s in t.json["stacks"]:
        if s["module"].lower() != mod or s["function"] not in keep:
            continue
        hs.check(len(s["frames"]) >= 2, f"stack without a caller frame: {s}")
        m, _, rest = s["frames"][1].partition("!")
        caller = rest.rpartition("+0x")[0] if m.lower() == mod else "<external>"
        got[(caller, s["function"])] = got.get((caller, s["function"]), 0) + s["count"]
    return got


def diff(a, b):
    keys = sorted(set(a) | set(b))
    return [(k, a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)]


def compare_with_truth(fx, options, name, timeout=300):
    cwd = hs.os.path.join(hs.ROOT, fx["cwd"])
    plain = hs.wine([fx["program"]] + fx["args"], cwd=cwd)
    t = hs.trace(fx["program"], fx["args"], modules=[fx["module"]], options=options, name=name,
                 cwd=fx["cwd"], timeout=timeout)
    hs.eq(t.rc, fx["exit_code"], "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    truth, keep, mod = truth_edges(fx, t)
    hs.check(len(truth) > 30, f"only {len(truth)} ground-truth edges")
    hs.eq(t.json["edges_lost"], 0, "edges lost")
    d = diff(truth, hs_edges(t, mod, keep))
    hs.check(not d, f"{len(d)} of {len(truth)} edges differ ((caller, callee), truth, hookscope): {d[:20]}")
    if "--stacks=2" in options:
        hs.eq(t.json["stacks_dropped"], 0, "stacks dropped")
        d = diff(truth, stack_edges(t, mod, keep))
        hs.check(not d, f"{len(d)} edges from the stacks differ (key, truth, stacks): {d[:20]}")
    return t, truth


def test_groundtruth_edges_and_stacks_time():
    fx = hs.fixture("groundtruth")
    t, truth = compare_with_truth(fx, ["--time", "--stacks=2"], "gt_edges_time")
    # the callbacks from outside the exe are there, as <external>
    hs.eq(truth[("<external>", "cmp_ints")] > 1000, True, "qsort callbacks")
    hs.eq(truth[("<external>", "thread_main")], 2, "thread starts")
    hs.eq(truth[("run_args", "sum8")], 10, "an 8-argument function's edge")


def test_groundtruth_edges_without_time():
    fx = hs.fixture("groundtruth")
    compare_with_truth(fx, [], "gt_edges")


def test_lua_edges_and_stacks_time():
    """lua: ~1600 edges, ~130 million calls; both builds use
    -fno-optimize-sibling-calls, so no call is a tail call that would be
    attributed differently."""
    fx = hs.fixture("lua-workload")
    t, truth = compare_with_truth(fx, ["--time", "--stacks=2"], "lua_edges_time", timeout=900)
    hs.check(len(truth) > 1000, f"lua has {len(truth)} compared edges")
    # every called function of lua is timed, or named in report.txt with
    # its reason; none is untimed for a tail jump or for having no unwind
    # data, and the untimed calls are a small share (0.5% measured)
    listed = set(re.findall(r"(?m)^ +\d+  ([a-z-]+) +(\S.*)$", t.txt))
    untimed = [f for f in t.functions(fx["module"]) if f["calls"] and f["hooked"] and f["entry_only"]]
    for f in untimed:
        # (a name two functions share is labelled with its rva)
        hs.check((f["entry_only"], f["name"]) in listed or (f["entry_only"], f"{f['name']}@{f['rva']}") in listed,
                 f"{f['name']} untimed ({f['entry_only']}) not in report.txt")
        hs.check(f["entry_only"] not in ("tail-jump-stack-args", "no-unwind-info"), f"{f['name']}: {f['entry_only']}")
    calls = sum(f["calls"] for f in t.functions(fx["module"]) if f["hooked"])
    share = sum(f["calls"] for f in untimed) / calls
    hs.check(share < 0.02, f"{share:.2%} of lua's calls untimed")


def stacks_by_function(t):
    c = {}
    for s in t.json["stacks"]:
        c[s["function"]] = c.get(s["function"], 0) + s["count"]
    return c


def test_stack_every_exact():
    """--stack-every 10: a capture on the 1st, 11th, 21st, ... call of each
    function on each thread, so n calls on one thread give ceil(n / 10)."""
    exe = hs.need("build/tests/stackevery.exe")
    plain = hs.wine([exe])
    t = hs.trace(exe, options=["--time", "--stacks=4", "--stack-every", "10"], name="stackevery10")
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout")
    calls = t.calls("stackevery.exe")
    hs.eq((calls["tick"], calls["tock"], calls["tack"]), (100, 50, 7), "calls")
    got = stacks_by_function(t)
    hs.eq(got["tick"], 10, "tick: 100 calls on one thread")
    hs.eq(got["tock"], 3 + 3, "tock: 25 calls on each of two threads")
    hs.eq(got["tack"], 1, "tack: 7 calls")
    hs.eq(got["tock_thread"], 1, "tock_thread: 1 call")
    hs.eq(t.json["stacks_dropped"], 0, "stacks dropped")
    hs.eq(t.json["options"]["stacks"],
          {"depth": 4, "every": 10, "policy": "every 10th call of each function on each thread"},
          "options.stacks")
    hs.check("captured at every 10th call of each function on each thread" in t.txt,
             "report.txt states the policy")


def test_stack_every_call():
    exe = hs.need("build/tests/stackevery.exe")
    t = hs.trace(exe, options=["--time", "--stacks=4"], name="stackevery1")
    hs.eq(t.rc, 0, "exit code")
    got = stacks_by_function(t)
    hs.eq((got["tick"], got["tock"], got["tack"]), (100, 50, 7), "a capture per call")
    hs.eq(t.json["options"]["stacks"]["policy"], "every call", "policy")
    hs.check("captured at every call" in t.txt, "report.txt states the policy")
    # the same call site, the same stack: tick's 100 captures are one stack
    tick = [s for s in t.json["stacks"] if s["function"] == "tick"]
    hs.eq([s["count"] for s in tick], [100], "tick's stacks")


ROOT_PREFIX = ("ntdll.dll!RtlUserThreadStart;kernel32.dll!BaseThreadInitThunk;"
               "folded.exe!mainCRTStartup;folded.exe!__tmainCRTStartup;folded.exe!main")

FOLDED_EXPECTED = [
    ROOT_PREFIX + ";folded.exe!leaf 1",
    ROOT_PREFIX + ";folded.exe!mid 1",
    ROOT_PREFIX + ";folded.exe!mid;folded.exe!leaf 3",
    ROOT_PREFIX + ";folded.exe!top 2",
    ROOT_PREFIX + ";folded.exe!top;folded.exe!leaf 2",
    ROOT_PREFIX + ";folded.exe!top;folded.exe!mid 2",
    ROOT_PREFIX + ";folded.exe!top;folded.exe!mid;folded.exe!leaf 4",
]


def folded_lines(t):
    text = t.file("entry-stacks.folded")
    hs.check(text is not None, "entry-stacks.folded was not written")
    lines = text.splitlines()
    hs.eq(lines, sorted(lines), "lines sorted")
    stacks = [l.rpartition(" ")[0] for l in lines]
    hs.eq(len(stacks), len(set(stacks)), "each stack once")
    for l in lines:
        hs.check(re.fullmatch(r"[^ ;][^;]*(;[^;]+)* \d+", l), f"not a folded line: {l!r}")
        hs.check("hookscope-agent.dll" not in l, f"a wrapper frame in {l!r}")
    return lines


def test_folded_exact():
    exe = hs.need("build/tests/folded.exe")
    for opts, name in ((["--stacks=64"], "folded"), (["--stacks=64", "--time"], "folded_time")):
        t = hs.trace(exe, options=opts, name=name)
        hs.eq(t.rc, 0, "exit code")
        lines = folded_lines(t)
        ours = [l for l in lines if re.search(r"!(top|mid|leaf)( |;)", l)]
        hs.eq(ours, FOLDED_EXPECTED, f"{name}: the stacks through top, mid and leaf")
        hs.check(ROOT_PREFIX + " 1" in lines, f"{name}: main's own stack")
        hs.eq(sum(int(l.rpartition(" ")[2]) for l in lines), t.json["total_calls"],
              f"{name}: one capture per call")
        if name == "folded":
            without_time = lines
        else:
            hs.eq(lines, without_time, "the same file with --time (wrapper frames folded out)")
    hs.eq(t.file("entry-stacks.folded") is not None, True, "written")
    t = hs.trace(exe, name="folded_none")
    hs.eq(t.file("entry-stacks.folded"), None, "no folded file without --stacks")


def test_folded_truncated_and_time_weighted():
    """Stacks cut at --stacks=DEPTH get a [truncated] root frame; with
    --time, entry-time.folded shares each function's self time out over its
    entry stacks: per leaf function the weights add up to its self_ns
    (within one ns per stack of rounding)."""
    exe = hs.need("build/examples/demo.exe")
    t = hs.trace(exe, options=["--stacks=3", "--time"], name="folded_cut")
    hs.eq(t.rc, 0, "exit code")
    cut = {tuple(s["frames"]) for s in t.json["stacks"] if s["truncated"]}
    hs.check(cut, "some stacks are cut at depth 3")
    lines = folded_lines(t)
    for l in lines:
        frames = l.rpartition(" ")[0].split(";")
        hs.eq(len(frames) == 4, frames[0] == "[truncated]", f"a 3-frame stack is marked cut exactly when it is: {l}")
        hs.check(len(frames) <= 4, f"at most 3 frames and the mark: {l}")
    weights = {}
    for l in t.file("entry-time.folded").splitlines():
        stack, _, w = l.rpartition(" ")
        leaf = stack.split(";")[-1].partition("!")[2]
        weights[leaf] = weights.get(leaf, 0) + int(w)
    records = {}   # each stack record is rounded once
    for s in t.json["stacks"]:
        records[s["function"]] = records.get(s["function"], 0) + 1
    for f in t.functions("demo.exe"):
        if not f.get("time") or not f["calls"] or not f["time"]["self_ns"]:
            continue
        got = weights.get(f["name"], 0)
        hs.check(abs(got - f["time"]["self_ns"]) <= records.get(f["name"], 0),
                 f"{f['name']}: time-weighted stacks add up to {got} ns, self time {f['time']['self_ns']} ns")


def block(txt, header_re):
    """The lines of report.txt's call graph block whose first line matches."""
    lines = txt.splitlines()
    for i, l in enumerate(lines):
        if re.match(header_re, l):
            out = [l]
            for m in lines[i + 1:]:
                if not m.startswith("    "):
                    break
                out.append(m)
            return out
    raise AssertionError(f"no block {header_re!r} in report.txt")


def test_report_txt_sections():
    exe = hs.need("build/tests/folded.exe")
    t = hs.trace(exe, options=["--time", "--stacks=64"], name="folded_txt")
    hs.eq(t.rc, 0, "exit code")
    txt = t.txt
    # the sections before the new ones are as they were
    hs.check(txt.startswith("hookscope 0.1.0 report\n\ntarget     "), "header")
    hs.check("\nmodule                       functions  hooked skipped  base" in txt, "module table")
    order = ["\n               calls  function", "\ncall graph:", "\ntime:", "\nentry stacks:"]
    at = [txt.find(s) for s in order]
    hs.check(all(a >= 0 for a in at) and at == sorted(at), f"sections in order: {at}")
    leaf = [l.split() for l in block(txt, r"^leaf +\d+")]
    hs.eq(leaf, [["leaf", "10", "folded.exe"], ["<-", "7", "mid"], ["<-", "2", "top"], ["<-", "1", "main"]],
          "call graph block of leaf")
    mid = [l.split() for l in block(txt, r"^mid +\d+")]
    hs.eq(mid, [["mid", "3", "folded.exe"], ["<-", "2", "top"], ["<-", "1", "main"], ["->", "7", "leaf"]],
          "call graph block of mid")
    top = [l.split() for l in block(txt, r"^top +\d+")]
    # (equal counts: callees in address order, callers by name)
    hs.eq(top, [["top", "2", "folded.exe"], ["<-", "2", "main"], ["->", "2", "leaf"], ["->", "2", "mid"]],
          "call graph block of top")
    for name, calls in (("top", 2), ("mid", 3), ("leaf", 10)):
        rows = [l.split() for l in txt.splitlines()
                if re.match(r"^ +\d+ +[\d.]+ (ns|us|ms|s) ", l) and l.split()[-1] == name]
        hs.check(len(rows) == 1, f"one time row for {name}: {rows}")
        hs.eq((rows[0][0], rows[0][-2]), (str(calls), "0"), f"{name}: calls and unwinds in the time table")
    hs.check("captured at every call" in txt, "stack policy")
    hs.check(re.search(r"\n\d+ unique stacks, \d+ captures, 0 dropped", txt), "stack totals")
    # the same trace twice gives the same call graph (deterministic order)
    t2 = hs.trace(exe, options=["--time", "--stacks=64"], name="folded_txt2")
    graph = lambda s: s[s.find("\ncall graph:"):s.find("\ntime:")]
    hs.eq(graph(t2.txt), graph(txt), "call graph section of a second run")
