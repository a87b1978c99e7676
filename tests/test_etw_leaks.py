"""ETW never leaks, in whole runs against the fake of the ETW functions
(tests/support/etw_fake_dll.c, through HOOKSCOPE_ETW_API; Wine has no
ETW):

- a session left running by a hookscope that was killed (named
  hookscope-<pid>-<n>-i<interval>, its process gone) is stopped at the next
  start and the interval it recorded put back, in one line each; a live
  hookscope's session and other tools' sessions are left alone;
- the session's file is capped (MaximumFileSize) and a file at its cap is
  said in one line and in the report;
- a stop that fails is tried again by name; ERROR_MORE_DATA is a stop; a
  session that stops neither way is said in one line, its file left;
- `auto` falls back to the suspend sampler on every StartTrace error and
  says why with -v;
- a machine that records no samples at all (another driver holds the
  profiling interrupt): found by flushing and reading the trace right
  after the session starts (the target still held), one line with
  `--sampler etw`, the suspend sampler with `auto`; and a trace that has
  none at the end says so in one line and in the report (too late then to
  fall back).
"""
import os
import re

import hs
from test_etw_run import FAKE, MACHINE_INTERVAL, SPLIT, fake_run, final, interval_put_back


def calls(log):
    return final(log).get("call", [])


def test_leftover_session_of_a_dead_hookscope():
    script = ("leftover hookscope-999999-2-i10000\n"       # a killed hookscope's, which set 2500
              "leftover hookscope-$SELF-77-i5000\n"          # (this process's: alive)
              "leftover UIforETW\n"
              "sample 5 exe+0x1000\n")
    t, log = fake_run("etw_leak_leftover", script, ["--sampler", "etw"], target=SPLIT, args=["0.1"],
                      env={"HS_FAKE_ETW_INTERVAL": "2500"})
    err = t.stderr.decode(errors="replace").replace("\r\n", "\n")
    hs.eq(t.rc, 0, f"exit code ({err!r})")
    hs.check("hookscope: stopped ETW session hookscope-999999-2-i10000, left running by a hookscope that ended "
             "(process 999999)\n" in err, f"one line for the stopped session: {err!r}")
    hs.check("hookscope: the machine's sampling interval is back at 10000" in err, f"the interval line: {err!r}")
    st = final(log)
    hs.eq(sorted(r for r in st.get("other-running", []) if "999999" in r or "UIforETW" in r), ["UIforETW"],
          "the dead hookscope's session is stopped, another tool's is not")
    hs.check(any("77-i5000" in r for r in st.get("other-running", [])), "a live hookscope's session is left alone")
    # the clean-up puts back the interval the dead hookscope's session
    # recorded (10000), then the run sets its own and puts it back
    interval_put_back(log, "after the clean-up and the run", sets_before=1)
    hs.eq(t.json["sampling"]["samples"], 5, "the run samples as usual")
    hs.eq(st["maxsize"], ["1024"], "the session's file is capped at 1024 MB")
    hs.check(re.fullmatch(r"hookscope-\d+-\d+-i10000", st["session"][0]),
             f"its name records the interval to put back: {st['session']}")


def test_every_start_error_falls_back_under_auto():
    for code in (5, 1450, 161, 183, 87, 8, 32, 1):
        t, log = fake_run("etw_leak_start", f"fail start {code}\n", ["-v"], target=SPLIT, args=["0.1"])
        err = t.stderr.decode(errors="replace")
        hs.eq(t.rc, 0, f"StartTrace error {code}: exit code ({err[-400:]!r})")
        hs.eq(t.json["sampling"]["backend"], "suspend", f"StartTrace error {code}: the sampler that ran")
        hs.check(re.search(r"cannot start an ETW session: .*; sampling with the suspend sampler instead", err),
                 f"StartTrace error {code}: -v says why: {err[-600:]!r}")
        if log:
            hs.eq(final(log)["interval"], [str(MACHINE_INTERVAL)], f"error {code}: the interval afterwards")


