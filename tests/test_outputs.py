"""hookscope's outputs opened by the programs people open them with, and
the commands around them (report --format/--sort, diff, dtrace, the
progress line), and a real program's two functions of one name kept
apart in every output:

- flamegraph.svg in headless Chromium (tests/support/cdp.py): no console
  errors, the expected frames, a scripted search highlights exactly the
  matching frames and reports their share, a click zooms, a tooltip, at
  the scale of 100,000 unique stacks too;
- profile.speedscope.json against the schema shipped in the speedscope
  npm package, with Debian's python3-jsonschema; its profiles folded back
  equal to the .folded files;
- callgrind.out through valgrind's callgrind_annotate: totals equal to the
  samples, each function's self cost equal to its samples as the leaf of
  report.json's stacks, call counts equal to the hooks' edges;
- DTrace's output through collapse-dtrace's rules: the samples equal to
  cpu-stacks.folded; the fpid one-liners' counts equal to the hook counts
  of the same program; cargo-flamegraph's exact argument vector through
  hookscope-dtrace.exe.

A consumer that is not installed skips its test with the reason (`make
deps` installs them all). Every subprocess has a timeout.
"""
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import xml.dom.minidom

import hs

sys.path.insert(0, os.path.join(hs.ROOT, "tests", "support"))
import cdp  # noqa: E402  (tests/support/cdp.py)

PROFILES = os.path.join(hs.ROOT, "tests", "unit", "profiles")
SCHEMA = os.path.join(hs.BUILD, "npm", "node_modules", "speedscope", "dist", "release", "file-format-schema.json")
DEBIAN_PYTHON = "/usr/bin/python3"
DEMO = "build/examples/demo.exe"
T = hs.TARGETS

# every frame box of the flame graph, as the page sees it
JS_FRAMES = """[].slice.call(document.querySelectorAll('#frames > g.f')).map(function (g) {
  var n = +g.getAttribute('data-n');
  return {name: n >= 0 ? HS.fns[n][0] : null, v: +g.getAttribute('data-v'), x: +g.getAttribute('data-x'),
          d: +g.getAttribute('data-d'), hit: g.classList.contains('hit'), shown: g.style.display !== 'none',
          anc: g.classList.contains('anc'), rx: +g.firstChild.getAttribute('x'),
          rw: +g.firstChild.getAttribute('width')};
})"""


def need_chromium():
    if not cdp.available():
        raise hs.Skip("chromium is not installed (make deps installs Debian's chromium)")


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def url(path):
    return "file://" + os.path.abspath(os.path.join(hs.ROOT, path))


def frame_center(b, name):
    return b.evaluate("""(function () {
      var g = [].slice.call(document.querySelectorAll('#frames > g.f')).filter(function (g) {
        var n = +g.getAttribute('data-n'); return n >= 0 && HS.fns[n][0] === %s; })[0];
      var r = g.firstChild.getBoundingClientRect();
      return [r.x + r.width / 2, r.y + r.height / 2];
    })()""" % json.dumps(name))


# --- flamegraph.svg in Chromium ---------------------------------------------------


def test_svg_sampled_profile_in_chromium():
    """The saved sampled profile: hookscope.exe's SVG equals the native
    golden one; in Chromium every frame is there, a search for ^burn_
    highlights burn_a and burn_b and reports 90% (180 of 200 samples), a
    nested search counts recursion once, hovering shows the hooks' calls
    and CPU per call, a click zooms, ?s= searches."""
    need_chromium()
    out = hs.outdir("svg-sampled")
    p = hs.hookscope(["report", "tests/unit/profiles/sampled", "--format", "svg", "-o", out], timeout=120)
    hs.eq(p.returncode, 0, "report --format svg: " + p.stderr.decode(errors="replace"))
    svg = os.path.join(hs.ROOT, out, "flamegraph.svg")
    hs.eq(read(svg, "rb"), read(os.path.join(PROFILES, "sampled", "flamegraph.svg"), "rb"),
          "hookscope.exe's flamegraph.svg is the golden one")
    xml.dom.minidom.parse(svg)   # well-formed XML
    with cdp.Browser() as b:
        b.open(url(out + "/flamegraph.svg"))
        frames = b.evaluate(JS_FRAMES)
        hs.eq(sorted(f["name"] for f in frames),
              sorted(["all", "BaseThreadInitThunk", "main", "burn_a", "burn_b", "memcpy", "fib", "fib", "fib",
                      "kernel32.dll+0x1234", "worker", "ntdll.dll+0x9000"]), "the frames")
        r = b.evaluate("hsSearch('^burn_')")
        hs.eq(r, {"frames": 2, "matched": 180, "total": 200, "share": 0.9}, "search ^burn_")
        hits = sorted(f["name"] for f in b.evaluate(JS_FRAMES) if f["hit"])
        hs.eq(hits, ["burn_a", "burn_b"], "highlighted frames")
        hs.eq(b.evaluate("document.getElementById('matched').textContent"), "Matched: 90.00% (180 of 200 samples)",
              "the matched share shown")
        r = b.evaluate("hsSearch('fib')")
        hs.eq((r["frames"], r["matched"]), (3, 15), "recursion is counted once")
        b.evaluate("hsClearSearch()")
        x, y = frame_center(b, "burn_b")
        b.mouse("mouseMoved", x, y)
        tip = b.evaluate("[].slice.call(document.querySelectorAll('#tiptext tspan')).map(function (t) "
                         "{ return t.textContent; })")
        hs.eq(tip, ["burn_b", "module: burn.exe", "samples: 120 (60.00%)",
                    "calls: 1,000 (counted by the hooks, all stacks)",
                    "CPU per call: 120 us (estimated from 120 samples)"], "the tooltip")
        hs.eq(b.evaluate("document.getElementById('tip').getAttribute('visibility')"), "visible", "tooltip shown")
        b.click(x, y)
        after = {f["name"]: f for f in b.evaluate(JS_FRAMES) if f["name"] in ("burn_b", "burn_a", "main", "memcpy")}
        hs.eq((after["burn_b"]["rx"], after["burn_b"]["rw"]), (10.0, 1180.0), "the clicked frame fills the width")
        hs.check(not after["burn_a"]["shown"], "a sibling is hidden after the zoom")
        hs.check(after["main"]["anc"] and after["main"]["rw"] == 1180.0, "an ancestor spans the width, faded")
        hs.eq(after["memcpy"]["rw"], round(1180 * 20 / 120, 1), "a child scales with the zoom")
        b.evaluate("hsReset()")
        hs.eq([f["rw"] for f in b.evaluate(JS_FRAMES) if f["name"] == "burn_b"], [708.0], "reset")
        b.open(url(out + "/flamegraph.svg") + "?s=memcpy")
        hs.eq(b.evaluate("document.getElementById('matched').textContent"), "Matched: 10.00% (20 of 200 samples)",
              "?s= in the URL searches")
        hs.eq(b.errors, [], "console errors")


