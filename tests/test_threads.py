"""Many threads: counter regions of threads that ended are folded into the
shared region and reused, so counts stay exact (edges, stacks and times
too) and new threads keep the fast path."""
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
