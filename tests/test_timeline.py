"""--timeline: every timed call of every thread on a time axis, drained
from per-thread buffers in the session into timeline.bin while the target
runs, and written as trace.json (Chrome trace event format).

The truth is the hooks' own: on the demo program (every function of the
exe hooked and timed) the timeline's calls per function equal the hook
counts, its durations add up to --time's sums, and every call lies inside
the call around it on its thread, one level deeper. What the timeline
cannot keep (a full buffer, --timeline-max) is counted, reported and
shown; a damaged timeline file is refused in one line by `report DIR`.
"""
import bisect
import collections
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time

import hs

sys.path.insert(0, os.path.join(hs.ROOT, "tests", "support"))

DEMO = "build/examples/demo.exe"
EVENT = struct.Struct("<QQQII")
BLOCK = struct.Struct("<IIII")


def calls_of(trace):
    """{name: [X events]} of a trace.json, and its other events."""
    by_name, other = {}, []
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            by_name.setdefault(e["name"], []).append(e)
        else:
            other.append(e)
    return by_name, other


def ns(us):
    """trace.json's microseconds (three decimals) as whole nanoseconds."""
    return round(us * 1000)


def load(t):
    return json.loads(t.file("trace.json"))


def read_timeline(path, open_calls=False):
    """timeline.bin as {tid: [(t0, t1, ticks, func, depth)]}: the calls
    that ended, or with open_calls those still open at the end."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"HSTIMEL1", data[:16]
    out, at = {}, 16
    while at < len(data):
        magic, tid, n, flags = BLOCK.unpack_from(data, at)
        assert magic == 0x42544C48 and flags in (0, 1), (at, magic, flags)
        at += BLOCK.size
        if flags == open_calls:
            out.setdefault(tid, []).extend(EVENT.unpack_from(data, at + i * EVENT.size) for i in range(n))
        at += n * EVENT.size
    return out


def test_calls_nest_and_add_up():
    """demo.exe with a buffer that holds every call (and --no-edges: no
    slow path of hookscope's inside a call, so a call's extent is its
    --time duration): nothing dropped; each function's X events are
    exactly its calls (report.json, hooks); their durations add up to
    --time's sum_ns within the rounding of each end to the nanosecond;
    in timeline.bin (the raw TSC) every call lies inside the call
    enclosing it and is one level deeper, the outermost at depth 0; the
    calls still open at the end (the C runtime's start and exit(), which
    never return) are there too, one a level, up to the end; a process and
    a thread name;
    `report DIR -o OTHER` writes trace.json again byte for byte, with the
    timeline's file beside it. (fib(22): 57,313 calls of fib, all of them
    in trace.json, which keeps the longest 100,000.)"""
    plain = hs.wine([DEMO, "22"])
    t = hs.trace(DEMO, args=["22"], options=["--timeline", "--timeline-buffer", "262144", "--no-sample", "--no-edges"],
                 name="tl_demo")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    hs.eq(t.stdout, plain.stdout, "the demo's output as untraced")
    tl = t.json["timeline"]
    hs.eq([(th["dropped_buffer"], th["dropped_file"]) for th in tl["threads"]], [(0, 0)],
          "one thread, nothing dropped")
    hs.check(not any("timeline" in w for w in t.json["warnings"]), f"no warning: {t.json['warnings']}")
    trace = load(t)
    by_name, other = calls_of(trace)
    tid = tl["threads"][0]["tid"]
    hs.eq(sorted((e["name"], e["args"]["name"]) for e in other),
          sorted([("process_name", "demo.exe"), ("thread_name", f"thread {tid}")]), "metadata events")
    th = tl["threads"][0]
    hs.eq(th["events"] + th["open"], sum(len(v) for v in by_name.values()), "X events = calls kept and open")
    open_calls = 0
    timed = 0
    for f in t.functions("demo.exe"):
        tm = f.get("time")
        evs = by_name.get(f["name"], [])
        if not tm:
            hs.eq(evs, [], f"{f['name']} is not timed: no events")
            continue
        hs.eq(len(evs), tm["calls"] + tm["open"], f"{f['name']}: events = timed calls, and those open at the end")
        hs.eq(len(evs), f["calls"], f"{f['name']}: events = hook count")
        open_calls += tm["open"]
        timed += len(evs)
        if tm["open"]:
            continue   # (an open call has no --time duration)
        got = sum(ns(e["dur"]) for e in evs)
        hs.check(abs(got - tm["sum_ns"]) <= len(evs) + 1,
                 f"{f['name']}: durations add up to sum_ns {tm['sum_ns']}: {got} ({len(evs)} calls)")
    hs.check(timed > 57313 and by_name["fib"], f"the demo's calls are there ({timed})")
    # nesting and depth on the raw clock
    path = os.path.join(hs.ROOT, t.out, "timeline.bin")
    (events,) = read_timeline(path).values()
    (opened,) = read_timeline(path, open_calls=True).values()
    hs.check(all(e[2] == e[1] - e[0] for e in events), "no slow path inside a call: ticks = t1 - t0")
    hs.eq((len(opened), sorted(e[4] for e in opened)), (open_calls, list(range(open_calls))),
          "the calls open at the end, one a level from the outermost")
    end = max(e[1] for e in opened)
    hs.check(all(e[1] == end for e in opened) and all(e[1] < end for e in events),
             "the open calls last to the end, after every call that ended")
    stack, roots = [], []
    for t0, t1, _, func, depth in sorted(events + opened, key=lambda e: (e[0], -e[1])):
        while stack and stack[-1][1] < t0:
            stack.pop()
        if stack:
            hs.check(t1 <= stack[-1][1], f"call {func} ({t0}, {t1}) ends inside ({stack[-1]})")
            hs.eq(depth, stack[-1][4] + 1, f"depth of call {func} at {t0} inside {stack[-1]}")
        else:
            roots.append(depth)
        stack.append((t0, t1, 0, func, depth))
    hs.eq(set(roots), {0}, "every call outside all others is at depth 0")
    # report DIR into another directory: trace.json again, the timeline beside it
    again = hs.outdir("tl_demo_again")
    p = hs.hookscope(["report", "-q", "-o", again, t.out], timeout=300)
    hs.eq(p.returncode, 0, "report -o: " + p.stderr.decode(errors="replace"))
    for name in ("trace.json", "report.json", "timeline.bin"):
        with open(os.path.join(hs.ROOT, t.out, name), "rb") as a, open(os.path.join(hs.ROOT, again, name), "rb") as b:
            hs.check(a.read() == b.read(), f"{name} written again byte for byte")


def longest_expected(t, path):
    """report.txt's longest calls as computed here from timeline.bin and
    report.json: per thread (in the file's order), the 5 calls of most
    --time ticks (ties: the earlier), each as (name, open, start seconds,
    ns, the names of the calls around it, outermost first)."""
    tl = t.json["timeline"]
    names = {}
    for f in t.json["functions"]:
        names[(f["module_id"], int(f["rva"], 16))] = f["name"]
    fname = [names[(m, rva)] for m, rva in tl["functions"]]
    closed, opened = read_timeline(path), read_timeline(path, open_calls=True)
    out = {}
    for tid in dict.fromkeys(list(closed) + list(opened)):
        evs = [(e, False) for e in closed.get(tid, [])] + [(e, True) for e in opened.get(tid, [])]
        top = sorted(evs, key=lambda x: (-x[0][2], x[0][0]))[:5]
        rows = []
        for (t0, t1, ticks, func, depth), is_open in top:
            around = {}
            for (a0, a1, _, af, ad), _o in evs:
                if ad < depth and a0 <= t0 and a1 >= t1:
                    around[ad] = fname[af]
            chain = [around.get(d, "?") for d in range(depth)]
            if depth > 6:
                chain = [chain[0]] + (["..."] if depth > 7 else []) + chain[-6:]
            rows.append((fname[func], is_open, (t0 - tl["tsc_start"]) / tl["tsc_hz"], ticks * 1e9 / tl["tsc_hz"],
                         chain))
        out[tid] = rows
    return out


def parse_duration(text):
    value, unit = text.split()
    return float(value) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]


def test_longest_calls_per_thread():
    """report.txt with --timeline: per thread, the 5 longest single calls
    (their --time duration), when each began and the calls it ran under,
    as timeline.bin says (computed here from the raw file); the longest is
    the largest max_ns of --time's table; `report DIR` writes it again."""
    t = hs.trace(DEMO, options=["--timeline", "--no-sample"], name="tl_longest")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    want = longest_expected(t, os.path.join(hs.ROOT, t.out, "timeline.bin"))
    section = t.txt.split("\nlongest calls, per thread")[1]
    got, tid = {}, None
    for line in section.splitlines()[2:]:
        m = re.fullmatch(r"thread (\d+)", line)
        if m:
            tid = int(m.group(1))
            got[tid] = []
            continue
        m = re.fullmatch(r"\s+(\S+ \S+)\s+(\d+\.\d{6}) s  (\S+) \(demo\.exe\)( \[open at the end\])?\s+"
                         r"(?:\(outermost\)|under (.*))", line)
        if not m:
            break
        chain = m.group(5).split(" > ") if m.group(5) else []
        chain = ["..." if c == ".." else c for c in chain]
        got[tid].append((m.group(3), bool(m.group(4)), float(m.group(2)), parse_duration(m.group(1)), chain))
    hs.eq(sorted(got), sorted(want), "threads")
    for tid, rows in want.items():
        hs.eq([(r[0], r[1], r[4]) for r in got[tid]], [(r[0], r[1], r[4]) for r in rows],
              f"thread {tid}: the longest calls, open or not, and the calls around them")
        for g, w in zip(got[tid], rows):
            hs.check(abs(g[2] - w[2]) <= 1.5e-6, f"{w[0]}: began at {g[2]} s, timeline.bin says {w[2]:.7f}")
            hs.check(abs(g[3] - w[3]) <= w[3] * 0.005 + 1, f"{w[0]}: {g[3]} ns, timeline.bin says {w[3]:.0f}")
    longest_closed = max((r for rows in want.values() for r in rows if not r[1]), key=lambda r: r[3])
    max_ns = max(f["time"]["max_ns"] for f in t.functions("demo.exe") if f.get("time"))
    hs.check(abs(longest_closed[3] - max_ns) <= 1, f"the longest call that ended ({longest_closed[0]}, "
             f"{longest_closed[3]:.0f} ns) is --time's largest max_ns ({max_ns})")
    again = hs.outdir("tl_longest_again")
    p = hs.hookscope(["report", "-q", "-o", again, t.out], timeout=300)
    hs.eq(p.returncode, 0, "report -o: " + p.stderr.decode(errors="replace"))
    with open(os.path.join(hs.ROOT, again, "report.txt"), encoding="utf-8") as f:
        hs.eq(f.read().split("\nlongest calls")[1], t.txt.split("\nlongest calls")[1], "report DIR: the same section")
    p = hs.hookscope(["report", t.out, "--top", "2"], timeout=300)
    rows = [l for l in p.stdout.decode().split("\nlongest calls")[1].splitlines()[2:] if l.startswith("  ")]
    hs.eq(len(rows), 2 * len(want), "--top 2: two calls a thread")
    # a timeline that dropped calls says so on the thread's line
    d = hs.trace(DEMO, options=["--timeline", "--no-sample", "--timeline-max", "4K"], name="tl_longest_dropped")
    hs.eq(d.rc, 0, "exit code (dropped): " + d.stderr.decode(errors="replace"))
    dropped = sum(th["dropped_buffer"] + th["dropped_file"] for th in d.json["timeline"]["threads"])
    hs.check(dropped > 0, "--timeline-max 4K dropped calls")
    hs.check(re.search(rf"\nthread \d+ \({dropped} of its calls were dropped: longer ones may be among them\)\n",
                       d.txt), "the thread's line says its calls were dropped: " + d.txt.split("longest calls")[-1][:400])


def test_speedscope_opens_the_trace():
    """speedscope's own app (the npm package's release build) in headless
    Chromium imports tlthreads.exe's trace.json: no console error, the
    process and its seven threads as profiles, and its sandwich view of
    the first (the main thread) lists its calls by function, one row
    each."""
    import cdp
    index = os.path.join(hs.BUILD, "npm", "node_modules", "speedscope", "dist", "release", "index.html")
    if not cdp.available() or not os.path.exists(index):
        raise hs.Skip("chromium or the speedscope npm package is missing (make deps installs them)")
    t = hs.trace("build/tests/tlthreads.exe", options=["--timeline", "--no-sample"], name="tl_speedscope")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    with cdp.Browser() as b:
        b.open("file://" + index)
        b.choose_file(os.path.join(hs.ROOT, t.out, "trace.json"))
        deadline = time.monotonic() + 30
        while "trace.json" not in b.evaluate("document.title") and time.monotonic() < deadline:
            time.sleep(0.2)
        hs.eq(b.evaluate("document.title"), "trace.json - speedscope", "speedscope loaded the file")
        text = b.evaluate("document.body.innerText")
        hs.check(re.search(r"tlthreads\.exe \(pid %d\), thread \d+ \(tid \d+\) \(1/7\)" % t.json["target"]["pid"], text),
                 "the first of seven threads: " + text[:300])
        # the main thread's profile (speedscope's order of threads is its
        # own): 'n' shows the next profile until its tid is the one that ran main
        with open(os.path.join(hs.ROOT, t.out, "trace.json"), encoding="utf-8") as f:
            main_tid = [e["tid"] for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e["name"] == "main"][0]
        for _ in range(7):
            if "(tid %d)" % main_tid in b.evaluate("document.body.innerText"):
                break
            for kind in ("keyDown", "keyUp"):   # a key the page takes as typed (a script's event is not)
                b.call("Input.dispatchKeyEvent", {"type": kind, "key": "n", "code": "KeyN", "windowsVirtualKeyCode": 78,
                                                  **({"text": "n"} if kind == "keyDown" else {})})
            time.sleep(0.3)
        hs.check("(tid %d)" % main_tid in b.evaluate("document.body.innerText"), "the main thread's profile shown")
        b.evaluate("[...document.querySelectorAll('div')].filter(e => e.textContent.endsWith('Sandwich')"
                   " && e.children.length <= 1).pop().click()")
        # (the table fills in after the view is drawn, later on a busy machine)
        deadline = time.monotonic() + 30
        while not re.search(r"Symbol Name[\s\S]*\tmain\n", b.evaluate("document.body.innerText") + "\n") and \
                time.monotonic() < deadline:
            time.sleep(0.2)
        rows = b.evaluate("document.body.innerText").split("Symbol Name", 1)[1].split("\n")
        names = [r.strip() for r in rows if r.startswith("\t") and not re.match(r"\t[\d.]+[nµm]?s ", r)]
        hs.check("main" in names and "__main" in names, f"the main thread's functions: {names}")
        hs.eq(len(names), len(set(names)), f"one row a function (calls are not told apart by args): {names}")
        hs.eq(b.errors, [], "no console errors")


def replay_evented(profile, frames):
    """An evented speedscope profile replayed: every close matches the
    frame open on top, times never go back, nothing left open; returns
    {function: calls opened}."""
    stack, last, opened = [], 0, {}
    for e in profile["events"]:
        hs.check(e["at"] >= last, f"{profile['name']}: {e} after {last}")
        last = e["at"]
        if e["type"] == "O":
            stack.append(e["frame"])
            name = frames[e["frame"]]["name"]
            opened[name] = opened.get(name, 0) + 1
        else:
            hs.check(stack and stack.pop() == e["frame"], f"{profile['name']}: {e} closes the frame on top")
    hs.eq(stack, [], f"{profile['name']}: every frame closed")
    hs.eq((profile["startValue"], profile["endValue"]), (profile["events"][0]["at"], last), "its extent")
    return opened


def test_speedscope_evented_profiles():
    """tlthreads.exe with --timeline: profile.speedscope.json holds one
    evented profile per thread ("calls, thread N", by id), valid against
    the schema in speedscope's npm package; replayed, each opens a
    function's frame exactly as often as the thread called it (thread k:
    1000 * k outer(), twice as many inner()), over all threads each timed
    function's hook count; `report DIR` writes it again byte for byte;
    speedscope's own app in headless Chromium opens it (no console error,
    the first of seven profiles, its sandwich view one row per function
    the profile opens)."""
    import cdp
    from test_outputs import validate_speedscope
    t = hs.trace("build/tests/tlthreads.exe", options=["--timeline", "--no-sample"], name="tl_evented")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    path = os.path.join(hs.ROOT, t.out, "profile.speedscope.json")
    r = validate_speedscope([path])
    hs.eq(r.returncode, 0, "schema validation: " + r.stdout + r.stderr)
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    tids = sorted(th["tid"] for th in t.json["timeline"]["threads"])
    hs.eq([(p["type"], p["name"], p["unit"]) for p in doc["profiles"]],
          [("evented", f"calls, thread {tid}", "nanoseconds") for tid in tids], "one evented profile per thread")
    opened = {tid: replay_evented(p, doc["shared"]["frames"]) for tid, p in zip(tids, doc["profiles"])}
    mine = {int(k): int(tid) for k, tid in
            (line.split()[1:] for line in t.stdout.decode().splitlines() if line.startswith("thread "))}
    for k, tid in mine.items():
        hs.eq({n: opened[tid].get(n) for n in ("worker", "outer", "inner")},
              {"worker": 1, "outer": 1000 * k, "inner": 2000 * k}, f"thread {k} ({tid}): its calls")
    for f in t.functions("tlthreads.exe"):
        if f.get("time"):
            hs.eq(sum(o.get(f["name"], 0) for o in opened.values()), f["calls"], f"{f['name']}: the hook count")
    again = hs.outdir("tl_evented_again")
    p = hs.hookscope(["report", "-q", "-o", again, t.out], timeout=300)
    hs.eq(p.returncode, 0, "report -o: " + p.stderr.decode(errors="replace"))
    with open(path, "rb") as a, open(os.path.join(hs.ROOT, again, "profile.speedscope.json"), "rb") as b:
        hs.check(a.read() == b.read(), "profile.speedscope.json written again byte for byte")
    index = os.path.join(hs.BUILD, "npm", "node_modules", "speedscope", "dist", "release", "index.html")
    if not cdp.available() or not os.path.exists(index):
        raise hs.Skip("chromium or the speedscope npm package is missing (make deps installs them)")
    with cdp.Browser() as b:
        b.open("file://" + index)
        b.choose_file(path)
        deadline = time.monotonic() + 30
        while "tlthreads.exe" not in b.evaluate("document.title") and time.monotonic() < deadline:
            time.sleep(0.2)
        hs.eq(b.evaluate("document.title"), "tlthreads.exe - speedscope", "speedscope loaded the file (its name)")
        text = b.evaluate("document.body.innerText")
        hs.check(f"calls, thread {tids[0]} (1/7)" in text, "the first of seven profiles: " + text[:300])
        b.evaluate("[...document.querySelectorAll('div')].filter(e => e.textContent.endsWith('Sandwich')"
                   " && e.children.length <= 1).pop().click()")
        deadline = time.monotonic() + 30
        while "Symbol Name" not in b.evaluate("document.body.innerText") and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)
        rows = b.evaluate("document.body.innerText").split("Symbol Name", 1)[1].split("\n")
        names = [r.strip() for r in rows if r.startswith("\t") and not re.match(r"\t[\d.]+[nµm]?s ", r)]
        hs.eq(sorted(names), sorted(opened[tids[0]]), "the sandwich view: one row per function the profile opens")
        hs.eq(b.errors, [], "no console errors")