def test_svg_entry_stacks_of_a_run_in_chromium():
    """A real run without samples: the flame graph of the entry stacks
    (demo.exe --stacks=8); the search share of ^fib$ equals the captures
    of the stacks through fib (entry-stacks.folded), up to the merged
    narrow frames; a click on fib zooms."""
    need_chromium()
    hs.need(DEMO)
    t = hs.trace(DEMO, options=["--stacks=8", "--no-sample"], name="svg-demo")
    hs.eq(t.rc, 0, "run")
    folded = t.file("entry-stacks.folded")
    total = sum(int(line.rsplit(" ", 1)[1]) for line in folded.splitlines())
    through_fib = sum(int(line.rsplit(" ", 1)[1]) for line in folded.splitlines()
                      if re.search(r"(^|;)demo\.exe!fib(;| )", line))
    with cdp.Browser() as b:
        b.open(url(t.out + "/flamegraph.svg"))
        frames = b.evaluate(JS_FRAMES)
        names = {f["name"] for f in frames}
        hs.check({"all", "main", "fib", "is_even", "is_odd"} <= names,
                 f"expected frames in {sorted(n for n in names if n)[:20]}")
        hs.eq([f["v"] for f in frames if f["name"] == "all"], [total], "the root holds every capture")
        merged = sum(f["v"] for f in frames if f["name"] is None)
        r = b.evaluate("hsSearch('^fib$')")
        hs.check(abs(r["matched"] - through_fib) <= merged and r["matched"] <= through_fib,
                 f"search ^fib$: {r['matched']} of {total}, the stacks through fib hold {through_fib}")
        x, y = frame_center(b, "fib")
        b.click(x, y)
        shown = [f for f in b.evaluate(JS_FRAMES) if f["shown"] and not f["anc"]]
        top = min(shown, key=lambda f: f["d"])
        hs.eq((top["name"], top["rx"], top["rw"]), ("fib", 10.0, 1180.0), "the clicked fib fills the width")
        hs.check(all(f["d"] > top["d"] for f in shown if f is not top), "only its callees are shown above it")
        hs.eq(b.errors, [], "console errors")


def test_svg_100k_unique_stacks():
    """100,000 unique stacks (tests/support/gen_profile.py): at most 20,000
    boxes, the file within its bound, loads in Chromium without errors,
    and search works."""
    need_chromium()
    src = hs.outdir("svg-100k-src")
    subprocess.run([sys.executable, os.path.join(hs.ROOT, "tests", "support", "gen_profile.py"),
                    os.path.join(hs.ROOT, src), "100000"], check=True, timeout=120)
    out = hs.outdir("svg-100k")
    p = hs.hookscope(["report", src, "--format", "svg", "-o", out], timeout=300)
    hs.eq(p.returncode, 0, "report --format svg: " + p.stderr.decode(errors="replace"))
    svg = os.path.join(hs.ROOT, out, "flamegraph.svg")
    size = os.path.getsize(svg)
    hs.check(size < 12 * 1024 * 1024, f"flamegraph.svg of 100,000 stacks is {size} bytes")
    with cdp.Browser() as b:
        b.open(url(out + "/flamegraph.svg"), timeout=120)
        frames = b.evaluate(JS_FRAMES, timeout=120)
        hs.check(100 < len(frames) <= 20000, f"{len(frames)} boxes")
        hs.check(any(f["name"] is None for f in frames), "narrow frames are merged")
        r = b.evaluate("hsSearch('^fn_[12]$')", timeout=120)
        hs.check(r["frames"] > 0 and 0 < r["share"] <= 1, f"search: {r}")
        hs.eq(b.errors, [], "console errors")


# --- speedscope ---------------------------------------------------------------------


VALIDATE = """
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
bad = 0
for path in sys.argv[2:]:
    errors = list(jsonschema.Draft7Validator(schema).iter_errors(json.load(open(path))))
    for e in errors[:3]:
        print(path + ": " + e.message)
    bad += bool(errors)
sys.exit(1 if bad else 0)
"""


def validate_speedscope(paths):
    if not os.path.exists(SCHEMA):
        raise hs.Skip("the speedscope npm package is not in build/npm (make deps installs it)")
    if subprocess.run([DEBIAN_PYTHON, "-c", "import jsonschema"], capture_output=True, timeout=60).returncode:
        raise hs.Skip("python3-jsonschema is not installed (make deps installs it)")
    return subprocess.run([DEBIAN_PYTHON, "-c", VALIDATE, SCHEMA] + paths, capture_output=True, text=True,
                          timeout=120)


def test_speedscope_valid_against_the_schema():
    """Every saved profile's profile.speedscope.json and a real run's are
    valid against speedscope's own schema; a broken one is not (so the
    check can fail); the CPU profiles' weights add up to the samples."""
    hs.need(DEMO)
    t = hs.trace(DEMO, options=["--stacks=6"], name="speedscope-demo")
    hs.eq(t.rc, 0, "run")
    paths = [os.path.join(PROFILES, d, "profile.speedscope.json") for d in sorted(os.listdir(PROFILES))
             if os.path.exists(os.path.join(PROFILES, d, "profile.speedscope.json"))]
    paths.append(os.path.join(hs.ROOT, t.out, "profile.speedscope.json"))
    r = validate_speedscope(paths)
    hs.eq(r.returncode, 0, "schema validation: " + r.stdout + r.stderr)
    broken = os.path.join(hs.OUT, "broken.speedscope.json")
    doc = json.loads(read(paths[0]))
    doc["profiles"][0]["weights"] = ["60"]
    with open(broken, "w") as f:
        json.dump(doc, f)
    r = validate_speedscope([broken])
    hs.check(r.returncode == 1 and "is not valid" in r.stdout, "a broken file is refused: " + r.stdout[:300])
    # samples weigh the sampling interval each (1 ms at the saved profile's 1000 Hz)
    doc = json.loads(read(os.path.join(PROFILES, "sampled", "profile.speedscope.json")))
    cpu = sum(sum(p["weights"]) for p in doc["profiles"] if p["name"].startswith("CPU samples"))
    hs.eq(cpu, 200, "CPU weights = the run's 200 samples of 1 ms")
    run = json.loads(read(os.path.join(hs.ROOT, t.out, "profile.speedscope.json")))["profiles"]
    entry = [sum(p["weights"]) for p in run if p["name"].startswith("hooked calls by entry stack")]
    hs.eq(entry, [sum(s["count"] for s in t.json["stacks"])], "the entry stacks' weights = the captures")
    smp = t.json["sampling"]
    ms = 1000.0 / smp["rate_hz"]
    for kind, total in (("CPU samples", smp["samples"]), ("wait samples", smp["wait_samples"])):
        got = sum(sum(p["weights"]) for p in run if p["name"].startswith(kind))
        hs.check(abs(got - total * ms) < 1e-6 * max(1, got), "the run's %s profiles' weights %g = its %s x %g ms"
                 % (kind, got, kind, ms))


