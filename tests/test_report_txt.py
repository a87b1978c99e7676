"""report.txt read back by a parser of its own and held against report.json,
figure by figure: the header (calls, threads, the sampling line with each
kind of sample, the sampler's hold on the threads, hookscope's own share),
the CPU table (self share, total samples and their share, the CPU time =
total / the running samples x the process's CPU time, ready samples,
calls, CPU time per call, wall time per call; "~" on estimates from fewer
than 20 samples, and with --time an estimate above the measured wall time
is that time, marked "<="), the wait table, the threads table (samples of
each kind), the module table, the calls table, and each call graph
block (callers and callees with the calls of each edge, what no edge
explains as "(no caller recorded)"). The goldens (tests/test_golden.py,
tests/unit/test_profile.c) hold the layout byte for byte; this holds what
it says, so that a writer that prints a wrong figure fails here even
after its goldens were rewritten.

Inputs: every saved profile of tests/unit/profiles rendered again by
`hookscope report --format txt`, and a real sampled run of the demo.
"""
import json
import os
import re

import hs

PROFILES = os.path.join(hs.ROOT, "tests", "unit", "profiles")
UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


FEW = 20   # an estimate from fewer samples is marked "~"


def seconds(text):
    """'120.00 ms' -> (0.12, 0.005e-3: half a unit of its last digit);
    '-' -> (None, 0). A mark ("~", "<=") before it is not read here."""
    if text.strip() == "-":
        return None, 0
    v, u = text.lstrip("~<=").split()
    decimals = len(v.partition(".")[2])
    return float(v) * UNITS[u], 0.5 * 10 ** -decimals * UNITS[u]


def near(printed, want, what):
    """A printed duration ('120.00 ms', '-') is the figure it comes from,
    to its printed digits."""
    got, half = seconds(printed)
    if want is None or got is None:
        hs.eq(got, want, what)
        return
    hs.check(abs(got - want) <= half * 1.001 + 1e-12, f"{what}: printed {printed}, report.json {want:g}")


def sections(txt):
    """report.txt cut into its blocks (separated by blank lines)."""
    return [b.strip("\n").split("\n") for b in txt.split("\n\n") if b.strip()]


def block_starting(blocks, pattern):
    for i, b in enumerate(blocks):
        if re.match(pattern, b[0]):
            return i, b
    return None, None


def split_row(line, ncols):
    """The leading ncols whitespace-separated columns, then the function
    name and the module (the last word; names may hold spaces)."""
    head = line.split(None, ncols)
    cols, rest = head[:ncols], head[ncols] if len(head) > ncols else ""
    name, _, module = rest.rstrip().rpartition("  ")
    return cols, name.strip(), module.strip()


def labels(j):
    """{(module id, rva): name as report.txt shows it} of the functions
    with an rva: a name two functions of a module share is shown as
    name@rva."""
    count = {}
    for f in j["functions"]:
        count[(f["module_id"], f["name"])] = count.get((f["module_id"], f["name"]), 0) + 1
    return {(f["module_id"], f["rva"]): f["name"] if count[(f["module_id"], f["name"])] == 1
            else f"{f['name']}@{f['rva']}" for f in j["functions"] if f["rva"]}


def label(j, f):
    return labels(j).get((f["module_id"], f["rva"]), f["name"])


def funcs_by_key(j):
    """{(module, name as report.txt shows it): function}"""
    return {(f["module"], label(j, f)): f for f in j["functions"]}