def test_threads_one_region_after_another():
    """tlthreads.exe: six threads one after another, thread k making
    1000 * k calls of outer() with two of inner() in each; with
    --max-threads 2 each passes its region on to the next (5 reused):
    every call is on the track of the thread that made it (the ids the
    program prints), exactly as many as it made, each inner() inside an
    outer() inside the thread's worker() on that thread."""
    exe = "build/tests/tlthreads.exe"
    t = hs.trace(exe, options=["--timeline", "--no-sample", "--max-threads", "2"], name="tl_threads")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    tids = {int(k): int(tid) for k, tid in
            (line.split()[1:] for line in t.stdout.decode().splitlines() if line.startswith("thread "))}
    hs.eq(sorted(tids), [1, 2, 3, 4, 5, 6], "the program's threads")
    hs.eq(t.json["regions_reused"], 5, "each thread had the region of the one before")
    by_name, _ = calls_of(load(t))
    for k, tid in tids.items():
        got = {n: [e for e in by_name[n] if e["tid"] == tid] for n in ("worker", "outer", "inner")}
        hs.eq({n: len(v) for n, v in got.items()}, {"worker": 1, "outer": 1000 * k, "inner": 2000 * k},
              f"thread {k} ({tid}): its calls")
        (w,) = got["worker"]
        span = lambda e: (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]))
        outers = sorted(span(e) for e in got["outer"])
        hs.check(all(span(w)[0] <= a and b <= span(w)[1] for a, b in outers), f"thread {k}: outer() inside worker()")
        starts = [a for a, _ in outers]
        for e in got["inner"]:
            a, b = span(e)
            i = bisect.bisect_right(starts, a) - 1
            hs.check(i >= 0 and outers[i][0] <= a and b <= outers[i][1], f"thread {k}: {e} inside an outer()")
    others = {th["tid"] for th in t.json["timeline"]["threads"]} - set(tids.values())
    hs.eq(len(others), 1, f"besides them only the main thread: {others}")