# --- callgrind ------------------------------------------------------------------------


def annotate(path):
    if not shutil.which("callgrind_annotate"):
        raise hs.Skip("callgrind_annotate is not installed (make deps installs valgrind)")
    p = subprocess.run(["callgrind_annotate", "--inclusive=no", "--tree=caller", "--threshold=100", path], capture_output=True,
                       text=True, timeout=120)
    hs.eq(p.returncode, 0, "callgrind_annotate: " + p.stderr)
    total = re.search(r"^([\d,]+) \([\d.]+%\)\s+PROGRAM TOTALS", p.stdout, re.M)
    calls, callee = {}, None
    # --tree=caller: the callers ("< file:fn (Nx) [obj]") come before their callee ("* file:fn [obj]")
    pending = []
    for line in p.stdout.splitlines():
        m = re.match(r"^\s*[\d,]+(?: \(\s*[\d.]+%\))?\s+<\s+\?\?\?:(.+?) \(([\d,]+)x\) \[(.+)\]$", line)
        if m:
            pending.append((m.group(1), int(m.group(2).replace(",", ""))))
            continue
        m = re.match(r"^\s*[\d,]+(?: \(\s*[\d.]+%\))?\s+\*\s+\?\?\?:(.+?) \[(.+)\]$", line)
        if m:
            callee = m.group(1)
            for caller, n in pending:
                calls[(caller, callee)] = calls.get((caller, callee), 0) + n
            pending = []
    return int(total.group(1).replace(",", "")) if total else None, calls


def annotate_self(path, inclusive=False):
    """callgrind_annotate's self (or inclusive) cost per function: {(object, function): samples}."""
    if not shutil.which("callgrind_annotate"):
        raise hs.Skip("callgrind_annotate is not installed (make deps installs valgrind)")
    p = subprocess.run(["callgrind_annotate", "--inclusive=" + ("yes" if inclusive else "no"), "--threshold=100", path],
                       capture_output=True, text=True, timeout=120)
    hs.eq(p.returncode, 0, "callgrind_annotate: " + p.stderr)
    got = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^\s*([\d,]+)(?: \(\s*[\d.]+%\))?\s+\?\?\?:(.+?) \[(.+)\]$", line)
        if m and int(m.group(1).replace(",", "")):
            got[(m.group(3), m.group(2))] = got.get((m.group(3), m.group(2)), 0) + int(m.group(1).replace(",", ""))
    return got


def leaf_self(report):
    """Self CPU samples by leaf frame of report.json's sample stacks:
    {(module, function): samples}, an address outside any function as its
    own function ("module+0xoff")."""
    got = {}
    for s in report["sample_stacks"]:
        leaf = s["frames"][0]
        mod, bang, fn = leaf.partition("!")
        key = (mod, fn.rpartition("+0x")[0] or fn) if bang else (leaf.partition("+")[0], leaf)
        got[key] = got.get(key, 0) + s["count"]
    return got


def check_inclusive(path, report, exact, what):
    """callgrind_annotate's inclusive cost of each function is at most the
    samples with it on the stack (report.json's total, recursion counted
    once per stack), and equal for the functions in `exact` (whose callees
    on every stack have call lines)."""
    inc = annotate_self(path, inclusive=True)
    for f in report["functions"]:
        total = (f.get("samples") or {}).get("total", 0)
        got = inc.get((f["module"], f["name"]), 0)
        hs.check(got <= total, f"{what}: {f['name']}'s inclusive cost {got} is above its {total} samples on the stack")
        if f["name"] in exact:
            hs.eq(got, total, f"{what}: {f['name']}'s inclusive cost = its samples on the stack")


def edges_by_name(report):
    d = {}
    for e in report["edges"]:
        k = (e["caller"], e["callee"])
        d[k] = d.get(k, 0) + e["calls"]
    return d


def test_callgrind_read_by_callgrind_annotate():
    """callgrind_annotate reads the saved sampled profile's callgrind.out
    with totals equal to its 200 samples and every call count equal to the
    hooks' edges; every function's self cost is its samples as leaf frame
    of report.json's stacks (the saved sampled profiles); and a real
    sampled run's, with every edge's count, its samples as the total and
    each function's self cost; inclusive costs count a recursive function
    once per stack (fib's inclusive cost is its samples on the stack)."""
    total, calls = annotate(os.path.join(PROFILES, "sampled", "callgrind.out"))
    hs.eq(total, 200, "PROGRAM TOTALS = the CPU samples")
    report = json.loads(read(os.path.join(PROFILES, "sampled", "report.json")))
    hs.eq(calls, edges_by_name(report), "call counts = the hooks' edges")
    for d in ("sampled", "sampled_slower"):
        report = json.loads(read(os.path.join(PROFILES, d, "report.json")))
        hs.eq(annotate_self(os.path.join(PROFILES, d, "callgrind.out")), leaf_self(report),
              f"{d}: self costs = the samples by leaf frame of report.json's stacks")
        check_inclusive(os.path.join(PROFILES, d, "callgrind.out"), report, {"main", "fib", "burn_a"}, d)
    hs.need(DEMO)
    # fib(40): about 1 s of CPU hooked, most of its running samples in
    # hookscope's entry stubs (fib is a leaf that costs less than its
    # hook): dozens of fib's own (fib(38) gave 6 on a machine at load 8,
    # where Wine's sampler thread waits behind the target's)
    t = hs.trace(DEMO, ["40"], options=["--sample-rate", "1000"], name="callgrind-demo")
    hs.eq(t.rc, 0, "run")
    hs.check(t.json["sampling"]["samples"] >= 10, f"{t.json['sampling']['samples']} CPU samples")
    total, calls = annotate(os.path.join(hs.ROOT, t.out, "callgrind.out"))
    want = {k: v for k, v in edges_by_name(t.json).items() if v}
    hs.eq(calls, want, "a real run's call counts = its edges")
    hs.eq(total, t.json["sampling"]["samples"], "a real run's PROGRAM TOTALS = its CPU samples")
    hs.eq(annotate_self(os.path.join(hs.ROOT, t.out, "callgrind.out")), leaf_self(t.json),
          "a real run's self costs = its samples by leaf frame")
    check_inclusive(os.path.join(hs.ROOT, t.out, "callgrind.out"), t.json, {"fib"}, "fib(40), recursive")


# --- speedscope and dtrace against the folded stacks ----------------------------------


def folded(text):
    """A .folded file: {stack: count} (counts of a repeated stack added)."""
    out = {}
    for line in text.splitlines():
        st, _, n = line.rpartition(" ")
        out[st] = out.get(st, 0) + int(n)
    return out