def check_header(blocks, j, what):
    head = {l[:11].strip(): l[11:] for l in blocks[1]}
    hs.eq(head["calls"].split()[0], str(j["total_calls"]), f"{what}: header calls")
    hs.eq(int(head["threads"].split()[0]), j["threads"], f"{what}: header threads")
    hs.eq(int(head["pid"]), j["target"]["pid"], f"{what}: header pid")
    near(head["wall time"].strip(), j["target"]["wall_time_s"], f"{what}: wall time")
    s = j.get("sampling")
    if s:
        m = re.match(r"(\d+) CPU, (\d+) ready, (\d+) wait, (\d+) in hookscope \((\w+) sampler, ([\d.]+) Hz, "
                     r"(\d+) threads?(?:, (\d+) lost)?\)", head["samples"])
        hs.check(m, f"{what}: sampling line {head['samples']!r}")
        hs.eq((int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), m.group(5), float(m.group(6)),
               int(m.group(7)), int(m.group(8) or 0)),
              (s["samples"], s.get("ready_samples", 0), s["wait_samples"], s.get("hookscope_samples", 0),
               s["backend"], s["rate_hz"], s["threads"], s["lost"]), f"{what}: the sampling line")
        if s["cpu_time_s"] is not None:
            near(head["cpu time"].strip(), s["cpu_time_s"], f"{what}: cpu time")
        held, threads_s = s.get("held_s"), s.get("threads_s")
        hs.eq("sampler" in head, held is not None, f"{what}: a sampler line when the hold is known")
        if held is not None:
            m = re.match(r"held the threads ([\d.]+ s)(?:, ([\d.]+)% of their sampled time \(([\d.]+ s)\))?$",
                         head["sampler"])
            hs.check(m, f"{what}: sampler line {head['sampler']!r}")
            near(m.group(1), held, f"{what}: the sampler's hold")
            if threads_s:
                hs.eq(m.group(2), f"{100.0 * held / threads_s:.1f}", f"{what}: the hold's share")
                near(m.group(3), threads_s, f"{what}: the threads' sampled time")
        own = s.get("hookscope_samples", 0)
        hs.eq("hookscope" in head, own > 0, f"{what}: a hookscope line when it has samples")
        if own:
            m = re.match(r"(\d+) samples in its own code in the target, ([\d.]+)% of the running samples"
                         r"(?: \((~?[\d.]+ \w+) of CPU\))?$", head["hookscope"])
            hs.check(m, f"{what}: hookscope line {head['hookscope']!r}")
            hs.eq((int(m.group(1)), m.group(2)), (own, f"{100.0 * own / (s['samples'] + own):.1f}"),
                  f"{what}: hookscope's samples and share")
            if s["cpu_time_s"] is not None:
                near(m.group(3), own / (s["samples"] + own) * s["cpu_time_s"], f"{what}: hookscope's CPU time")
                hs.eq(m.group(3).startswith("~"), own < FEW, f"{what}: hookscope's CPU time marked ~ when few")


def wall_of(f, time_on):
    """The measured wall time of all of a function's calls (its inclusive
    time) when every call was timed to its end, else None."""
    t = f.get("time")
    if not time_on or not f["hooked"] or not t or not t["calls"] or t["open"] or t["calls"] != f["calls"]:
        return None
    return t["total_ns"] * 1e-9


def estimate(printed, want, bound, samples, what):
    """A printed CPU estimate: "-" when none; "<=" and the bound when the
    estimate is above it; "~" when it rests on fewer than FEW samples."""
    if want is None:
        hs.eq(printed, "-", what)
        return
    capped = bound is not None and want > bound
    hs.eq(printed.startswith("<="), capped, f"{what}: marked <= ({printed}, estimate {want:g}, bound {bound})")
    hs.eq(printed.startswith("~"), samples < FEW and not capped, f"{what}: marked ~ ({printed}, {samples} samples)")
    near(printed, bound if capped else want, what)


def check_cpu(blocks, j, what):
    i, b = block_starting(blocks, r"^ *self% +total +total% +cpu +ready")
    s = j.get("sampling")
    if not s or not (s["samples"] or s.get("ready_samples")):
        hs.eq(i, None, f"{what}: a CPU table without CPU samples")
        return
    hs.check(b, f"{what}: no CPU table")
    n, cpu_s = s["samples"], s["cpu_time_s"]
    running = n + s.get("hookscope_samples", 0)
    time_on = j["options"]["time"]
    head = b[0].split()
    hooks, timed = "calls" in head, "wall/call" in head
    est = r"(-|(?:<=|~)?[\d.]+ \w+)"
    pattern = r"^ *([\d.]+)% +(\d+) +([\d.]+)% +" + est + r" +(\d+)"
    if hooks:
        pattern += r" +(-|\d+) +" + est
    if timed:
        pattern += r" +(-|[\d.]+ \w+)"
    pattern += r"  (.*?) {2,}(\S.*)$"
    fk = funcs_by_key(j)
    rows, covered = [], 0
    for line in b[1:]:
        m = re.match(r"^\((\d+) samples in code no function name covers\)$", line)
        if m:
            hs.eq(int(m.group(1)), n - sum(f.get("samples", {}).get("self", 0) for f in j["functions"]),
                  f"{what}: samples no function covers")
            continue
        m = re.match(pattern, line)
        hs.check(m, f"{what}: CPU row {line!r}")
        g = list(m.groups())
        name, module = g[-2], g[-1]
        f = fk.get((module, name))
        hs.check(f, f"{what}: CPU row of a function report.json does not list: {line!r}")
        self_, total = f.get("samples", {}).get("self", 0), f.get("samples", {}).get("total", 0)
        hs.eq(int(g[1]), total, f"{what}: total samples of {name}")
        hs.eq(g[0], f"{100.0 * self_ / n if n else 0:.1f}", f"{what}: self% of {name}")
        hs.eq(g[2], f"{100.0 * total / n if n else 0:.1f}", f"{what}: total% of {name}")
        hs.eq(int(g[4]), f.get("ready_samples", {}).get("total", 0), f"{what}: ready samples of {name}")
        cpu = total / running * cpu_s if cpu_s is not None and total else None
        wall = wall_of(f, time_on)
        estimate(g[3], cpu, wall, total, f"{what}: cpu of {name}")
        if hooks:
            calls = f["calls"] if f["hooked"] else None
            hs.eq(g[5], str(calls) if calls else "-", f"{what}: calls of {name}")
            estimate(g[6], cpu / calls if calls and cpu is not None else None,
                     wall / calls if calls and wall is not None else None, total, f"{what}: per call of {name}")
        if timed:
            t = f.get("time")
            near(g[7], t["total_ns"] * 1e-9 / t["calls"] if f["hooked"] and t and t["calls"] else None,
                 f"{what}: wall/call of {name}")
        rows.append((self_, total))
        covered += 1
    hs.eq([r[0] for r in rows], sorted((r[0] for r in rows), reverse=True), f"{what}: CPU rows by self samples")
    hs.eq(covered, sum(1 for f in j["functions"]
                       if f.get("samples", {}).get("total") or f.get("ready_samples", {}).get("total")),
          f"{what}: CPU rows = functions with CPU or ready samples")