def test_samples_fall_inside_their_calls():
    """cpusplit.exe 1 (burn_a, burn_b, burn_c in short calls on the main
    thread, a waiter and a sleeper) sampled with --timeline: every sample
    whose leaf frame is a timed function lies inside a call of that
    function on its thread (the sampler's performance counter, read while
    the thread stood still, on the calls' TSC through the pair read at the
    run's start); a sample in hookscope's own code is "hookscope serving
    F" (F's call may not have begun: the entry probe runs before the call
    is timed), its stack's leaf "hookscope serving module!F", so no sample
    names a call it lies outside of; every thread with samples or calls is named; report DIR
    writes trace.json again byte for byte, samples included; speedscope's
    file holds the sampled profiles, then one evented profile a thread,
    valid against its schema, each timed function opened as often as
    called."""
    t = hs.trace("build/tests/cpusplit.exe", ["1"], options=["--timeline", "--sample-rate", "1000"],
                 name="tl_samples")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    trace = load(t)
    by_name, other = calls_of(trace)
    samples = [e for e in other if e.get("cat") == "sample"]
    hs.eq(len(samples) + sum(1 for e in other if e.get("cat") == "hookscope-sample"),
          len(t.json["timeline"]["samples"]), "one instant event a sample")
    timed = {f["name"] for f in t.functions("cpusplit.exe") if f.get("time")}
    inside, margins = 0, []
    for s in samples + [e for e in other if e.get("cat") == "hookscope-sample"]:
        if s["cat"] == "hookscope-sample":
            # (F: a hooked function of cpusplit.exe, or one hookscope's
            # end-of-process watch detours, ntdll.dll!RtlExitUserProcess)
            leaf = s["args"]["stack"][-1]
            hs.check(s["name"].startswith("hookscope serving ") and re.fullmatch(
                r"hookscope serving (cpusplit\.exe|ntdll\.dll|kernel32\.dll|kernelbase\.dll|msvcrt\.dll)!"
                + re.escape(s["name"][len("hookscope serving "):]), leaf), f"a sample of hookscope's: {s}")
        hs.eq(s["args"]["stack"][-1].split("!")[-1], s["name"].split(" ")[-1], "the stack's leaf names the sample")
        if s["name"] not in timed:
            continue
        at = ns(s["ts"])
        around = [e for e in by_name.get(s["name"], []) if e["tid"] == s["tid"]
                  and ns(e["ts"]) <= at <= ns(e["ts"]) + ns(e["dur"])]
        hs.eq(len(around), 1, f"the sample {s} lies inside one call of {s['name']} on thread {s['tid']}")
        margins.append(min(at - ns(around[0]["ts"]), ns(around[0]["ts"]) + ns(around[0]["dur"]) - at))
        inside += 1
    hs.check(inside >= 10, f"samples in the burners: {inside}")
    names = {e["tid"] for e in other if e["name"] == "thread_name"}
    hs.eq(names, {e["tid"] for e in trace["traceEvents"] if e["ph"] in "Xi"}, "every thread on the timeline is named")
    print(f"{inside} samples inside their calls, the nearest {min(margins) / 1000:.1f} us from a call's edge")
    again = hs.outdir("tl_samples_again")
    p = hs.hookscope(["report", "-q", "-o", again, t.out], timeout=300)
    hs.eq(p.returncode, 0, "report -o: " + p.stderr.decode(errors="replace"))
    with open(os.path.join(hs.ROOT, t.out, "trace.json"), "rb") as a, \
            open(os.path.join(hs.ROOT, again, "trace.json"), "rb") as b:
        hs.check(a.read() == b.read(), "trace.json written again byte for byte")
    # speedscope's file holds the sampled profiles and the evented ones side by side
    from test_outputs import validate_speedscope
    path = os.path.join(hs.ROOT, t.out, "profile.speedscope.json")
    r = validate_speedscope([path])
    hs.eq(r.returncode, 0, "profile.speedscope.json against speedscope's schema: " + r.stdout + r.stderr)
    with open(path, encoding="utf-8") as f:
        ss = json.load(f)
    kinds = [p["type"] for p in ss["profiles"]]
    hs.check(kinds.count("sampled") >= 1 and kinds[-len(t.json["timeline"]["threads"]):] ==
             ["evented"] * len(t.json["timeline"]["threads"]), f"sampled profiles, then one evented a thread: {kinds}")
    opened = {}
    for p in ss["profiles"]:
        if p["type"] == "evented":
            for n, c in replay_evented(p, ss["shared"]["frames"]).items():
                opened[n] = opened.get(n, 0) + c
    hs.eq({n: opened.get(n, 0) for n in timed}, {f["name"]: f["calls"] for f in t.functions("cpusplit.exe")
                                               if f.get("time")}, "each timed function opened as often as called")


