"""profile.firefox.json: a run for the Firefox Profiler, in its Gecko
profile format (version 24), checked by a checker of our own written
from the profiler's type definitions (tests/support/gecko_profile.py,
which names the version pinned and the source files and commits read).

The truth is report.json's: every thread of the timeline and of the
samples is one thread of the file; every timed call is one interval
marker (a function's markers are its hook count, their self times add
up to --time's self time); every sample of the timeline is one sample
with its whole stack, its thread's state as its category, in time
order. The checker refuses the known mistakes (samples out of order, a
stack index that points nowhere, a prefix after its stack).
"""
import collections
import copy
import json
import os
import shutil
import sys

import hs

sys.path.insert(0, os.path.join(hs.ROOT, "tests", "support"))
import gecko_profile  # noqa: E402

CPUSPLIT = "build/tests/cpusplit.exe"
FILE = "profile.firefox.json"
# report.json's keys of sampled stacks by kind, and the category the file gives each
KINDS = {1: ("sample_stacks", "Running"), 2: ("wait_stacks", "Waiting"), 3: ("ready_stacks", "Ready"),
         4: ("hookscope_stacks", "hookscope")}


def load(t):
    text = t.file(FILE)
    hs.check(text is not None, f"{FILE} written: {os.listdir(os.path.join(hs.ROOT, t.out))}")
    return json.loads(text)


def location(frame):
    """A report.json frame ("mod!func+0xoff", "mod+0xoff") as the file
    names it ("func (in mod)")."""
    if "!" in frame:
        mod, rest = frame.split("!", 1)
        return f"{rest.rsplit('+0x', 1)[0]} (in {mod})"
    return f"{frame} (in {frame.split('+0x')[0]})" if "+0x" in frame else frame


def stack_of(th, s):
    """A thread's stack index as its locations, root first."""
    out = []
    while s is not None:
        prefix, frame = th["stackTable"]["data"][s]
        out.append(th["stringTable"][th["frameTable"]["data"][frame][0]])
        s = prefix
    return tuple(reversed(out))


def sample_category(doc, th, s):
    frame = th["stackTable"]["data"][s][1]
    return doc["meta"]["categories"][th["frameTable"]["data"][frame][7]]["name"]


def calls_by_thread(doc):
    """{(tid, function): [marker data]} of the HookedCall markers."""
    out = collections.defaultdict(list)
    for th in doc["threads"]:
        for name, start, end, phase, cat, data in th["markers"]["data"]:
            if data and data["type"] == "HookedCall":
                hs.eq((phase, end >= start), (1, True), "a call is an interval marker")
                out[(th["tid"], th["stringTable"][name])].append(data)
    return out


