"""hookscope attach to a running 32-bit (i386) program with entry stacks
and a filter (test_wow64.test_wow64_attach_detach_twice attaches with the
defaults): the attach tests' program (tests/targets/attachee.c) built for
i686, two threads calling work() without pause. Only work is hooked; its
caller edges and the caller frame of its entry stacks are worker's, the
stacks adding up to its calls; after the detach the code bytes are the
file's, the 32-bit agent is gone and every result was right."""
import hs
import test_attach as attach

EXE = f"{hs.TARGETS32}/attachee.exe"
BASE = 0x400000   # the i686 exe's image base (no relocation under Wine)


def test_wow64_attach_stacks_and_filter():
    hs.need_wow64()
    hs.need(EXE)
    p, pid = attach.start(EXE)
    with p:
        t = hs.attach(pid, ["--duration", "2", "--no-sample", "--stacks=4", "-f", "work"], name="wow64_attach_stacks",
                      timeout=60)
        hs.eq((t.rc, t.json["target"]["stop"], t.json["target"]["pid"]), (0, "detach", pid), "exit code, stop, pid")
        hs.eq([f["name"] for f in t.functions("attachee.exe") if f["hooked"]], ["work"], "only work hooked")
        work = t.calls("attachee.exe")["work"]
        hs.check(work > 0, "work was not counted")
        hs.eq({(e["caller"], e["calls"]) for e in t.json["edges"] if e["callee"] == "work"}, {("worker", work)},
              "work's caller edges")
        stacks = [s for s in t.json["stacks"] if s["function"] == "work"]
        hs.eq({s["frames"][1].rpartition("+0x")[0] for s in stacks}, {"attachee.exe!worker"},
              "the caller frame of work's entry stacks")
        hs.eq(sum(s["count"] for s in stacks), work, "work's entry stacks add up to its calls")
        hs.eq(hs.code_differences(p.proc.pid, EXE, BASE), 0, "code bytes after the detach")
        hs.eq(hs.agent_mappings(p.proc.pid), [], "the agent is still mapped after the detach")
        bad, calls, matches = attach.finish(p)
        hs.eq((bad, matches), (0, 1), "wrong results of work, and code-matches as the target sees it")
        hs.check(work <= calls, f"counted {work} calls of work, but the target made only {calls}")
