"""hookscope attach: hook a running process, count, take every patch out,
unload the agent and leave the process running as if nothing happened.

The target is tests/targets/attachee.c: two threads calling work() until a
line arrives on stdin; it prints "pid N code-matches 1" at start and
"bad B calls N code-matches M" at the end (M: its code bytes in memory
equal the file's). The tests also look from outside, through /proc/PID
of the Wine process: the code bytes (mem) while hooked and after each
detach, and whether the agent DLL is mapped (maps). Every wait has a timeout, so a hang fails the test."""
import json
import os
import re
import threading
import time

import hs

EXE = "build/tests/attachee.exe"
NO_SUCH_PID = 999996    # Wine's process ids are small multiples of 4


def err_lines(p):
    return [l for l in p.stderr.decode(errors="replace").splitlines() if l.strip()]


def start(proc_exe=EXE):
    """Start the target; returns (Process, its Windows pid)."""
    p = hs.Process([proc_exe])
    line = p.readline(timeout=30)
    m = re.fullmatch(r"pid (\d+) code-matches 1", line)
    if not m:
        p.close()
        raise AssertionError(f"unexpected first line {line!r}")
    return p, int(m.group(1))


def finish(p):
    """Send the line that ends the target; returns (bad, calls, code-matches)."""
    hs.check(p.alive(), "the target is not running any more")
    p.send(b"stop\n")
    line = p.readline(timeout=30)
    m = re.fullmatch(r"bad (\d+) calls (\d+) code-matches (-?\d+)", line)
    hs.check(m, f"unexpected last line {line!r}")
    hs.eq(p.wait(timeout=30), 0, "the target's exit code")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def check_attach(t, pid, what):
    """One attach/detach went right; returns calls of work counted."""
    hs.eq(t.rc, 0, f"{what}: hookscope's exit code (stderr {t.stderr!r})")
    hs.eq(err_lines(t.proc), [], f"{what}: stderr with -q")
    j = t.json
    hs.check(j is not None, f"{what}: no report")
    hs.eq(j["target"]["stop"], "detach", f"{what}: stop")
    hs.eq(j["target"]["pid"], pid, f"{what}: pid")
    hs.eq(j["target"]["exit_code"], None, f"{what}: no exit code (the target still runs)")
    hs.eq(j["tool"]["command"], "attach", f"{what}: tool.command")
    # the attachee is nearly all calls: with a stack at every call the
    # probes do cost more than 10x its own time, and the report says so
    hs.eq([w for w in j["warnings"] if not w.startswith("hookscope's probes cost ")], [], f"{what}: warnings")
    m = t.module("attachee.exe")
    hs.eq(m["main"], True, f"{what}: attachee.exe is the main module")
    hs.check(m["functions_hooked"] >= 0.97 * m["functions_found"],
             f"{what}: hooked {m['functions_hooked']} of {m['functions_found']}")
    hs.check(t.calls("attachee.exe")["work"] > 0, f"{what}: work was not counted")
    hs.eq(t.calls("attachee.exe").get("main", 0), 0, f"{what}: main was entered before the attach")
    return t.calls("attachee.exe")["work"]


def test_attach_detach_twice():
    hs.need(EXE)
    p, pid = start()
    with p:
        linux_pid = p.proc.pid
        hs.eq(hs.code_differences(linux_pid, EXE, 0x140000000), 0, "code bytes before any attach")
        hs.eq(hs.agent_mappings(linux_pid), [], "the agent is not loaded before any attach")
        # first attach; look at the code bytes from outside while hooked
        during = {}

        def peek():
            time.sleep(1.5)
            during["differ"] = hs.code_differences(linux_pid, EXE, 0x140000000)
            during["agent"] = len(hs.agent_mappings(linux_pid))

        peeker = threading.Thread(target=peek)
        peeker.start()
        t1 = hs.attach(pid, ["--duration", "3"], name="attach_1", timeout=60)
        peeker.join()
        work1 = check_attach(t1, pid, "first attach")
        base = int(t1.module("attachee.exe")["base"], 16)
        hs.eq(base, 0x140000000, "attachee.exe's base")
        hs.check(during.get("differ", 0) >= 5 * t1.module("attachee.exe")["functions_hooked"] // 2,
                 f"while attached only {during.get('differ')} code bytes differ from the file "
                 "(the patches were not in?)")
        hs.check(during.get("agent", 0) > 0, "the agent DLL is not mapped while attached")
        hs.eq(hs.code_differences(linux_pid, EXE, base), 0, "code bytes after the first detach")
        hs.eq(hs.agent_mappings(linux_pid), [], "the agent DLL is still mapped after the first detach")
        time.sleep(0.5)
        hs.check(p.alive(), "the target died after the first detach")

        # second attach to the same process
        t2 = hs.attach(pid, ["--duration", "2"], name="attach_2", timeout=60)
        work2 = check_attach(t2, pid, "second attach")
        hs.eq(hs.code_differences(linux_pid, EXE, base), 0, "code bytes after the second detach")
        hs.eq(hs.agent_mappings(linux_pid), [], "the agent DLL is still mapped after the second detach")
        time.sleep(0.5)
        bad, calls, matches = finish(p)
        hs.eq(bad, 0, "wrong results of work")
        hs.eq(matches, 1, "code-matches as the target sees it after both detaches")
        hs.check(work1 + work2 <= calls,
                 f"counted {work1} + {work2} calls of work, but the target made only {calls}")