def test_profile_of_the_timeline():
    """cpusplit.exe 1 sampled at 1 kHz with --timeline (and --no-edges,
    no slow path inside a call): the file passes the checker; its
    threads are those of the timeline and of the samples, named by id;
    each timed function's markers are exactly its hook count and their
    self times add up to --time's self_ns (each to the nanosecond); the
    samples are the timeline's, one for one, each with its whole stack
    (root first, "function (in module)") and its state as category,
    and the timeline has every sample each stack counts, in the state
    it was counted in;
    `report DIR -o OTHER` and `report --format firefox` write the same
    bytes."""
    t = hs.trace(CPUSPLIT, ["1"], options=["--timeline", "--sample-rate", "1000", "--no-edges"], name="ff_timeline")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    doc = load(t)
    gecko_profile.check(doc)
    tl = t.json["timeline"]
    sampled = {s["thread"] for key, _ in KINDS.values() for s in t.json[key]}
    tids = sorted({th["tid"] for th in tl["threads"]} | sampled)
    hs.eq([(th["tid"], th["name"], th["pid"]) for th in doc["threads"]],
          [(tid, f"thread {tid}", t.json["target"]["pid"]) for tid in tids], "one thread per thread, by id")
    hs.check(abs(doc["meta"]["interval"] - 1000 / hs.rate_reported(t, 1000)) < 1e-6,
             f"the interval of 1 kHz (or the rate reached), in ms: {doc['meta']['interval']}")
    # calls: per function its hook count, self times adding up to --time's
    calls = calls_by_thread(doc)
    per_func = collections.defaultdict(list)
    for (_, name), v in calls.items():
        per_func[name].extend(v)
    timed = [f for f in t.functions("cpusplit.exe") if f.get("time")]
    hs.eq(sum(len(v) for v in per_func.values()), sum(f["calls"] for f in timed), "markers = timed calls")
    for f in timed:
        got = per_func[f["name"]]
        hs.eq(len(got), f["calls"], f"{f['name']}: markers = hook count")
        hs.check(all(d["module"] == "cpusplit.exe" for d in got), f"{f['name']}: its module")
        if f["time"]["open"]:
            continue   # (a call open at the end has no --time duration)
        self_ns = sum(round(d["self"] * 1e6) for d in got)
        hs.check(abs(self_ns - f["time"]["self_ns"]) <= len(got),
                 f"{f['name']}: self times add up to self_ns {f['time']['self_ns']}: {self_ns}")
        hs.check(abs(sum(round(d["time"] * 1e6) for d in got) - f["time"]["sum_ns"]) <= len(got),
                 f"{f['name']}: times add up to sum_ns {f['time']['sum_ns']}")
    hs.eq({n: len(per_func[n]) for n in ("burn_a", "burn_b", "burn_c")},
          {n: t.calls("cpusplit.exe")[n] for n in ("burn_a", "burn_b", "burn_c")}, "the burners' calls")
    # samples: the timeline's, each with its stack and state (hookscope's
    # own: the leaf is "hookscope serving" the function)
    want = collections.Counter()
    for kind, pos, _ in tl["samples"]:
        key, cat = KINDS[kind]
        st = t.json[key][pos]
        frames = [location(fr) for fr in reversed(st["frames"])]
        if cat == "hookscope":
            frames[-1] = "hookscope serving " + frames[-1]
        want[(st["thread"], cat, tuple(frames))] += 1
    got = collections.Counter()
    for th in doc["threads"]:
        for s, _, _ in th["samples"]["data"]:
            got[(th["tid"], sample_category(doc, th, s), stack_of(th, s))] += 1
    hs.eq(sum(got.values()), len(tl["samples"]), "one sample per sample of the timeline")
    hs.eq(collections.Counter((kind, pos) for kind, pos, _ in tl["samples"]),
          collections.Counter({(kind, pos): st["count"] for kind, (key, _) in KINDS.items()
                               for pos, st in enumerate(t.json[key])}),
          "each stack's samples on the timeline, in the state counted: as many as it counts (those of "
          "threads that had not run too)")
    hs.eq(got, want, "every sample with its thread, state and stack")
    burning = sum(v for k, v in got.items() if k[1] == "Running" and k[2][-1].startswith("burn_"))
    hs.check(burning >= 10, f"CPU samples in the burners: {burning}")
    # written again, byte for byte
    again = hs.outdir("ff_timeline_again")
    p = hs.hookscope(["report", "-q", "-o", again, t.out], timeout=300)
    hs.eq(p.returncode, 0, "report -o: " + p.stderr.decode(errors="replace"))
    with open(os.path.join(hs.ROOT, again, FILE), encoding="utf-8") as f:
        hs.check(f.read() == t.file(FILE), f"{FILE} written again byte for byte")
    p = hs.hookscope(["report", "--format", "firefox", t.out], timeout=300)
    hs.eq((p.returncode, p.stdout.decode()), (0, t.file(FILE)), "report --format firefox: the same bytes")


def test_self_times_of_recursive_calls():
    """demo.exe (fib's recursion 150,000 calls deep in all) with a buffer
    that keeps every call: each timed function's markers are its hook
    count, and their self times (a call's time less its callees') add up
    to --time's self_ns within a nanosecond a call; no call's self time
    exceeds its time."""
    t = hs.trace("build/examples/demo.exe", options=["--timeline", "--timeline-buffer", "262144", "--no-sample"],
                 name="ff_demo")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    doc = load(t)
    gecko_profile.check(doc)
    per_func = collections.defaultdict(list)
    for (_, name), v in calls_by_thread(doc).items():
        per_func[name].extend(v)
    hs.check(len(per_func["fib"]) > 100000, f"fib's calls: {len(per_func['fib'])}")
    for f in t.functions("demo.exe"):
        if not f.get("time"):
            continue
        got = per_func[f["name"]]
        hs.eq(len(got), f["calls"], f"{f['name']}: markers = hook count")
        hs.check(all(d["self"] <= d["time"] for d in got), f"{f['name']}: self time within the time")
        if not f["time"]["open"]:
            self_ns = sum(round(d["self"] * 1e6) for d in got)
            hs.check(abs(self_ns - f["time"]["self_ns"]) <= len(got),
                     f"{f['name']}: self times add up to self_ns {f['time']['self_ns']}: {self_ns}")