def test_full_buffer_drops_are_counted():
    """A 16-call buffer that is not waited for (--timeline-wait 0) cannot
    keep the demo's bursts: the calls kept and
    dropped add up to the timed calls exactly; report.txt, report.json's
    warnings and stderr say how many; trace.json marks them on the thread
    with an instant event at the first dropped call, profile.firefox.json
    with an instant marker; the kept ones still nest."""
    t = hs.trace(DEMO, options=["--timeline", "--timeline-buffer", "16", "--timeline-wait", "0", "--no-sample"],
                 name="tl_drops")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    hs.check(t.json, "report.json: " + t.stderr.decode(errors="replace"))
    (th,) = t.json["timeline"]["threads"]
    timed = sum(f["time"]["calls"] for f in t.functions("demo.exe") if f.get("time"))
    hs.check(th["dropped_buffer"] > 0 and th["dropped_file"] == 0, f"drops counted: {th}")
    hs.check("waits" not in th, f"no wait for room: {th}")
    hs.eq(th["events"] + th["dropped_buffer"], timed, "kept + dropped = timed calls")
    hs.check(0 <= th["dropped_from_us"] <= th["dropped_to_us"], f"the drops' time range: {th}")
    line = f"the timeline dropped {th['dropped_buffer']} calls of 1 thread: {th['dropped_buffer']} found its buffer full"
    hs.check(any(w.startswith(line) for w in t.json["warnings"]), f"report.json warns: {t.json['warnings']}")
    hs.check(line in t.txt, "report.txt says so")
    hs.check(("hookscope: " + line) in t.stderr.decode(), "stderr says so: " + t.stderr.decode())
    by_name, other = calls_of(load(t))
    hs.eq(sum(len(v) for v in by_name.values()), th["events"] + th["open"], "X events = calls kept and open")
    marks = [e for e in other if e["ph"] == "i"]
    hs.eq([(e["name"], e["tid"], e["args"]["dropped"], e["ts"]) for e in marks],
          [(f"hookscope dropped {th['dropped_buffer']} calls", th["tid"], th["dropped_buffer"], th["dropped_from_us"])],
          "one instant event marks the drops")
    # profile.firefox.json: the calls kept and open as markers, the drops one note at the first of them
    import gecko_profile
    ff = json.loads(t.file("profile.firefox.json"))
    gecko_profile.check(ff)
    (fth,) = ff["threads"]
    markers = [(fth["stringTable"][m[0]], m[1], m[3], m[5]["type"]) for m in fth["markers"]["data"]]
    hs.eq(sum(1 for m in markers if m[3] == "HookedCall"), th["events"] + th["open"], "a marker a call kept")
    hs.eq([m for m in markers if m[3] != "HookedCall"],
          [(f"hookscope dropped {th['dropped_buffer']} calls", round(th["dropped_from_us"] / 1000, 6), 0,
            "HookscopeNote")], "one instant marker notes the drops")