def check_wait(blocks, j, what):
    i, b = block_starting(blocks, r"^ +self  self%  function")
    s = j.get("sampling")
    if not s or not s["wait_samples"]:
        hs.eq(i, None, f"{what}: a wait table without wait samples")
        return
    fk = funcs_by_key(j)
    got = {}
    for line in b[1:]:
        m = re.match(r"^ +(\d+) +([\d.]+)%  (.*?) {2,}(\S.*)$", line)
        if not m:
            continue
        f = fk[(m.group(4), m.group(3))]
        hs.eq(int(m.group(1)), f["wait_samples"]["self"], f"{what}: wait samples of {m.group(3)}")
        hs.eq(m.group(2), f"{100.0 * int(m.group(1)) / s['wait_samples']:.1f}", f"{what}: wait share of {m.group(3)}")
        got[(m.group(4), m.group(3))] = int(m.group(1))
    want = {k: f["wait_samples"]["self"] for k, f in fk.items() if f.get("wait_samples", {}).get("self")}
    hs.eq(got, want, f"{what}: the functions of the wait table")


def check_threads(blocks, j, what):
    i, b = block_starting(blocks, r"^threads: the calls the hooks counted")
    if not j.get("sampling") or not j.get("thread_list"):
        return
    hs.check(b, f"{what}: no threads table")
    hs.eq(b[1].split(), ["tid", "calls", "cpu", "ready", "wait", "hookscope", "cpu", "time"],
          f"{what}: threads table heading")
    got = []
    for line in b[2:]:
        tid, calls, cpu, ready, wait, own, cpu_time = line.split(None, 6)
        got.append((int(tid), int(calls), int(cpu), int(ready), int(wait), int(own), cpu_time.strip()))
    want = [(x["tid"], x["calls"], x["cpu_samples"], x.get("ready_samples", 0), x["wait_samples"],
             x.get("hookscope_samples", 0), x["cpu_time_s"]) for x in j["thread_list"]]
    hs.eq(sorted(g[:6] for g in got), sorted(w[:6] for w in want), f"{what}: threads table")
    times = {w[0]: w[6] for w in want}
    for g in got:
        near(g[6], times[g[0]], f"{what}: cpu time of thread {g[0]}")


def check_modules(blocks, j, what):
    i, b = block_starting(blocks, r"^module +functions +hooked skipped  base")
    if not j["modules"]:
        return
    hs.check(b, f"{what}: no module table")
    rows = [l for l in b[1:] if not l.startswith("  ")]
    got = []
    for line in rows:
        m = re.match(r"^(.*?) +(\d+) +(\d+) +(\d+)  (0x[0-9a-f]+) +([\d.]+) s$", line)
        hs.check(m, f"{what}: module row {line!r}")
        got.append((m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5), 16)))
    want = [(m["name"], m["functions_found"], m["functions_hooked"], m["functions_found"] - m["functions_hooked"],
             int(m["base"], 16)) for m in j["modules"]]
    hs.eq(got, want, f"{what}: module table")
    for m, line in zip(j["modules"], rows):
        hs.eq(sum(m["skipped"].values()), m["functions_found"] - m["functions_hooked"],
              f"{what}: {m['name']}: skip reasons add up")


def check_calls(blocks, j, what):
    i, b = block_starting(blocks, r"^ +calls  function +module$")
    called = [f for f in j["functions"] if f["hooked"] and f["calls"]]
    if not called:
        return
    hs.check(b, f"{what}: no calls table")
    got = []
    for line in b[1:]:
        cols, name, module = split_row(line, 1)
        got.append((int(cols[0]), name, module))
    hs.eq(sorted(got), sorted((f["calls"], label(j, f), f["module"]) for f in called), f"{what}: calls table")
    hs.eq([g[0] for g in got], sorted((g[0] for g in got), reverse=True), f"{what}: calls table by calls")
    _, b = block_starting(blocks, r"^\d+ of \d+ hooked functions were called\.$")
    hooked = sum(1 for f in j["functions"] if f["hooked"])
    hs.eq(b[0] if b else None, f"{len(called)} of {hooked} hooked functions were called.", f"{what}: called line")