def fold_speedscope(doc, rate_hz):
    """Each sampled profile of a speedscope file folded back, root first,
    frames as module!function (an address: as named), weighted; profiles
    of one kind (CPU samples, wait samples, hooked calls by entry stack)
    added over threads: {kind: {stack: weight}}."""
    frames = doc["shared"]["frames"]

    def name(i):
        f = frames[i]
        if "file" not in f or f["name"].startswith(f["file"] + "+"):
            return f["name"]
        return f"{f['file']}!{f['name']}"

    out = {}
    for prof in doc["profiles"]:
        hs.eq(prof["type"], "sampled", f"profile {prof['name']}")
        kind = re.split(r",| \(", prof["name"])[0]
        d = out.setdefault(kind, {})
        # samples weigh the sampling interval each (milliseconds); entry stacks their counts
        timed = kind in ("CPU samples", "wait samples") and rate_hz > 0
        per = 1000.0 / rate_hz if timed else 1
        hs.eq(prof["unit"], "milliseconds" if timed else "none", f"profile {prof['name']}'s unit")
        for sample, w in zip(prof["samples"], prof["weights"]):
            k = ";".join(name(i) for i in sample)
            n = w / per
            hs.check(abs(n - round(n)) < 1e-6, f"{prof['name']}: weight {w} is a whole number of {per} ms intervals")
            d[k] = d.get(k, 0) + round(n)
        hs.check(abs(prof["endValue"] - sum(prof["weights"])) < 1e-6 * max(1, prof["endValue"]),
                 f"{prof['name']}: endValue {prof['endValue']} is the sum of its weights")
    return out


def untruncated(stacks):
    """Folded stacks without their "[truncated]" root (speedscope shows a
    cut stack from its deepest frame, with no mark)."""
    out = {}
    for k, v in stacks.items():
        k = k[len("[truncated];"):] if k.startswith("[truncated];") else k
        out[k] = out.get(k, 0) + v
    return out


def dtrace_as_folded(text, report):
    """`--format dtrace` of samples folded by collapse-dtrace's rules, its
    frames written as the .folded files write them (module`function ->
    module!function; module`0xADDR -> module+0xOFF from the module's base
    in report.json; a bare 0xADDR, in no module, stays so)."""
    bases = {m["name"]: int(m["base"], 16) for m in report["modules"] + report.get("loaded_modules", [])}
    out = {}
    for k, v in collapse_dtrace(text).items():
        frames = []
        for f in k.split(";"):
            mod, tick, fn = f.partition("`")
            if not tick:
                frames.append(f)   # an address no module covers: 0xADDR in both
            else:
                frames.append(f"{mod}+{int(fn, 16) - bases[mod]:#x}" if fn.startswith("0x") else f"{mod}!{fn}")
        key = ";".join(frames)
        out[key] = out.get(key, 0) + v
    return out


def check_against_folded(d, report, what):
    """Directory d's speedscope profiles and `report --format dtrace`
    against its .folded files."""
    doc = json.loads(read(os.path.join(d, "profile.speedscope.json")))
    got = fold_speedscope(doc, report.get("sampling", {}).get("rate_hz", 0))
    files = {"CPU samples": "cpu-stacks.folded", "wait samples": "wait-stacks.folded",
             "hooked calls by entry stack": "entry-stacks.folded"}
    for kind, name in files.items():
        p = os.path.join(d, name)
        want = untruncated(folded(read(p))) if os.path.exists(p) else {}
        hs.eq(got.get(kind, {}), want, f"{what}: speedscope's {kind} folded back = {name}")
    hs.eq(sorted(set(got) - set(files)), [], f"{what}: speedscope profiles of other kinds")
    if report.get("sampling", {}).get("samples"):
        p = hs.hookscope(["report", os.path.relpath(d, hs.ROOT), "--format", "dtrace"], timeout=120)
        hs.eq(p.returncode, 0, f"{what}: report --format dtrace ({p.stderr!r})")
        hs.eq(dtrace_as_folded(p.stdout.decode().replace("\r\n", "\n"), report),
              folded(read(os.path.join(d, "cpu-stacks.folded"))),
              f"{what}: --format dtrace folded by collapse-dtrace's rules = cpu-stacks.folded")


def test_speedscope_and_dtrace_fold_back_to_the_folded_stacks():
    """profile.speedscope.json's sampled profiles, folded back, are the
    .folded files' stacks with their weights (CPU, wait, entry stacks);
    `report --format dtrace` of the CPU samples, folded by collapse-dtrace's
    rules, is cpu-stacks.folded: for every saved profile and a real run
    with samples and entry stacks."""
    for name in sorted(os.listdir(PROFILES)):
        d = os.path.join(PROFILES, name)
        if os.path.exists(os.path.join(d, "report.json")):
            check_against_folded(d, json.loads(read(os.path.join(d, "report.json"))), name)
    hs.need(DEMO)
    # a stack captured at every call would be nearly all the CPU (hookscope's
    # own samples, not the program's): one call in 10,000, and fib(36) for
    # enough of the program's own CPU samples
    t = hs.trace(DEMO, ["36"], options=["--sample-rate", "1000", "--stacks=8", "--stack-every", "10000"],
                 name="formats-demo")
    hs.eq(t.rc, 0, "run")
    hs.check(t.json["sampling"]["samples"] and t.json["stacks"], "samples and entry stacks")
    check_against_folded(os.path.join(hs.ROOT, t.out), t.json, "demo")


# --- report ---------------------------------------------------------------------------


def test_report_formats_and_views():
    """report --format NAME writes that output to stdout byte for byte;
    --sort/--top/--threads shape report.txt; what a run lacks is refused
    with one line."""
    sampled = "tests/unit/profiles/sampled"
    p = hs.hookscope(["report", sampled, "--format", "json"], timeout=120)
    hs.eq((p.returncode, p.stdout), (0, read(os.path.join(PROFILES, "sampled", "report.json"), "rb")),
          "--format json to stdout")
    p = hs.hookscope(["report", sampled, "--format", "dtrace"], timeout=120)
    hs.eq((p.returncode, p.stdout), (0, read(os.path.join(PROFILES, "sampled", "dtrace"), "rb")),
          "--format dtrace to stdout")
    p = hs.hookscope(["report", sampled, "--sort", "cpu", "--top", "2", "--threads"], timeout=120)
    text = p.stdout.decode()
    hs.eq(p.returncode, 0, "--sort cpu")
    rows = re.findall(r"^ +(\d+) +(\d+)  (\w+) ", text, re.M)
    hs.eq(rows, [("1000", "100", "burn_b"), ("100", "60", "burn_a")], "--sort cpu --top 2")
    hs.check("threads: the calls the hooks counted" in text and re.search(r"^ +11 +1 +5 +0 +50 +0 +-$", text, re.M),
             "--threads table: " + text)
    lateload = "tests/unit/profiles/lateload"
    p = hs.hookscope(["report", lateload, "--sort", "cpu"], timeout=120)
    hs.eq((p.returncode, p.stderr.decode().strip()), (2, "hookscope: --sort cpu needs CPU samples, and this run has none"),
          "--sort cpu without samples")
    p = hs.hookscope(["report", "tests/golden/demo", "--format", "svg"], timeout=120)
    hs.eq(p.returncode, 125, "--format svg without stacks: " + p.stderr.decode())
    hs.check(p.stderr.decode().startswith("hookscope: this run has nothing for --format svg"), p.stderr.decode())
    p = hs.hookscope(["report", sampled, "--format", "svg", "--sort", "calls"], timeout=60)
    hs.eq(p.returncode, 2, "--sort with --format svg")
    p = hs.hookscope(["report", sampled, "--format", "pdf"], timeout=60)
    hs.eq(p.returncode, 2, "--format pdf")


