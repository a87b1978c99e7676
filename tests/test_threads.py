"""Many threads: counter regions of threads that ended are folded into the
shared region and reused, so counts stay exact (edges, stacks and times
too) and new threads keep the fast path."""
import re

import hs


def churn(options, name, n=600, calls=1000, together=4):
    exe = hs.need("build/tests/churn.exe")
    t = hs.trace(exe, [str(n), str(calls), str(together)], options=options, name=name, timeout=600)
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, f"threads {n} calls {n * calls} bad 0\r\n".encode(), "stdout")
    c = t.calls("churn.exe")
    hs.eq(c["work"], n * calls, "calls of work")
    hs.eq(c["worker"], n, "calls of worker")
    return t


def test_region_reuse_exact():
    t = churn(["--max-threads", "8"], "churn_reuse")
    hs.check(t.json["regions_reused"] >= 500, f"regions reused: {t.json['regions_reused']}")
    hs.check(t.json["overflow_calls"] < 100_000, f"overflow calls: {t.json['overflow_calls']}")


def test_region_reuse_edges_stacks_time():
    t = churn(["--max-threads", "8", "--time", "--stacks=4"], "churn_all")
    hs.check(t.json["regions_reused"] >= 500, f"regions reused: {t.json['regions_reused']}")
    f = {x["name"]: x for x in t.functions("churn.exe")}
    hs.eq(f["worker"]["time"]["calls"], 600, "timed calls of worker")
    hs.eq(f["work"]["time"]["calls"], 600_000, "timed calls of work")
    edges = {(e["caller"], e["callee"]): e["calls"] for e in t.json["edges"]}
    hs.eq(edges[("worker", "work")], 600_000, "edge worker -> work")
    hs.eq(sum(c for (caller, callee), c in edges.items() if callee == "worker"), 600, "edges into worker")
    stacks = [s for s in t.json["stacks"] if s["function"] == "work"]
    hs.eq(sum(s["count"] for s in stacks), 600_000, "entry stacks of work")
    hs.check(all(s["frames"][1].startswith("churn.exe!worker+") for s in stacks), "work is called by worker")


def test_short_threads_reuse_regions_and_stay_timed():
    """shortthreads.exe: 200 threads one after another reuse the region of
    the one before (its handle signaled: no fresh region after the first
    few, whatever --max-threads allows), and 300 started at once; every
    call counted, and with --time every call of every hooked function is
    timed, the exe's TLS callbacks too, which run under the loader lock at
    a thread's start and end (in the burst, a thread under that lock with
    no region at hand counts them untimed rather than wait: said in the
    report)."""
    exe = hs.need("build/tests/shortthreads.exe")
    for args, opts, name in ((["lat", "200", "1000"], ["--time", "--no-sample"], "short_lat"),
                             (["run", "300", "2000"], ["--time"], "short_burst")):
        n, m = int(args[1]), int(args[2])
        t = hs.trace(exe, args, options=opts, name=name, timeout=600)
        hs.eq(t.rc, 0, f"{name}: exit code ({t.stderr!r})")
        hs.check(f"calls {n * m} bad 0" in t.stdout.decode(), f"{name}: stdout {t.stdout!r}")
        f = {x["name"]: x for x in t.functions("shortthreads.exe")}
        hs.eq(f["leaf"]["calls"], n * m, f"{name}: calls of leaf")
        untimed = {k: (x["calls"], x["time"]["calls"]) for k, x in f.items()
                   if x["calls"] and x.get("time") and x["time"]["calls"] + x["time"]["open"] != x["calls"]}
        if args[0] == "lat":
            hs.eq(untimed, {}, f"{name}: functions with calls not timed (calls, timed)")
            hs.check("not seen to end" not in t.txt, f"{name}: report.txt names calls not seen to end")
        else:
            # a thread under the loader lock with no region at hand does not
            # wait for one: its calls there count in the overflow region,
            # untimed, and report.txt names them
            missing = sum(c - tc for c, tc in untimed.values())
            hs.check(set(untimed) <= {"__dyn_tls_init", "__dyn_tls_dtor", "__mingw_TLScallback",
                                      "__mingwthr_run_key_dtors.part.0"}, f"{name}: untimed {untimed}")
            hs.check(missing <= t.json["overflow_calls"], f"{name}: {missing} untimed, "
                     f"{t.json['overflow_calls']} counted in the overflow region")
            hs.check(not untimed or "not seen to end" in t.txt, f"{name}: report.txt names the untimed calls")
        used = t.json["threads"]
        hs.eq(used + t.json["regions_reused"], n + 1, f"{name}: regions taken (fresh {used})")
        if args[0] == "lat":
            hs.check(used <= 12, f"{name}: {used} fresh regions for threads that ran one after another")


def test_agent_work_per_thread_start_and_end_in_verbose():
    """-v says how much of each thread's start and end is the agent's own
    work (its cycles in DLL_THREAD_ATTACH, the first hooked call's region,
    the RtlExitUserThread detour, DLL_THREAD_DETACH) and how many times
    each ran: shortthreads.exe lat 20 10 starts 20 threads one after
    another; its main thread takes a region too, and ends the process
    with ExitProcess (no thread exit of its own)."""
    exe = hs.need("build/tests/shortthreads.exe")
    t = hs.trace(exe, ["lat", "20", "10"], options=["-v", "--no-sample"], name="thread_costs", timeout=300)
    hs.eq(t.rc, 0, f"exit code ({t.stderr!r})")
    line = [x for x in t.stderr.decode().splitlines() if "agent's work per thread:" in x]
    hs.eq(len(line), 1, f"-v lines on the agent's work per thread: {t.stderr!r}")
    costs = {what: (float(mean), float(median), int(n)) for what, mean, median, n in
             re.findall(r"(\w[\w ]*) ([0-9.]+) us \(median ([0-9.]+)\) x (\d+)", line[0])}
    hs.eq({k: n for k, (_, _, n) in costs.items() if k != "attach"}, {"region": 21, "exit call": 20, "detach": 20},
          f"times each ran: {line[0]}")
    hs.check(costs["attach"][2] >= 20, f"attaches: {costs['attach']}")
    hs.check(all(mean > 0 and median > 0 for mean, median, _ in costs.values()), f"cycles measured: {costs}")


def test_regions_passed_on_keep_edge_table_entries_exact():
    """edgechurn.exe: threads one after another each call work() from 8
    call sites (5 more than a function block keeps inline: entries of the
    region's edge table, which a fold visits by the list of the ones its
    thread filled) or from 160 (more than that list holds: the fold walks
    the whole table); every region is passed on, and no edge is lost or
    counted twice."""
    exe = hs.need("build/tests/edgechurn.exe")
    for sites in (8, 160):
        n, r = 40, 50
        t = hs.trace(exe, [str(n), str(r), str(sites)], options=["--max-threads", "4", "--no-sample"],
                     name=f"edgechurn_{sites}", timeout=300)
        hs.eq(t.rc, 0, f"{sites} sites: exit code ({t.stderr!r})")
        hs.eq(t.stdout, f"threads {n} calls {n * r * sites}\r\n".encode(), f"{sites} sites: stdout")
        hs.eq(t.calls("edgechurn.exe")["work"], n * r * sites, f"{sites} sites: calls of work")
        into = {}
        for e in t.json["edges"]:
            if e["callee"] == "work":
                into[e["caller"]] = into.get(e["caller"], 0) + e["calls"]
        hs.eq(into, {f"sites{sites}": n * r * sites}, f"{sites} sites: edges into work")
        hs.check(t.json["regions_reused"] >= n - 4, f"{sites} sites: regions reused {t.json['regions_reused']}")