def caller_label(j, e, home_id):
    """A caller function of another module (another load of the same file
    too) as module!name; one of its own module, or an address, as is (a
    function by the name report.txt shows)."""
    module = e.get("caller_module")
    if module is None or e["caller"].startswith(module + "+0x"):
        return e["caller"]   # an address, or a place in a module no function covers
    name = labels(j).get((e["caller_module_id"], e.get("caller_rva")), e["caller"])
    return name if e.get("caller_module_id") == home_id else f"{e['caller_module']}!{name}"


def callee_label(j, e, home_id):
    name = labels(j).get((e["callee_module_id"], e["callee_rva"]), e["callee"])
    return name if e["callee_module_id"] == home_id else f"{e['callee_module']}!{name}"


def check_graph(blocks, j, what):
    """Each block: a called function (module name, name and calls: a module
    loaded twice has two blocks) with its edges by module id."""
    i, _ = block_starting(blocks, r"^call graph: ")
    called = [f for f in j["functions"] if f["hooked"] and f["calls"]]
    if not called or i is None:
        hs.check(not called or not j["edges"], f"{what}: no call graph")
        return
    left = list(called)
    for b in blocks[i + 1:]:
        m = re.match(r"^(.*?) +(\d+)  (\S.*)$", b[0])
        f = m and next((f for f in left if (f["module"], label(j, f), str(f["calls"])) ==
                        (m.group(3), m.group(1), m.group(2))), None)
        if not f or not all(l.startswith("    ") for l in b[1:]):
            break
        left.remove(f)
        key, home = (f["module_id"], f["rva"]), f["module"]
        into = [e for e in j["edges"] if (e["callee_module_id"], e["callee_rva"]) == key and e["calls"]]
        out = [e for e in j["edges"] if (e.get("caller_module_id"), e.get("caller_rva")) == key and e["calls"]]
        want = sorted([("<-", e["calls"], caller_label(j, e, f["module_id"])) for e in into] +
                      [("->", e["calls"], callee_label(j, e, f["module_id"])) for e in out])
        rest = (f["calls"] - sum(e["calls"] for e in into)) % (1 << 64)
        if rest:
            want.append(("<-", rest, "(no caller recorded)"))
        got = []
        for line in b[1:]:
            mm = re.match(r"^    (<-|->) +(\d+)  (.*)$", line)
            hs.check(mm, f"{what}: call graph line {line!r}")
            got.append((mm.group(1), int(mm.group(2)), mm.group(3)))
        hs.eq(sorted(got), sorted(want), f"{what}: call graph block of {home}!{f['name']}")
    hs.eq([(f["module"], f["name"]) for f in left], [], f"{what}: called functions without a call graph block")


def check(txt, j, what):
    blocks = sections(txt)
    hs.check(blocks[0] == ["hookscope 0.1.0 report"], f"{what}: title {blocks[0]}")
    check_header(blocks, j, what)
    check_cpu(blocks, j, what)
    check_wait(blocks, j, what)
    check_threads(blocks, j, what)
    check_modules(blocks, j, what)
    check_calls(blocks, j, what)
    check_graph(blocks, j, what)


def test_report_txt_of_saved_profiles_says_what_report_json_holds():
    names = sorted(d for d in os.listdir(PROFILES) if os.path.exists(os.path.join(PROFILES, d, "report.json")))
    hs.check(len(names) >= 5, f"saved profiles: {names}")
    for d in names:
        p = hs.hookscope(["report", os.path.join("tests", "unit", "profiles", d), "--format", "txt"], timeout=120)
        hs.eq(p.returncode, 0, f"{d}: report --format txt ({p.stderr!r})")
        with open(os.path.join(PROFILES, d, "report.json"), encoding="utf-8") as f:
            check(p.stdout.decode("utf-8").replace("\r\n", "\n"), json.load(f), d)


def test_report_txt_of_a_sampled_run_says_what_report_json_holds():
    # fib unhooked: its CPU is the program's (the samples in a hooked fib's
    # entry stub would be hookscope's own cost, most of so small a function)
    t = hs.trace(hs.need("build/examples/demo.exe"), ["36"], options=["--sample-rate", "500", "-x", "fib"],
                 name="report_txt_demo")
    hs.eq(t.rc, 0, f"exit code ({t.stderr!r})")
    hs.check(t.json["sampling"]["samples"] > 0, "no CPU samples")
    check(t.txt, t.json, "demo")