def test_same_name_functions_stay_apart():
    """lua.exe has two functions named sprintf (rva 0x165e0 and 0x1f4d0):
    traced with samples and entry stacks, each keeps its own calls, callers,
    callee edge and samples, report.txt and the stack outputs show them
    apart as sprintf@0x165e0 and sprintf@0x1f4d0, and `hookscope report`
    writes every file of the run again byte for byte."""
    fx = hs.fixture("lua-workload")
    t = hs.trace(fx["program"], fx["args"], options=["--sample-rate", "1000", "--stacks=6", "--stack-every", "1000"],
                 name="same_name_lua", cwd=fx["cwd"], timeout=300)
    hs.eq(t.rc, fx["exit_code"], "lua's exit code: " + t.stderr.decode(errors="replace"))
    j = t.json
    by_rva = {f["rva"]: f for f in j["functions"] if f["module"] == "lua.exe"}
    named = sorted(f["rva"] for f in by_rva.values() if f["name"] == "sprintf")
    hs.eq(named, ["0x165e0", "0x1f4d0"], "lua.exe's functions named sprintf")
    vs = [r for r, f in by_rva.items() if f["name"] == "__mingw_vsprintf"]
    hs.eq(len(vs), 1, "one __mingw_vsprintf")
    label = {"0x165e0": "sprintf@0x165e0", "0x1f4d0": "sprintf@0x1f4d0"}
    for rva in named:
        f = by_rva[rva]
        hs.check(f["calls"] > 1000, f"sprintf@{rva} called ({f['calls']})")
        into = [e for e in j["edges"] if e["callee_module_id"] == 0 and e["callee_rva"] == rva]
        out = [e for e in j["edges"] if e.get("caller_rva") == rva and e.get("caller_module_id") == 0]
        hs.eq(sum(e["calls"] for e in into), f["calls"], f"sprintf@{rva}: its callers' calls add up to its calls")
        hs.eq([(e["callee_rva"], e["calls"]) for e in out], [(vs[0], f["calls"])],
              f"sprintf@{rva}: its own edge to __mingw_vsprintf, one call per call")
        row = re.search(r"^ +(\d+)  %s +lua\.exe$" % re.escape(label[rva]), t.txt, re.M)
        hs.check(row and int(row.group(1)) == f["calls"], f"report.txt's row of {label[rva]}")
        hs.check(re.search(r"^    <- +%d  %s$" % (f["calls"], re.escape(label[rva])), t.txt, re.M),
                 f"report.txt: __mingw_vsprintf's caller {label[rva]} with {f['calls']} calls")
    hs.check(not re.search(r"\bsprintf\b(?!@)", t.txt), "report.txt names no sprintf without its rva")
    # every sampled frame in a sprintf says which one; the samples of each
    # are counted from the stacks that name it
    counted = {rva: [0, 0] for rva in named}
    for kind in ("sample_stacks", "wait_stacks"):
        for st in j[kind]:
            seen = set()
            for k, fr in enumerate(st["frames"]):
                if not fr.startswith("lua.exe!sprintf+"):
                    continue
                rva = st.get("frame_rvas", [None] * len(st["frames"]))[k]
                hs.check(rva in counted, f"{kind}: a sprintf frame without its rva: {st}")
                if rva not in seen and kind == "sample_stacks":
                    counted[rva][1] += st["count"]
                    counted[rva][0] += st["count"] if k == 0 else 0
                seen.add(rva)
    for rva in named:
        s = by_rva[rva].get("samples", {"self": 0, "total": 0})
        hs.eq([s["self"], s["total"]], counted[rva], f"sprintf@{rva}: its CPU samples (self, total)")
    hs.check(sum(c[1] for c in counted.values()) > 0, "no CPU sample in either sprintf (1000 Hz)")
    for st in j["stacks"]:
        if st["function"] == "sprintf":
            hs.check(st.get("rva") in counted, f"an entry stack of sprintf without its rva: {st}")
    for name in ("cpu-stacks.folded", "wait-stacks.folded", "entry-stacks.folded", "callgrind.out",
                 "profile.speedscope.json", "flamegraph.svg"):
        text = t.file(name)
        # (a flame graph box too narrow for its whole label shows its start
        # and "..": sprintf@0x1f4d0 may show as "sprintf..")
        hs.check(not re.search(r"\bsprintf\b(?!@|\.\.)", text), f"{name} names no sprintf without its rva")
    for name in ("entry-stacks.folded", "callgrind.out", "profile.speedscope.json"):
        hs.check("sprintf@0x1f4d0" in t.file(name) and "sprintf@0x165e0" in t.file(name), f"{name} names both sprintf")
    again = hs.outdir("same_name_lua_again")
    p = hs.hookscope(["report", "-q", "-o", again, t.out], timeout=300)
    hs.eq(p.returncode, 0, "report DIR: " + p.stderr.decode(errors="replace"))
    files = sorted(f for f in os.listdir(os.path.join(hs.ROOT, t.out)) if not f.startswith("."))
    hs.eq(sorted(f for f in os.listdir(os.path.join(hs.ROOT, again)) if not f.startswith(".")), files,
          "report DIR writes the run's files")
    for f in files:
        hs.check(read(os.path.join(hs.ROOT, t.out, f), "rb") == read(os.path.join(hs.ROOT, again, f), "rb"),
                 f"{f} written again by `hookscope report` differs")


# --- diff -----------------------------------------------------------------------------