def test_threads_of_the_timeline():
    """tlthreads.exe (six threads one after another, thread k making
    1000 * k calls of outer() and two of inner() in each), --no-sample:
    each thread's markers are exactly the calls it made (the ids the
    program prints), on its own thread of the file."""
    t = hs.trace("build/tests/tlthreads.exe", options=["--timeline", "--no-sample"], name="ff_threads")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    tids = {int(k): int(tid) for k, tid in
            (line.split()[1:] for line in t.stdout.decode().splitlines() if line.startswith("thread "))}
    doc = load(t)
    gecko_profile.check(doc)
    calls = calls_by_thread(doc)
    for k, tid in tids.items():
        hs.eq({n: len(calls[(tid, n)]) for n in ("worker", "outer", "inner")},
              {"worker": 1, "outer": 1000 * k, "inner": 2000 * k}, f"thread {k} ({tid}): its calls")
        hs.check(all(d["depth"] == 2 for d in calls[(tid, "inner")]), f"thread {k}: inner() two below worker()")
    hs.eq(sorted(th["tid"] for th in doc["threads"]), sorted(th["tid"] for th in t.json["timeline"]["threads"]),
          "the timeline's threads")
    hs.check(all(not th["samples"]["data"] for th in doc["threads"]), "no samples")
    # a timeline cut short: `report --format firefox` refuses it in one line
    cut = hs.outdir("ff_threads_cut")
    shutil.copytree(os.path.join(hs.ROOT, t.out), os.path.join(hs.ROOT, cut))
    path = os.path.join(hs.ROOT, cut, "timeline.bin")
    os.truncate(path, os.path.getsize(path) - 10)
    p = hs.hookscope(["report", "--format", "firefox", "-o", cut, cut], timeout=120)
    err = p.stderr.decode(errors="replace")
    hs.eq((p.returncode, err.count("\n")), (125, 1), f"report --format firefox of a cut timeline: {err}")
    hs.check("timeline.bin is cut short at byte" in err, err)


def refused(doc, change, reason):
    """A copy of doc with change made: the checker refuses it, saying reason."""
    bad = copy.deepcopy(doc)
    change(bad)
    try:
        gecko_profile.check(bad)
    except gecko_profile.Invalid as e:
        hs.check(reason in str(e), f"refused for {reason!r}: {e}")
        return str(e)
    raise AssertionError(f"the checker took a profile with this mistake: {reason}")


def test_checker_refuses_known_mistakes():
    """The file of a sampled --timeline run passes; copies with a known
    mistake each are refused with the reason: two samples out of time
    order, a sample's stack one past the stack table, a stack whose
    prefix comes after it, a frame's location past the string table, an
    interval marker that ends before it starts, a version other than the
    one pinned."""
    t = hs.trace(CPUSPLIT, ["1"], options=["--timeline", "--sample-rate", "1000"], name="ff_mistakes")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    doc = load(t)
    gecko_profile.check(doc)
    i = max(range(len(doc["threads"])), key=lambda k: len(doc["threads"][k]["samples"]["data"]))
    th = doc["threads"][i]
    hs.check(len(th["samples"]["data"]) >= 2 and len(th["stackTable"]["data"]) >= 2, "samples to change")

    def swap(d):
        rows = d["threads"][i]["samples"]["data"]
        rows[0][1] = rows[1][1] + 1.0   # the first after the second

    def dangle(d):
        d["threads"][i]["samples"]["data"][0][0] = len(d["threads"][i]["stackTable"]["data"])

    def forward(d):
        d["threads"][i]["stackTable"]["data"][0][0] = 1

    def location_out(d):
        d["threads"][i]["frameTable"]["data"][0][0] = len(d["threads"][i]["stringTable"])

    def backwards(d):
        m = next(m for th in d["threads"] for m in th["markers"]["data"] if m[3] == 1)
        m[1], m[2] = m[2] + 1, m[1]

    def version(d):
        d["meta"]["version"] = 25

    print(refused(doc, swap, "samples are not sorted by time"))
    print(refused(doc, dangle, f"stack {len(th['stackTable']['data'])} is not an index"))
    print(refused(doc, forward, "prefix 1 does not come before its stack"))
    print(refused(doc, location_out, "location"))
    print(refused(doc, backwards, "before it starts"))
    print(refused(doc, version, "not the version pinned (24)"))