def test_stop_retried_by_name():
    for script, retried in (("fail stop 6\n", True), ("fail stop 234\n", False)):
        t, log = fake_run("etw_leak_stop", script + "sample 4 exe+0x1000\n", ["--sampler", "etw"], target=SPLIT,
                          args=["0.1"])
        hs.eq(t.rc, 0, f"{script.strip()}: exit code ({t.stderr!r})")
        stops = [c for c in calls(log) if c.startswith("stop")]
        hs.eq(stops, ["stop 1", "stop-name 1"] if retried else ["stop 1"], f"{script.strip()}: the stops")
        interval_put_back(log, script.strip())
        hs.eq(t.json["sampling"]["samples"], 4, f"{script.strip()}: the trace is read")


def test_session_that_does_not_stop():
    t, log = fake_run("etw_leak_nostop", "fail stop 6\nfail stop-name 5\nsample 4 exe+0x1000\n",
                      ["--sampler", "etw"], target=SPLIT, args=["0.1"])
    err = t.stderr.decode(errors="replace").replace("\r\n", "\n")
    lines = [ln for ln in err.splitlines() if "did not stop" in ln]
    hs.eq(len(lines), 1, f"one line: {err!r}")
    hs.check(re.fullmatch(r"hookscope: the ETW session (hookscope-\d+-\d+-i10000) did not stop \(.*\): its trace is "
                          r"still being written; `logman stop \1 -ets` stops it", lines[0]), lines[0])
    hs.check(lines[0][len("hookscope: "):] in t.json["warnings"], "the report says it too")
    hs.check(os.path.exists(os.path.join(hs.ROOT, t.out, "hookscope.etl")), "its file is left as it is")
    hs.eq(final(log)["interval"], [str(MACHINE_INTERVAL)], "the interval is put back all the same")


def test_file_at_its_cap():
    t, log = fake_run("etw_leak_full", "fill\nsample 4 exe+0x1000\n", ["--sampler", "etw"], target=SPLIT,
                      args=["0.1"])
    err = t.stderr.decode(errors="replace")
    hs.check(re.search(r"hookscope: the ETW trace reached its cap of 1024 MB: the samples after that are missing",
                       err), f"one line: {err!r}")
    hs.check(any("reached its cap of 1024 MB" in w for w in t.json["warnings"]), "the report says it too")
    hs.check(not os.path.exists(os.path.join(hs.ROOT, t.out, "hookscope.etl")), "the file is removed after")


def test_no_samples_at_all():
    # --sampler etw: one line, the target does not run
    t, log = fake_run("etw_leak_none", "nosamples\n", ["--sampler", "etw"], target=SPLIT, args=["0.1"])
    err = t.stderr.decode(errors="replace")
    hs.eq(t.rc, 125, f"refused ({err!r})")
    lines = err.splitlines()
    hs.eq(len(lines), 1, f"one line: {lines}")
    hs.check(lines[0].startswith("hookscope: ETW recorded no CPU samples in its first seconds: another driver holds "
                                 "the profiling interrupt"), lines[0])
    hs.eq(t.stdout, b"", "the target did not run")
    interval_put_back(log, "no samples, etw")
    hs.check(any(c == "flush 3" for c in calls(log)), "it looked by flushing the trace")
    # auto: the suspend sampler, -v says why
    t, log = fake_run("etw_leak_none_auto", "nosamples\n", ["-v"], target=SPLIT, args=["0.1"])
    err = t.stderr.decode(errors="replace")
    hs.eq(t.rc, 0, f"auto runs ({err[-400:]!r})")
    hs.eq(t.json["sampling"]["backend"], "suspend", "auto falls back")
    hs.check(re.search(r"ETW recorded no CPU samples in its first seconds: .*; sampling with the suspend sampler "
                       r"instead", err), f"-v says why: {err[-600:]!r}")
    interval_put_back(log, "no samples, auto")


def test_no_samples_in_the_end():
    t, log = fake_run("etw_leak_none_after", "nosamples-after\nsample 4 exe+0x1000\n", ["--sampler", "etw"],
                      target=SPLIT, args=["0.1"])
    err = t.stderr.decode(errors="replace")
    hs.eq(t.rc, 0, f"exit code ({err!r})")
    lines = [ln for ln in err.splitlines() if "no CPU samples" in ln]
    hs.eq(len(lines), 1, f"one line: {err!r}")
    hs.check(lines[0].startswith("hookscope: ETW recorded no CPU samples: another driver holds the profiling "
                                 "interrupt"), lines[0])
    hs.check(lines[0][len("hookscope: "):] in t.json["warnings"], "the report says it too")
    hs.eq(t.json["sampling"]["samples"], 0, "no samples")