def test_diff_finds_the_slower_function():
    """spin.exe against spin_slow.exe (slow_part does 100 times the work,
    the same calls), both with --time: ordered by self time (exact, where
    the samples of a short run are few), slow_part comes first and grew; a
    run against itself shows no change; -o writes diff.txt as printed and
    a differential flame graph."""
    a, b = hs.need(f"{T}/spin.exe"), hs.need(f"{T}/spin_slow.exe")
    ta = hs.trace(a, options=["--time", "--stacks=4"], name="diff-a")
    tb = hs.trace(b, options=["--time", "--stacks=4"], name="diff-b")
    hs.eq((ta.rc, tb.rc), (0, 0), "runs")
    out = hs.outdir("diff-ab")
    p = hs.hookscope(["diff", ta.out, tb.out, "-o", out], timeout=120)
    hs.eq(p.returncode, 0, "diff: " + p.stderr.decode())
    text = p.stdout.decode()
    rows = [line for line in text.splitlines() if re.match(r"^ +(\d+|-) ", line)]
    first = rows[0].split()
    hs.check("by the largest change of self time first" in text, "ordered by self time (both ran with --time): " + text[:400])
    hs.eq((first[-2], first[0], first[1], first[2]), ("slow_part", "50", "50", "+0"), "the first row: " + rows[0])
    hs.check(re.search(r" \+\d+(\.\d+)? (ns|us|ms|s)  slow_part ", rows[0]), "slow_part's self time grew: " + rows[0])
    hs.eq(read(os.path.join(hs.ROOT, out, "diff.txt"), "rb"), p.stdout, "diff.txt = what diff printed")
    xml.dom.minidom.parse(os.path.join(hs.ROOT, out, "diff-flamegraph.svg"))
    p = hs.hookscope(["diff", ta.out, ta.out], timeout=120)
    text = p.stdout.decode()
    hs.eq(p.returncode, 0, "diff A A")
    hs.check(re.search(r"^no change: the \d+ functions have the same figures in both runs$", text, re.M), text)
    for line in text.splitlines():
        if re.match(r"^ +\d+ ", line):
            cols = line.split()
            hs.eq(cols[2], "+0", "calls change: " + line)
    p = hs.hookscope(["diff", ta.out, tb.out, "--sort", "calls"], timeout=120)
    hs.eq(p.returncode, 0, "diff --sort calls: " + p.stderr.decode())
    hs.check("by the largest change of calls first" in p.stdout.decode(), p.stdout.decode()[:400])
    # --sort total: main grew through its callee as much as slow_part itself (inclusive time)
    p = hs.hookscope(["diff", ta.out, tb.out, "--sort", "total"], timeout=120)
    hs.eq(p.returncode, 0, "diff --sort total: " + p.stderr.decode())
    text = p.stdout.decode()
    hs.check("by the largest change of total time (inclusive) first" in text, text[:400])
    hs.check(re.search(r"change +total A +total B +change +function", text), "the inclusive columns: " + text[:600])
    rows = [line for line in text.splitlines() if re.match(r"^ +(\d+|-) ", line)]
    hs.eq(sorted(r.split()[-2] for r in rows[:2]), ["main", "slow_part"], "the two largest total changes: " + text[:900])
    p = hs.hookscope(["diff", ta.out, tb.out, "--sort", "avg"], timeout=60)
    hs.eq((p.returncode, p.stderr.decode().splitlines()[0]),
          (2, "hookscope: diff orders by the change of calls, self, total or cpu, not avg"), "diff --sort avg")
    # two programs: matched by name alone, and said
    other = "tests/unit/profiles/dupnames"
    p = hs.hookscope(["diff", ta.out, other], timeout=60)
    hs.eq(p.returncode, 0, "diff of two programs: " + p.stderr.decode())
    hs.check(re.match(r"hookscope: warning: \S+ and \S+ are runs of two programs \(\d+ of \d+ functions in both\): "
                      r"functions are matched by name alone$", p.stderr.decode().strip()), p.stderr.decode())
    hs.check("\nwarning: A ran spin.exe and B ran fmt.exe, and only " in p.stdout.decode(), p.stdout.decode()[:500])
    p = hs.hookscope(["diff", ta.out, tb.out], timeout=60)
    hs.check("warning" not in p.stderr.decode() + p.stdout.decode(), "spin.exe and spin_slow.exe: one program, "
             "two builds (most functions in both): " + p.stderr.decode())
    p = hs.hookscope(["diff", ta.out], timeout=60)
    hs.eq(p.returncode, 2, "diff needs two runs")
    p = hs.hookscope(["diff", ta.out, "build/test-out/no-such-run"], timeout=60)
    hs.eq(p.returncode, 125, "diff of a missing run")
    hs.check(p.stderr.decode().startswith("hookscope: cannot read build/test-out/no-such-run/report.json"),
             p.stderr.decode())


# --- dtrace ---------------------------------------------------------------------------


def dtrace_agg(text):
    """A DTrace @[probefunc] = count() aggregation: {name: count}."""
    d = {}
    for line in text.splitlines():
        m = re.match(r"^  (\S.*?) +(\d+)$", line)
        if m:
            d[m.group(1)] = d.get(m.group(1), 0) + int(m.group(2))
    return d