def test_attach_no_such_process():
    p = hs.hookscope(["attach", str(NO_SUCH_PID), "-o", hs.outdir("attach_nopid")], timeout=60)
    hs.eq(p.returncode, 125, "exit code")
    lines = err_lines(p)
    hs.eq(len(lines), 1, f"one line on stderr: {lines}")
    hs.eq(lines[0], f"hookscope: no process has id {NO_SUCH_PID}", "stderr")
    hs.eq(p.stdout, b"", "stdout")


def test_attach_module_never_loaded():
    hs.need(EXE)
    p, pid = start()
    with p:
        t = hs.attach(pid, ["-m", "nosuch.dll", "--duration", "1"], name="attach_nosuch", timeout=60)
        hs.eq(t.rc, 0, "exit code: the attach itself went well")
        hs.eq(err_lines(t.proc), ["hookscope: module 'nosuch.dll' was never loaded by the target"],
              "stderr (with -q only the end's line)")
        hs.eq(t.json["modules"], [], "no module hooked")
        hs.eq(t.json["total_calls"], 0, "nothing counted")
        hs.eq(t.json["target"]["stop"], "detach", "stop")
        time.sleep(0.5)
        hs.check(p.alive(), "the target died")
        hs.eq(hs.code_differences(p.proc.pid, EXE, 0x140000000), 0, "code bytes")
        bad, calls, matches = finish(p)
        hs.eq((bad, matches), (0, 1), "bad, code-matches")
        hs.check(calls > 0, "the target made no calls")


def test_attach_with_expansion_tls_slot():
    """A target that took 80 TLS slots already: the agent's slot is an
    expansion slot (index >= 64), which stubs and the wrapper reach through
    the TEB's expansion array. Every mode must count and detach cleanly."""
    hs.need(EXE)
    p = hs.Process([EXE, "tls", "80"])
    with p:
        line = p.readline(timeout=30)
        m = re.fullmatch(r"pid (\d+) code-matches 1", line)
        hs.check(m, f"unexpected first line {line!r}")
        pid = int(m.group(1))
        for opts, name in (([], "tls_count"), (["--no-edges"], "tls_plain"),
                           (["--time", "--stacks=8"], "tls_time")):
            t = hs.attach(pid, ["--duration", "1"] + opts, name=f"attach_{name}")
            check_attach(t, pid, name)
            hs.check(t.json["tool"]["agent_tls_index"] >= 64,
                     f"{name}: the agent's TLS index is {t.json['tool']['agent_tls_index']}")
            if "--time" in opts:
                work = [f for f in t.functions("attachee.exe") if f["name"] == "work"][0]
                hs.check(work["time"]["calls"] > 0, f"{name}: work timed")
                hs.check(any(s["function"] == "work" for s in t.json["stacks"]), f"{name}: work's stacks")
        bad, calls, matches = finish(p)
        hs.eq(bad, 0, "wrong results")
        hs.eq(matches, 1, "code bytes equal the file's at the end")


def test_attach_with_timeline():
    """attach --timeline: the two workers' calls of work() from the attach
    to the detach are on the timeline, each on its own thread's track, the
    calls kept and dropped add up to the timed calls exactly (a 4,096-call
    ring: the workers call work() far faster than the drain takes them
    here, and wait for it to); the detach leaves the code as in the file, the agent gone and
    the target's results right."""
    hs.need(EXE)
    p, pid = start()
    with p:
        t = hs.attach(pid, ["--duration", "2", "--timeline", "--timeline-buffer", "4096", "--no-sample"],
                      name="attach_timeline", timeout=60)
        hs.eq(t.rc, 0, "hookscope's exit code: " + t.stderr.decode(errors="replace"))
        tl = t.json["timeline"]
        timed = sum(f["time"]["calls"] for f in t.functions("attachee.exe") if f.get("time"))
        hs.eq(sum(th["events"] + th["dropped_buffer"] + th["dropped_file"] for th in tl["threads"]), timed,
              f"kept + dropped = timed calls: {tl['threads']}")
        works = [th for th in tl["threads"] if th["events"] > 100]
        hs.eq(len(works), 2, f"the two workers: {tl['threads']}")
        hs.check(all(th.get("waits", 0) > 0 for th in works), f"the workers' rings filled and were waited for: {works}")
        trace = t.file("trace.json")
        hs.check(trace is not None, "trace.json written")
        evs = [e for e in json.loads(trace)["traceEvents"] if e["ph"] == "X"]
        hs.eq({e["tid"] for e in evs if e["name"] == "work"}, {th["tid"] for th in works},
              "work() on the workers' tracks")
        # the views a browser opens keep the first 2,000,000 calls, and say so
        kept = sum(th["events"] + th["open"] for th in tl["threads"])
        for name, said in (("profile.firefox.json", b'"hookscope left out '),
                           ("profile.speedscope.json", b' left out: a browser opens no larger file)')):
            with open(os.path.join(hs.ROOT, t.out, name), "rb") as f:
                data = f.read()
            hs.check(kept > 2000000 and len(data) < 512 << 20 and said in data,
                     f"{name}: {len(data)} bytes for {kept} calls, the calls left out said")
        linux_pid = p.proc.pid
        hs.eq(hs.code_differences(linux_pid, EXE, 0x140000000), 0, "code bytes after the detach")
        hs.eq(hs.agent_mappings(linux_pid), [], "the agent DLL is gone after the detach")
        bad, calls, matches = finish(p)
        hs.eq((bad, matches), (0, 1), "the target's results and code after the detach")