def test_full_buffer_is_waited_for():
    """A 256-call buffer fills hundreds of times in the demo, and the
    thread waits for hookscope to take it (--timeline-wait, 1s by
    default): no call dropped, every timed call kept (or open at the end),
    the waits counted in report.json and said in report.txt; and left out
    of the times of the calls around them: main's time is the demo's own
    few milliseconds, not the waits' second."""
    t = hs.trace(DEMO, options=["--timeline", "--timeline-buffer", "256", "--no-sample"], name="tl_waits")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    tl = t.json["timeline"]
    (th,) = tl["threads"]
    timed = sum(f["time"]["calls"] for f in t.functions("demo.exe") if f.get("time"))
    hs.eq((th["dropped_buffer"], th["dropped_file"]), (0, 0), f"nothing dropped: {th}")
    hs.eq(th["events"], timed, "every timed call kept")
    hs.eq(tl["wait_ms"], 1000, "the default wait")
    hs.check(th["waits"] >= 151914 // 256 // 2, f"the full buffer waited for: {th}")
    hs.check(f"threads found their buffer full {th['waits']} times and waited {th['waited_us'] / 1000:.1f} ms in all "
             "for hookscope to take it (--timeline-wait): the times of the calls around each wait leave it out"
             in t.txt, "report.txt says so: " + t.txt.split("timeline   ")[-1][:600])
    hs.check(not t.json["warnings"], f"no warning: {t.json['warnings']}")
    (main,) = [f for f in t.functions("demo.exe") if f["name"] == "main"]
    hs.check(main["time"]["total_ns"] * 10 < th["waited_us"] * 1000,
             f"main's time ({main['time']['total_ns']} ns) leaves out the waits ({th['waited_us']} us)")


def test_wait_keeps_the_registers():
    """keepregs.exe: a timed function that leaves known values in rcx,
    r8-r11, xmm0-xmm5 and LastError, called 2,000 times from code that
    reads them after the return, with a 16-call buffer (the timing
    wrapper waits for room in C at nearly every eighth call): every call
    sees all twelve as the function left them, as untraced."""
    exe = "build/tests/keepregs.exe"
    hs.eq(hs.wine([exe]).stdout, b"kept 2000 of 2000\r\n", "untraced")
    t = hs.trace(exe, options=["--timeline", "--timeline-buffer", "16", "--no-sample"], name="tl_keepregs")
    hs.eq((t.rc, t.stdout), (0, b"kept 2000 of 2000\r\n"), "traced: " + t.stderr.decode(errors="replace"))
    (th,) = t.json["timeline"]["threads"]
    hs.check(th.get("waits", 0) >= 100 and th["dropped_buffer"] == 0, f"the buffer waited for: {th}")
    hs.eq({f["name"]: (f["calls"], f["time"]["calls"]) for f in t.functions("keepregs.exe")
           if f["name"] in ("set_regs", "call_set_regs")},
          {"set_regs": (2000, 2000), "call_set_regs": (2000, 2000)}, "both timed at every call")


def test_full_buffer_gives_up_after_the_wait():
    """--timeline-wait 1ms, shorter than the 2 ms between hookscope's
    passes: some waits end without room, and the thread then drops its
    calls (counted) until hookscope has taken some, then waits again:
    waits and drops both, and the calls kept and dropped add up to the
    timed calls exactly."""
    t = hs.trace(DEMO, options=["--timeline", "--timeline-buffer", "16", "--timeline-wait", "1ms", "--no-sample"],
                 name="tl_wait_gives_up")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    (th,) = t.json["timeline"]["threads"]
    timed = sum(f["time"]["calls"] for f in t.functions("demo.exe") if f.get("time"))
    hs.eq(t.json["timeline"]["wait_ms"], 1, "the wait asked for")
    hs.check(th["waits"] > 0 and th["dropped_buffer"] > 0, f"waits and drops: {th}")
    hs.check(th["waits"] < th["dropped_buffer"], f"a wait given up is not repeated for every call: {th}")
    hs.eq(th["events"] + th["dropped_buffer"], timed, "kept + dropped = timed calls")


def test_timeline_max_bounds_the_file():
    """--timeline-max 4K: the file stays within 4096 bytes; the calls that
    did not fit are counted as dropped for the file; kept + dropped = the
    timed calls."""
    t = hs.trace(DEMO, options=["--timeline", "--timeline-max", "4K", "--timeline-buffer", "262144", "--no-sample"],
                 name="tl_max")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    size = os.path.getsize(os.path.join(hs.ROOT, t.out, "timeline.bin"))
    tl = t.json["timeline"]
    (th,) = tl["threads"]
    hs.check(size <= 4096 and size == tl["bytes"], f"timeline.bin is {size} bytes (report: {tl['bytes']})")
    timed = sum(f["time"]["calls"] for f in t.functions("demo.exe") if f.get("time"))
    hs.check(th["dropped_file"] > 0 and th["dropped_buffer"] == 0, f"dropped for the file: {th}")
    hs.eq(th["events"] + th["dropped_file"], timed, "kept + dropped = timed calls")
    with open(os.path.join(hs.ROOT, t.out, "timeline.bin"), "rb") as f:
        data = f.read()
    at, kept = 16, 0
    while at < len(data):
        magic, tid, n, flags = BLOCK.unpack_from(data, at)
        hs.eq((magic, tid), (0x42544C48, th["tid"]), f"a block of the thread at byte {at}")
        kept += n if not flags else 0
        at += BLOCK.size + n * EVENT.size
    hs.eq((at, kept), (size, th["events"]), "the file's blocks hold the events kept")
    hs.check(4096 - size < BLOCK.size + EVENT.size, f"no room was left for one more call ({size} bytes)")
    hs.check(f"{th['dropped_file']} did not fit in --timeline-max" in t.txt, "report.txt says so")


def test_drain_writes_once_a_pass():
    """lua's workload (lua.exe hooked, its calls of 1 us or more kept)
    keeps the drain busy for a while: its passes gather every take of
    every ring into one buffer (512 KiB) and write it once, when it fills
    and at the pass's end; so the file gets at most one write per pass
    that moved calls, one per buffer filled and one for the calls open at
    the end (one a take, as each steady take was, would be several a
    pass). -v says what the passes moved: every call kept or dropped for
    the file, exactly."""
    hs.need("build/fixtures/lua/lua.exe")
    t = hs.trace("lua.exe", ["workload.lua", "2"], modules=["lua.exe"], cwd="build/fixtures/lua", name="tl_drain",
                 options=["-v", "--timeline", "--timeline-min-duration", "1us", "--no-sample"])
    err = t.stderr.decode(errors="replace")
    hs.eq(t.rc, 0, "exit code: " + err[-2000:])
    m = re.search(r"timeline: (\d+) calls in (\d+) bytes, taken in (\d+) passes .* in (\d+) writes\); the (\d+) "
                  r"passes that moved calls took (\d+) in", err)
    hs.check(m, "hookscope -v says what the drain did: " + err[-2000:])
    calls, size, passes, writes, moving, moved = (int(x) for x in m.groups())
    tl = t.json["timeline"]
    hs.eq((calls, size), (sum(th["events"] for th in tl["threads"]), tl["bytes"]), "-v's calls and bytes")
    hs.eq(moved, sum(th["events"] + th["dropped_file"] for th in tl["threads"]), "the passes moved every call taken")
    hs.check(moving >= 10, f"{moving} of {passes} passes moved calls: the drain was busy")
    fills = -(-size // (480 * 1024))
    hs.check(writes <= moving + fills + 1, f"{writes} writes for {moving} passes that moved calls and {size} bytes")


def test_writer_keeps_every_buffer_in_order():
    """The drain's buffers made tiny and few (HOOKSCOPE_TEST_TIMELINE_BUFFERS:
    two of 4 KiB, 127 calls each) so that the file's writer is behind all
    the time and the drain waits for it (-v says how often): still each
    function's calls in timeline.bin are exactly its hook count, nothing
    dropped, and the calls are in the order they ended (a buffer lost,
    written twice or out of turn would show)."""
    t = hs.trace(DEMO, options=["-v", "--timeline", "--timeline-buffer", "262144", "--no-sample", "--no-edges"],
                 name="tl_writer", extra_env={"HOOKSCOPE_TEST_TIMELINE_BUFFERS": "4096,2"})
    err = t.stderr.decode(errors="replace")
    hs.eq(t.rc, 0, "exit code: " + err[-2000:])
    m = re.search(r"in (\d+) writes\).*, buffers waited for (\d+) times", err)
    hs.check(m and int(m[1]) > 500 and int(m[2]) > 0, "-v: many writes, the queue full: " + err[-2000:])
    (th,) = t.json["timeline"]["threads"]
    hs.eq((th["dropped_buffer"], th["dropped_file"]), (0, 0), "nothing dropped")
    (events,) = read_timeline(os.path.join(hs.ROOT, t.out, "timeline.bin")).values()
    hs.eq(len(events), th["events"], "the file holds the calls kept")
    names = {(f["module_id"], int(f["rva"], 16)): f["name"] for f in t.json["functions"]}
    fname = [names[(m, rva)] for m, rva in t.json["timeline"]["functions"]]
    got = collections.Counter(fname[e[3]] for e in events)
    want = {f["name"]: f["time"]["calls"] for f in t.functions("demo.exe") if f.get("time") and f["time"]["calls"]}
    hs.check(sum(want.values()) > 100000, f"the demo's calls ({sum(want.values())})")
    hs.eq(dict(got), want, "calls per function = the hooks' timed calls")
    ends = [e[1] for e in events]
    late = next((i for i in range(1, len(ends)) if ends[i] < ends[i - 1]), None)
    hs.eq(late, None, "the calls in the order they ended")


def test_filters_decide_at_the_exit():
    """--timeline-min-duration 1us keeps only calls of at least a
    microsecond (their durations in timeline.bin, at the agent's clock
    rate, within its calibration); --timeline-depth 3 only calls of the
    three outermost timed levels; in both, the calls kept and left out add
    up to the timed calls exactly, and report.txt's timeline line says so;
    the aggregate report is as without the filters (every call counted,
    durations and all)."""
    for opts, name in ((["--timeline-min-duration", "1us"], "tl_min"), (["--timeline-depth", "3"], "tl_depth")):
        t = hs.trace(DEMO, options=["--timeline", "--no-sample", "--no-edges"] + opts, name=name)
        hs.eq(t.rc, 0, f"{opts}: exit code: " + t.stderr.decode(errors="replace"))
        (th,) = t.json["timeline"]["threads"]
        timed = sum(f["time"]["calls"] for f in t.functions("demo.exe") if f.get("time"))
        hs.eq(sum(f["calls"] for f in t.functions("demo.exe") if f["name"] == "fib"), 150049,
              f"{opts}: fib(24)'s calls, 2 * F(25) - 1")
        hs.check(th["events"] > 0 and th["filtered"] > 0 and th["dropped_buffer"] == 0, f"{opts}: {th}")
        hs.eq(th["events"] + th["filtered"], timed, f"{opts}: kept + left out = timed calls")
        (events,) = read_timeline(os.path.join(hs.ROOT, t.out, "timeline.bin")).values()
        hs.eq(len(events), th["events"], f"{opts}: the file holds the calls kept")
        if name == "tl_min":
            shortest = min(e[2] for e in events) * 1e9 / t.json["timeline"]["tsc_hz"]
            hs.check(999 <= shortest, f"the shortest call kept: {shortest:.1f} ns")
            hs.eq(t.json["timeline"]["min_duration_ns"], 1000, "report.json: the filter")
            what = "(shorter than 1000 ns)"
        else:
            hs.eq(max(e[4] for e in events), 2, "the deepest call kept: depth 2")
            what = "(deeper than 3 levels)"
        line = (f"timeline   {th['events']} calls kept on 1 thread (and {th['open']} open at the end), "
                f"{th['filtered']} left out by the filters {what}, 0 dropped")
        hs.check(line in t.txt, f"report.txt: {line}")


def test_a_run_without_timeline_leaves_none():
    """A run into a directory that holds an earlier run's timeline:
    without --timeline, timeline.bin and trace.json are gone after it (a
    directory holds one run's files); a --timeline run that fails before
    the target runs leaves none."""
    t = hs.trace(DEMO, options=["--timeline", "--no-sample"], name="tl_then_none")
    hs.eq(t.rc, 0, "the first run")
    hs.check(t.file("trace.json") and os.path.exists(os.path.join(hs.ROOT, t.out, "timeline.bin")), "its timeline")
    p = hs.hookscope(["run", "-q", "--no-sample", "-o", t.out, "--", DEMO], timeout=120)
    hs.eq(p.returncode, 0, "the second run: " + p.stderr.decode(errors="replace"))
    left = sorted(os.listdir(os.path.join(hs.ROOT, t.out)))
    hs.check("report.json" in left and "timeline.bin" not in left and "trace.json" not in left,
             f"the second run's files only: {left}")
    # a run that fails before the target runs (a filter that matches
    # nothing) leaves no timeline either
    failed = hs.outdir("tl_failed")
    p = hs.hookscope(["run", "-q", "--timeline", "-f", "nosuchfunc*", "-o", failed, "--", DEMO], timeout=120)
    hs.eq(p.returncode, 125, "the failed run: " + p.stderr.decode(errors="replace"))
    hs.eq(os.listdir(os.path.join(hs.ROOT, failed)), [], "the failed run's directory is empty")


def corrupt_copy(src, name, change):
    dst = hs.outdir(name)
    shutil.copytree(os.path.join(hs.ROOT, src), os.path.join(hs.ROOT, dst))
    path = os.path.join(hs.ROOT, dst, "timeline.bin")
    with open(path, "rb") as f:
        data = f.read()
    data = change(data)
    if data is None:
        os.remove(path)
    else:
        with open(path, "wb") as f:
            f.write(data)
    return dst


VIEW_CALLS = 2000000   # the first calls profile.firefox.json and profile.speedscope.json hold (README)
TRACE_CALLS = 100000   # the longest calls trace.json holds (README)


def test_views_bound_and_say_what_they_lack():
    """A demo run's directory given a timeline.bin of 2,100,000 calls one
    after another on its thread, 100 to 3,099 ticks long (700 of each
    length), and 5 calls dropped for a full buffer: trace.json keeps the
    longest 100,000 (700 of each length from 2,958 ticks on: 142 lengths
    fit, 99,400 calls; then of the 2,957-tick ones the first 600 to
    begin; the 2,000,000 others left out), says so in its otherData, in
    the thread's name and in an instant event; speedscope's
    evented profile keeps the first 2,000,000 at most and its name says
    what was dropped and what left out; report.txt says what each view
    holds."""
    t = hs.trace(DEMO, options=["--timeline", "--no-sample"], name="tl_views_src")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    d = hs.outdir("tl_views")
    shutil.copytree(os.path.join(hs.ROOT, t.out), os.path.join(hs.ROOT, d))
    path = os.path.join(hs.ROOT, d, "timeline.bin")
    with open(path, "rb") as f:
        head = f.read(16 + BLOCK.size + EVENT.size)
    tid = BLOCK.unpack_from(head, 16)[1]
    t0, _, _, func, _ = EVENT.unpack_from(head, 16 + BLOCK.size)
    n, step = 2100000, 65536
    with open(path, "wb") as f:
        f.write(head[:16])
        for at in range(0, n, step):
            k = min(step, n - at)
            f.write(BLOCK.pack(0x42544C48, tid, k, 0))
            f.write(b"".join(EVENT.pack(t0 + 4000 * i, t0 + 4000 * i + 100 + i % 3000, 100 + i % 3000, func, 0)
                             for i in range(at, at + k)))
    j = json.loads(t.file("report.json"))
    tl = j["timeline"]
    (th,) = [x for x in tl["threads"] if x["tid"] == tid]
    tl["threads"] = [th]
    th.update(events=n, open=0, dropped_buffer=5, dropped_file=0, drop_first=t0 + 4000, drop_last=t0 + 8000)
    tl["bytes"] = os.path.getsize(path)
    with open(os.path.join(hs.ROOT, d, "report.json"), "w", encoding="utf-8") as f:
        json.dump(j, f)
    hz = tl["tsc_hz"]

    out = hs.outdir("tl_views_out")
    for fmt in ("trace", "speedscope", "txt"):
        p = hs.hookscope(["report", "-q", "--format", fmt, "-o", out, d], timeout=400)
        hs.eq(p.returncode, 0, f"report --format {fmt}: " + p.stderr.decode(errors="replace"))
    with open(os.path.join(hs.ROOT, out, "trace.json"), encoding="utf-8") as f:
        trace = json.load(f)
    whole = TRACE_CALLS // 700 * 700   # the lengths kept whole
    shortest, kept, left = 3100 - TRACE_CALLS // 700, TRACE_CALLS, n - TRACE_CALLS
    hs.eq((whole, shortest, kept, left), (99400, 2958, 100000, 2000000), "the figures expected")
    other_data = dict(trace["otherData"])
    kept_m = re.fullmatch(rf"the calls of {shortest * 1e9 / hz:.2f} ns or more, and of the calls from "
                          rf"{(shortest - 1) * 1e9 / hz:.2f} ns, those that began before (\S+) ms",
                          other_data.pop("kept"))
    hs.check(kept_m, f"otherData says which calls it kept: {trace['otherData']}")
    hs.eq(other_data, {"calls": n, "calls_kept": kept, "calls_left_out": left,
                       "left_out": "the other calls, shorter: the file keeps the longest (speedscope takes minutes to "
                                   "import more); timeline.bin has them all"}, "trace.json's otherData")
    by_name, other = calls_of(trace)
    # each call's number (its start: t0 + 4000 ticks a call) says its length (100 + number % 3000 ticks)
    numbers = sorted(round((e["ts"] * 1e-6 * hz + tl["tsc_start"] - t0) / 4000) for v in by_name.values() for e in v)
    hs.eq(len(numbers), kept, "the calls in trace.json")
    lengths = collections.Counter(100 + i % 3000 for i in numbers)
    hs.eq(lengths, {**{d: 700 for d in range(shortest, 3100)}, shortest - 1: kept - whole}, "the calls kept, by length")
    edge = [i for i in numbers if 100 + i % 3000 == shortest - 1]
    hs.eq(edge, list(range(shortest - 1 - 100, n, 3000))[:kept - whole],
          f"the {shortest - 1}-tick calls kept: the first {kept - whole} to begin")
    hs.check((t0 + 4000 * edge[-1] - tl["tsc_start"]) / hz * 1e3 < float(kept_m.group(1)) <
             (t0 + 4000 * (edge[-1] + 3000) - tl["tsc_start"]) / hz * 1e3, f"the time said: {kept_m.group(1)} ms")
    hs.eq([e["args"]["name"] for e in other if e["name"] == "thread_name" and e["tid"] == tid],
          [f"thread {tid} ({left} shorter calls left out)"], "the thread's name says so")
    hs.eq([(e["name"], e["args"]) for e in other if e["name"].startswith("hookscope left out")],
          [(f"hookscope left out {left} calls", {"left_out": left, "run_calls": n, "run_calls_kept": kept})],
          "an instant event too")
    with open(os.path.join(hs.ROOT, out, "profile.speedscope.json"), encoding="utf-8") as f:
        ss = json.load(f)
    (prof,) = [x for x in ss["profiles"] if x["type"] == "evented"]
    cut_ms = (t0 + 4000 * VIEW_CALLS - tl["tsc_start"]) / hz * 1e3
    m = re.fullmatch(rf"calls, thread {tid} \(5 calls dropped from (\S+) to (\S+) ms: 5 for a full buffer, 0 past "
                     rf"--timeline-max; (\d+) calls from (\S+) ms on left out: a browser opens no larger file\)",
                     prof["name"])
    hs.check(m, "speedscope's profile names the drops and the calls left out: " + prof["name"])
    first_ms = (t0 + 4000 - tl["tsc_start"]) / hz * 1e3
    hs.check(abs(float(m.group(1)) - first_ms) < 0.002 and int(m.group(3)) == n - len(prof["events"]) // 2 and
             abs(float(m.group(4)) - cut_ms) < 0.01 * cut_ms, f"its figures: {m.groups()}, {first_ms}, {cut_ms}")
    with open(os.path.join(hs.ROOT, out, "report.txt"), encoding="utf-8") as f:
        txt = f.read()
    hs.check(f"\nviews      trace.json holds the longest {kept} of the timeline's {n} calls ({kept_m.group(0)}: "
             f"speedscope takes minutes to import more); timeline.bin has them all\n"
             f"views      profile.firefox.json and profile.speedscope.json hold the first {len(prof['events']) // 2} of "
             f"the timeline's {n} calls (those from " in txt, "report.txt says what the views hold: " + txt[:1500])


def test_damaged_timeline_is_refused_in_one_line():
    """report DIR with a timeline.bin that is missing, not a timeline, cut
    short, names a function that does not exist, or has an event ending
    before it starts: one line naming the file and why, exit 125, nothing
    written."""
    t = hs.trace(DEMO, options=["--timeline", "--timeline-buffer", "262144", "--no-sample"], name="tl_src")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    first = 16 + BLOCK.size   # the first event

    def bad_func(d):
        t0, t1, ticks, func, depth = EVENT.unpack_from(d, first)
        return d[:first] + EVENT.pack(t0, t1, ticks, 1 << 30, depth) + d[first + EVENT.size:]

    def backwards(d):
        t0, t1, ticks, func, depth = EVENT.unpack_from(d, first)
        return d[:first] + EVENT.pack(t1 + 10, t1, 0, func, depth) + d[first + EVENT.size:]

    cases = [
        ("missing", lambda d: None, "cannot read "),
        ("magic", lambda d: b"NOTATIME" + d[8:], "is not a hookscope timeline"),
        ("cut", lambda d: d[:len(d) - 7], "is cut short at byte "),
        ("func", bad_func, f": the event at byte {first} is not a call of a known function"),
        ("backwards", backwards, f": the event at byte {first} is not a call of a known function"),
        ("block", lambda d: d[:16] + b"\0" * 16 + d[32:], ": no block of events at byte 16"),
    ]
    for name, change, why in cases:
        d = corrupt_copy(t.out, "tl_bad_" + name, change)
        before = sorted(os.listdir(os.path.join(hs.ROOT, d)))
        mtimes = {n: os.path.getmtime(os.path.join(hs.ROOT, d, n)) for n in before}
        p = hs.hookscope(["report", "-q", d], timeout=120)
        err = p.stderr.decode()
        hs.eq(p.returncode, 125, f"{name}: exit code ({err})")
        hs.eq(len(err.splitlines()), 1, f"{name}: one line: {err!r}")
        hs.check(err.startswith("hookscope: ") and "timeline.bin" in err and why in err, f"{name}: {err!r}")
        hs.eq({n: os.path.getmtime(os.path.join(hs.ROOT, d, n)) for n in sorted(os.listdir(os.path.join(hs.ROOT, d)))},
              mtimes, f"{name}: nothing written")


def test_usage_errors():
    """The timeline's options without --timeline, a bad size or buffer,
    and --timeline without hooks: a line saying so (then the usage, as
    every usage error), exit 2."""
    for args, line in [
        (["--timeline-max", "1M"], "option '--timeline-max' needs --timeline"),
        (["--timeline-buffer", "64"], "option '--timeline-buffer' needs --timeline"),
        (["--timeline", "--timeline-max", "10X"], "--timeline-max needs a size from 4K to 1024G"),
        (["--timeline", "--timeline-max", "100"], "--timeline-max needs a size from 4K to 1024G"),
        (["--timeline", "--timeline-buffer", "100"], "--timeline-buffer needs a power of two from 16 to 16777216"),
        (["--no-hooks", "--timeline"], "option '--timeline' needs the hooks, which --no-hooks turns off"),
        (["--timeline-depth", "2"], "option '--timeline-depth' needs --timeline"),
        (["--timeline", "--timeline-min-duration", "5"], "--timeline-min-duration needs a duration with its unit"),
        (["--timeline", "--timeline-depth", "0"], "--timeline-depth needs a number from 1 to 65536"),
        (["--timeline-wait", "1s"], "option '--timeline-wait' needs --timeline"),
        (["--timeline", "--timeline-wait", "5"], "--timeline-wait needs a duration with its unit"),
        (["--timeline", "--timeline-wait", "2h"], "--timeline-wait needs a duration with its unit"),
    ]:
        p = hs.hookscope(["run", "-o", hs.outdir("tl_usage")] + args + ["--", DEMO], timeout=60)
        err = p.stderr.decode()
        hs.eq(p.returncode, 2, f"{args}: exit code ({err})")
        hs.check(err.splitlines()[0].startswith("hookscope: " + line), f"{args}: {err!r}")


def test_closed_stdout_gives_one_line():
    """report DIR --format trace|firefox|speedscope into a pipe its reader
    closes at once: one line on stderr saying the output could not be
    written, nothing else (the timeline's reader had no error of its own
    to say: a writer's failure was once printed as an unset message)."""
    t = hs.trace(DEMO, options=["--timeline", "--no-sample"], name="tl_closed_stdout")
    hs.eq(t.rc, 0, "exit code: " + t.stderr.decode(errors="replace"))
    for fmt in ("trace", "firefox", "speedscope"):
        p = subprocess.run(["sh", "-c", f'"$0" report "$1" --format {fmt} | head -c 10 >/dev/null',
                            os.path.join(hs.ROOT, "hookscope"), t.out], cwd=hs.ROOT, env=hs.env(),
                           capture_output=True, timeout=300)
        lines = p.stderr.decode(errors="replace").replace("\r\n", "\n").strip().splitlines()
        hs.eq(len(lines), 1, f"{fmt}: one line ({lines})")
        hs.check(re.fullmatch(rf"hookscope: cannot write the {fmt} output to stdout.*", lines[0]), f"{fmt}: {lines}")