def collapse_dtrace(text):
    """inferno's collapse-dtrace: skip to the first blank line; frames
    (trimmed, cut at the last '+') until a line that is a number; root
    first, joined by ';'. Returns {stack: count}."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and lines[i].strip():
        i += 1
    out, stack = {}, []
    for line in lines[i + 1:]:
        t = line.strip()
        if not t:
            continue
        if t.isdigit():
            k = ";".join(reversed(stack))
            out[k] = out.get(k, 0) + int(t)
            stack = []
            continue
        stack.append(t.rsplit("+", 1)[0] if "+" in t else t)
    return out


def test_dtrace_fpid_counts_equal_the_hooks():
    """The fpid/pid one-liners: @[probefunc] on demo.exe = the calls a plain
    run counts, per function; on spin.exe, @[probefunc, ustack()] of
    slow_* adds up to slow_part's calls and @[ustack()] to every call; -o
    appends."""
    hs.need(DEMO)
    t = hs.trace(DEMO, name="dtrace-ref")
    hs.eq(t.rc, 0, "run")
    calls = {k: v for k, v in t.calls("demo.exe").items() if v}
    outfile = os.path.join(hs.OUT, "dtrace-fpid.out")
    if os.path.exists(outfile):
        os.remove(outfile)
    rel = os.path.relpath(outfile, hs.ROOT)
    p = hs.hookscope(["dtrace", "-n", "fpid$target:demo::entry { @[probefunc] = count(); }", "-o", rel,
                      "-c", DEMO], timeout=300)
    hs.eq(p.returncode, 0, "dtrace: " + p.stderr.decode())
    first = read(outfile)
    hs.check(first.startswith("\n  "), "a blank line, then the records")
    hs.eq(dtrace_agg(first), calls, "@[probefunc] = the hooks' calls")
    counts = [int(line.split()[-1]) for line in first.splitlines() if line.strip()]
    hs.eq(counts, sorted(counts), "ascending by count")
    hs.check(re.search(r"pid \d+: %d calls counted, 0 CPU samples" % sum(calls.values()), p.stderr.decode()),
             p.stderr.decode())
    # stacks: a program with few distinct stacks, so that the stack tables
    # (6,144 unique stacks per thread) hold every one; demo.exe's deep fib
    # recursion has more, and dtrace says how many were dropped
    spin = hs.need(f"{T}/spin.exe")
    ts = hs.trace(spin, name="dtrace-ref-spin")
    spin_calls = {k: v for k, v in ts.calls("spin.exe").items() if v}
    p = hs.hookscope(["dtrace", "-q", "-n", "pid$target:spin:slow_*:entry { @[probefunc, ustack()] = count(); }",
                      "-o", rel, "-c", spin], timeout=300)
    hs.eq(p.returncode, 0, "dtrace: " + p.stderr.decode())
    both = read(outfile)
    hs.check(both.startswith(first), "-o appends, as dtrace does")
    second = both[len(first):]
    keys = re.findall(r"^  (\S+) +\n", second, re.M)
    hs.check(keys and set(keys) == {"slow_part"}, f"only slow_part: {set(keys)}")
    stacks = collapse_dtrace(second)
    hs.eq(sum(stacks.values()), spin_calls["slow_part"], "the stacks of slow_part add up to its calls")
    # the probefunc key line is read as one more frame by collapse-dtrace, as
    # with DTrace's own output
    hs.check(all(k.endswith("spin.exe`main;spin.exe`slow_part;slow_part") for k in stacks),
             f"leaf slow_part, caller main: {stacks}")
    os.remove(outfile)
    p = hs.hookscope(["dtrace", "-q", "-n", "fpid$target:spin::entry { @[ustack()] = count(); }", "-o", rel,
                      "-c", spin], timeout=300)
    hs.eq(p.returncode, 0, "dtrace ustack")
    folded = collapse_dtrace(read(outfile))
    hs.eq(sum(folded.values()), sum(spin_calls.values()), "@[ustack()] adds up to every call")


def test_dtrace_refuses_what_it_does_not_support():
    p = hs.hookscope(["dtrace", "-n", "syscall:::entry { @[probefunc] = count(); }", "-c", DEMO], timeout=60)
    err = p.stderr.decode().replace("\r\n", "\n")
    hs.eq(p.returncode, 2, "exit status")
    hs.check(err.count("\n") == 1 and err.startswith("hookscope dtrace: unsupported D program:") and
             "supported: profile-N" in err, err)
    p = hs.hookscope(["dtrace", "-n", "profile-997 { @[ustack()] = count(); }"], timeout=60)
    hs.eq((p.returncode, p.stderr.decode().replace("\r\n", "\n")),
          (2, "hookscope dtrace: nothing to trace: give -c 'CMD ARGS' or -p PID\n"), "no -c or -p")


DTRACE_EXE = "build/bin/hookscope-dtrace.exe"
CARGO_PROGRAM = "profile-997 /pid == $target/ { @[ustack(100)] = count(); }"


def cargo_flamegraph(outfile, workload):
    """cargo-flamegraph's exact argument vector (flamegraph-rs src/lib.rs):
    '-c' joins the workload with spaces, each space inside an argument
    written '\\ '."""
    escaped = " ".join(a.replace(" ", "\\ ") for a in workload)
    return hs.wine([DTRACE_EXE, "-x", "ustackframes=100", "-n", CARGO_PROGRAM, "-o", outfile, "-c", escaped],
                   timeout=300)


def test_dtrace_exe_takes_cargo_flamegraphs_arguments():
    """hookscope-dtrace.exe: --help exits 0; cargo-flamegraph's argument
    vector reaches the program with its arguments intact (spaces too) and
    -o gets DTrace's output (a leading blank line)."""
    hs.need(DTRACE_EXE)
    hs.need(f"{T}/echo.exe")
    p = hs.wine([DTRACE_EXE, "--help"], timeout=60)
    hs.eq(p.returncode, 0, "--help")
    hs.check(b"usage: hookscope dtrace" in p.stdout, p.stdout.decode(errors="replace"))
    out = os.path.relpath(os.path.join(hs.OUT, "cargo-flamegraph.stacks"), hs.ROOT)
    if os.path.exists(os.path.join(hs.ROOT, out)):
        os.remove(os.path.join(hs.ROOT, out))
    p = cargo_flamegraph(out, [f"{T}/echo.exe", "arg with spaces", "other", "C:\\path\\x"])
    hs.eq(p.returncode, 0, "exit status: " + p.stderr.decode(errors="replace"))
    hs.eq(p.stdout.decode().replace("\r\n", "\n"),
          "arg 1: [arg with spaces]\narg 2: [other]\narg 3: [C:\\path\\x]\n", "the program's arguments")
    text = read(os.path.join(hs.ROOT, out))
    hs.check(text.startswith("\n"), "DTrace's output starts with a blank line")


def test_dtrace_exe_cargo_flamegraph_samples():
    """cargo-flamegraph's profile-997 program: the stacks folded by
    collapse-dtrace's rules add up to the run's CPU samples; nothing is
    hooked (as dtrace's profile provider, it only samples)."""
    hs.need(DTRACE_EXE)
    hs.need(DEMO)
    out = os.path.relpath(os.path.join(hs.OUT, "cargo-flamegraph-samples.stacks"), hs.ROOT)
    if os.path.exists(os.path.join(hs.ROOT, out)):
        os.remove(os.path.join(hs.ROOT, out))
    # fib(38): about 0.15 s of CPU, tens of samples in it even on a loaded machine
    p = cargo_flamegraph(out, [DEMO, "38"])
    hs.eq(p.returncode, 0, "exit status: " + p.stderr.decode(errors="replace"))
    m = re.search(r"hookscope dtrace: pid \d+: 0 calls counted, (\d+) CPU samples", p.stderr.decode())
    hs.check(m, p.stderr.decode())
    folded = collapse_dtrace(read(os.path.join(hs.ROOT, out)))
    hs.check(any("demo.exe`fib" in k for k in folded), f"stacks through fib: {sorted(folded)[:5]}")
    hs.eq(sum(folded.values()), int(m.group(1)), "the folded counts = the CPU samples")
    hs.check(all(len(k.split(";")) <= 100 for k in folded), "at most 100 frames (ustackframes)")


# --- the progress line ------------------------------------------------------------------