def test_samples_without_a_timeline():
    """A sampled run without --timeline still gets the file: per thread,
    as many samples as its sampled stacks counted, an interval apart, and
    a marker saying they have no times; a run with neither samples nor a
    timeline gets none, and `report --format firefox` says why in one
    line."""
    t = hs.trace(CPUSPLIT, ["1"], options=["--sample-rate", "1000"], name="ff_untimed")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    doc = load(t)
    gecko_profile.check(doc)
    want = collections.Counter()
    for key, cat in KINDS.values():
        for st in t.json[key]:
            want[(st["thread"], cat)] += st["count"]
    got = collections.Counter()
    for th in doc["threads"]:
        for s, _, _ in th["samples"]["data"]:
            got[(th["tid"], sample_category(doc, th, s))] += 1
        times = [r[1] for r in th["samples"]["data"]]
        every = 1000 / hs.rate_reported(t, 1000)   # (1 ms, or the rate reached on a loaded machine)
        hs.check(all(abs(x - k * every) < 1e-5 * (1 + k) for k, x in enumerate(times)),
                 f"thread {th['tid']}: one an interval ({every} ms): {times[:5]}")
        notes = [th["stringTable"][m[0]] for m in th["markers"]["data"]]
        hs.eq(notes, ["samples without times"], f"thread {th['tid']}: the note")
    hs.eq(got, want, "samples per thread and state = the stacks' counts")
    p = hs.hookscope(["run", "-q", "--no-sample", "-o", t.out, "--", CPUSPLIT, "1"], timeout=120)
    hs.eq(p.returncode, 0, "a run without samples: " + p.stderr.decode(errors="replace"))
    hs.check(not os.path.exists(os.path.join(hs.ROOT, t.out, FILE)), f"no {FILE} (the earlier one removed)")
    p = hs.hookscope(["report", "--format", "firefox", t.out], timeout=120)
    err = p.stderr.decode(errors="replace")
    hs.eq((p.returncode, p.stdout, err.count("\n")), (125, b"", 1), f"report --format firefox: {err}")
    hs.check("no samples and no timeline" in err, err)


def test_timeline_with_the_etw_sampler():
    """--timeline with the etw sampler (the fake of tests/test_etw_run.py,
    its samples at times of the real clock: 37 samples of fib): the
    session's samples are on the timeline as the suspend sampler's are, so
    the file has every call as a marker and the 37 samples, in time order,
    on the thread that made the calls, with their stack; no note."""
    from test_etw_run import fake_run, rvas
    rva, _, _ = rvas("ff_etw")
    script = (f"timed\nsample 37 exe+{rva['fib'] + 4:#x} exe+{rva['main'] + 0x10:#x}\n"
              f"sample 20 stub+{rva['fib']:#x} exe+{rva['main'] + 0x10:#x}\n")
    t, _ = fake_run("ff_etw", script, ["--sampler", "etw", "--timeline", "--timeline-buffer", "262144"])
    hs.eq(t.rc, 0, f"exit code (stderr {t.stderr!r})")
    hs.eq((t.json["sampling"]["backend"], t.json["sampling"]["samples"], t.json["sampling"]["hookscope_samples"],
           len(t.json["timeline"]["samples"])), ("etw", 37, 20, 57), "37 samples and 20 in fib's stub, each timed")
    doc = load(t)
    gecko_profile.check(doc)
    calls = calls_by_thread(doc)
    hs.eq(sum(len(v) for v in calls.values()),
          sum(th["events"] + th["open"] for th in t.json["timeline"]["threads"]), "a marker a call kept")
    (sampled,) = {st["thread"] for st in t.json["sample_stacks"]}
    per_thread = {th["tid"]: th["samples"]["data"] for th in doc["threads"]}
    hs.eq({tid: collections.Counter(sample_category(doc, th, s) for s, _, _ in th["samples"]["data"])
           for tid, th in ((th["tid"], th) for th in doc["threads"]) if th["samples"]["data"]},
          {sampled: {"Running": 37, "hookscope": 20}}, "the samples on the sampled thread, each in its kind")
    notes = {th["tid"]: [m[5]["text"] for m in th["markers"]["data"] if m[5]["type"] == "HookscopeNote"]
             for th in doc["threads"]}
    hs.eq(notes.get(sampled), [], "no note on the sampled thread")
    # a sample in fib's stub (the entry probe runs before the call is timed) is
    # "hookscope serving fib", in the file and in trace.json: one named fib
    # would stand outside fib's calls
    exe = os.path.basename(t.json["target"]["path"].replace("\\", "/"))
    (th,) = [th for th in doc["threads"] if th["tid"] == sampled]
    hs.eq(collections.Counter(stack_of(th, s)[-1] for s, _, _ in th["samples"]["data"]
                              if sample_category(doc, th, s) == "hookscope"),
          {f"hookscope serving fib (in {exe})": 20}, "the leaf of the samples in fib's stub")
    trace = json.loads(t.file("trace.json"))
    own = [e for e in trace["traceEvents"] if e.get("cat") == "hookscope-sample"]
    hs.eq(collections.Counter((e["name"], e["args"]["stack"][-1]) for e in own),
          {("hookscope serving fib", f"hookscope serving {exe}!fib"): 20}, "trace.json's samples in fib's stub")