def run_on_pty(args, timeout=120):
    """hookscope with stderr on a terminal; returns what the terminal got."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([os.path.join(hs.ROOT, "hookscope")] + args, cwd=hs.ROOT, env=hs.env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    data = b""
    import select
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 1)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        raise AssertionError("hookscope did not end")
    # Wine draws its console on a terminal with escape sequences (cursor
    # moves for spaces among them): keep the text
    return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", data).decode(errors="replace")


def test_progress_line_on_a_terminal_only():
    """With stderr on a terminal, a run shows elapsed time, calls and
    samples, rewritten in place ('\\r'); with -q it does not; with stderr a
    pipe (every other test) it never does."""
    loop = hs.need(f"{T}/loop.exe")
    text = run_on_pty(["run", "-d", "1.5", "-o", hs.outdir("progress"), "--", loop])
    lines = re.findall(r"hookscope: ?(\d+\.\d) ?s, ?([\d,]+) ?calls, ?(\d+) ?samples", text)
    hs.check(len(lines) >= 2 and "\r" in text, "progress lines: " + repr(text[-400:]))
    calls = [int(c.replace(",", "")) for _, c, _ in lines]
    hs.eq(calls, sorted(calls), "the calls only grow")
    hs.check(calls[-1] > 0, "calls counted while running")
    samples = [int(n) for _, _, n in lines]
    hs.eq(samples, sorted(samples), "the samples only grow")
    hs.check(samples[-1] > 0, "samples taken while running")
    quiet = run_on_pty(["run", "-q", "-d", "1", "-o", hs.outdir("progress-q"), "--", loop])
    hs.check("calls," not in quiet.replace(" ", "") or "samples" not in quiet, "-q: " + repr(quiet[-300:]))
    p = hs.hookscope(["run", "-d", "1", "-o", hs.outdir("progress-pipe"), "--", loop], timeout=120)
    hs.check(not re.search(rb"[\d.]+ s, [\d,]+ calls, \d+ samples", p.stderr) and not re.search(rb"\r(?!\n)", p.stderr)
             and b"hooked in 1 module" in p.stderr, "no progress into a pipe: " + repr(p.stderr))


PROBES_WARNING = r"hookscope's probes cost (\d+)x the program's own time \(([\d.]+) s capturing entry stacks"


def test_probes_costing_more_than_the_program_are_named():
    """A program that is nearly all calls (callheavy: three million
    one-addition calls 40 frames deep, a few ms untraced), with an entry stack at every call: the
    probes cost more than 10x the program's own time, and report.txt,
    report.json and the progress line say so; counted only (no slow path
    but the first call's), nothing is said."""
    exe = hs.need(f"{T}/callheavy.exe")
    # 3 million calls 40 frames deep, each captured whole (--stacks=64):
    # a capture walks some 45 frames against the program's own ~10 ns a
    # call (its calls counted; its start and exit under Wine). (7 frames
    # deep, the captures got fast enough that the ratio stayed at 11-12
    # however many calls.)
    t = hs.trace(exe, ["3000000", "40"], options=["--stacks=64"], name="probes-heavy")
    warned = [w for w in t.json["warnings"] if re.match(PROBES_WARNING, w)]
    hs.eq(len(warned), 1, f"the warning in report.json: {t.json['warnings']}")
    ratio, secs = re.match(PROBES_WARNING, warned[0]).groups()
    hs.check(int(ratio) >= 10 and float(secs) > 0, warned[0])   # said above 10x, shown rounded
    with open(os.path.join(hs.ROOT, t.out, "report.txt"), encoding="utf-8") as f:
        hs.check("warning    " + warned[0] in f.read(), "the warning in report.txt")
    plain = hs.trace(exe, name="probes-plain")
    hs.eq([w for w in plain.json["warnings"] if "probes cost" in w], [], "counting only: no warning")
    text = run_on_pty(["run", "--stacks=64", "-o", hs.outdir("probes-progress"), "--", exe, "3000000", "40"])
    hs.check(re.search(r"probes ?\d+x ?the ?program", text),
             "the progress line: " + repr(text[-400:]))


def test_dtrace_several_pids():
    """dtrace -p A -p B: both processes are attached at once, and the one
    aggregation adds up their calls (each counted by its own attach)."""
    exe = hs.need(f"{T}/attachee.exe")
    dtrace_pids([exe, exe])


def dtrace_pids(exes):
    """dtrace -p for a running attachee of each of exes, all at once: one
    line per process, the aggregation adds up their calls, work counted,
    every result of work() right while hooked."""
    import time
    procs = []
    try:
        for exe in exes:
            p = hs.Process([exe])
            procs.append(p)
        pids = []
        for p in procs:
            m = re.fullmatch(r"pid (\d+) code-matches 1", p.readline(timeout=30))
            hs.check(m, "attachee did not start")
            pids.append(m.group(1))
        out = os.path.join(hs.OUT, "dtrace-pids.out")
        if os.path.exists(out):
            os.remove(out)
        cmd = [os.path.join(hs.ROOT, "hookscope"), "dtrace", "-n", "fpid$target:attachee::entry { @[probefunc] = count(); }",
               "-o", os.path.relpath(out, hs.ROOT)] + [a for pid in pids for a in ("-p", pid)]
        d = subprocess.Popen(cmd, cwd=hs.ROOT, env=hs.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        try:
            # both attached: the agent is mapped in both processes
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not all(hs.agent_mappings(p.proc.pid) for p in procs):
                time.sleep(0.2)
            hs.check(all(hs.agent_mappings(p.proc.pid) for p in procs), "not attached to both within 60 s")
            # and hooked: the agent mapped is not yet the patches in (a
            # 32-bit agent's install, which waits for its function list, can
            # take longer than the half second this test once waited)
            while time.monotonic() < deadline and not all(
                    hs.code_differences(p.proc.pid, exe, hs.image_base(exe)) for p, exe in zip(procs, exes)):
                time.sleep(0.2)
            hs.check(all(hs.code_differences(p.proc.pid, exe, hs.image_base(exe)) for p, exe in zip(procs, exes)),
                     "not hooked in both within 60 s")
            time.sleep(0.5)
            verdicts = []
            for p in procs:
                p.send(b"stop\n")
                verdicts.append(p.readline(timeout=30))
            stdout, stderr = d.communicate(timeout=120)
        finally:
            if d.poll() is None:
                os.killpg(d.pid, 9)
                d.wait(timeout=30)
        hs.eq(d.returncode, 0, "dtrace: " + stderr.decode(errors="replace"))
        counted = re.findall(r"hookscope dtrace: pid (\d+): (\d+) calls counted", stderr.decode())
        hs.eq(sorted(p for p, _ in counted), sorted(pids), "one line per process")
        agg = dtrace_agg(read(out))
        hs.check(agg.get("work", 0) > 0, f"work counted: {agg}")
        hs.eq(sum(agg.values()), sum(int(c) for _, c in counted), "the aggregation adds up both processes' calls")
        # each target's own verdict: every result of work() right while it
        # was hooked (its code differs from the file then: still attached)
        for v in verdicts:
            m = re.fullmatch(r"bad (\d+) calls (\d+) code-matches (-?\d+)", v)
            hs.check(m, f"unexpected last line {v!r}")
            hs.eq(int(m.group(1)), 0, f"wrong results in a traced target ({v})")
            hs.check(int(m.group(2)) > 0, f"the target made no calls ({v})")
    finally:
        for p in procs:
            p.close()
