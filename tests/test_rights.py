"""The rights the target runs with, and whom attach refuses
(injector/trace/rights.h).

Wine 8 gives every process an elevated token of a split pair (elevation
type "full") whose linked, unelevated token any process can use, so the
real path runs here: a plain `run` starts the target with the linked
token (the target sees elevation type 3, "limited"), `--elevated-target`
keeps it elevated (type 2), and the report says which.

What Wine cannot show runs against a fake of the token functions
(tests/support/token_fake_dll.c, through HOOKSCOPE_TOKEN_API): Windows'
linked token as an identification token (the restricted token of
hookscope's own is used then), both ways failing (one line, the target
never starts), a hookscope that is not elevated or is elevated alone, and
attach to a process of another user or to a protected process (one line).
"""
import os
import re

import hs

EXE = "build/tests/elevation.exe"
FAKE = "build/tests/token_fake.dll"


def run(name, opts=(), script=None, prog=None):
    """hookscope run of elevation.exe (or prog), with the fake when script
    is given; (CompletedProcess, Trace or None, the fake's log lines)."""
    out = hs.outdir("rights-" + name)
    extra, log = {}, os.path.join(hs.OUT, f"rights-{name}.log")
    if script is not None:
        path = os.path.join(hs.OUT, f"rights-{name}.script")
        os.makedirs(hs.OUT, exist_ok=True)
        with open(path, "w") as f:
            f.write(script)
        if os.path.exists(log):
            os.remove(log)
        extra = {"HOOKSCOPE_TOKEN_API": hs.need(FAKE), "HS_FAKE_TOKEN_SCRIPT": path, "HS_FAKE_TOKEN_LOG": log}
    p = hs.hookscope(["run", "-q", "--no-sample", "-o", out] + list(opts) + ["--", prog or hs.need(EXE)],
                     extra_env=extra)
    t = hs.Trace(p, out) if os.path.exists(os.path.join(hs.ROOT, out, "report.json")) else None
    calls = open(log).read().split("\n") if script is not None and os.path.exists(log) else []
    return p, t, [c for c in calls if c]


def rights_line(t):
    m = re.search(r"^rights +(.*)$", open(os.path.join(hs.ROOT, t.out, "report.txt")).read(), re.M)
    return m.group(1) if m else None


def test_elevated_run_gives_the_target_the_users_token():
    p, t, _ = run("linked")
    hs.eq(p.returncode, 0, f"run ({p.stderr.decode(errors='replace')})")
    hs.eq(p.stdout.decode().strip(), "elevation-type 3 elevated 0", "the target's token is the unelevated one")
    hs.eq(t.json["target"]["rights"], "user", "report.json says so")
    hs.check(rights_line(t).startswith("the user's, unelevated"), f"report.txt says so: {rights_line(t)!r}")


def test_elevated_target_keeps_administrator_rights():
    p, t, _ = run("kept", ["--elevated-target"])
    hs.eq(p.returncode, 0, f"run ({p.stderr.decode(errors='replace')})")
    hs.eq(p.stdout.decode().strip(), "elevation-type 2 elevated 1", "the target stays elevated")
    hs.eq(t.json["target"]["rights"], "administrator", "report.json says so")
    hs.eq(rights_line(t), "administrator (--elevated-target)", "report.txt says so")


def test_linked_token_refused_then_a_restricted_one():
    # Windows without SeTcbPrivilege: the linked token is an identification token
    p, t, calls = run("restricted", script="self full\nfail linked-dup 1346\n")
    hs.eq(p.returncode, 0, f"run ({p.stderr.decode(errors='replace')})")
    # 0x5: DISABLE_MAX_PRIVILEGE | LUA_TOKEN
    hs.eq(calls, ["linked", "duplicate primary", "restricted 0x5 S-1-5-32-544", "integrity S-1-16-8192",
                  "as-user restricted"], "the linked token tried, then a restricted medium-integrity token")
    hs.eq(t.json["target"]["rights"], "user-restricted", "report.json says so")
    hs.eq(t.json["total_calls"] > 0, True, "the target ran hooked")


def test_fake_linked_token_used():
    p, t, calls = run("fake-linked", script="self full\n")
    hs.eq(p.returncode, 0, f"run ({p.stderr.decode(errors='replace')})")
    hs.eq(calls, ["linked", "duplicate primary", "as-user linked"], "the linked token as a primary token")
    hs.eq(t.json["target"]["rights"], "user", "report.json says so")


def test_no_unelevated_token_no_start():
    p, t, calls = run("nostart", script="self full\nfail linked-dup 1346\nfail as-user 5\n")
    hs.eq(p.returncode, 125, "hookscope refuses")
    hs.eq(p.stdout, b"", "the target never ran")
    lines = p.stderr.decode().splitlines()
    hs.eq(len(lines), 1, f"one line: {lines}")
    hs.check(re.fullmatch(r"hookscope: cannot start '.*elevation\.exe': cannot start the target without "
                          r"administrator rights \(the user's token: .*; a restricted one: .*\); "
                          r"--elevated-target starts it with them", lines[0].strip()), lines[0])
    hs.check("create-process" not in calls, f"not started elevated instead: {calls}")


def test_elevated_target_with_the_fake():
    p, t, calls = run("fake-kept", ["--elevated-target"], script="self full\n")
    hs.eq(calls, ["create-process"], "started as hookscope is")
    hs.eq(t.json["target"]["rights"], "administrator", "report.json says so")


def test_not_elevated_has_no_rights_line():
    p, t, calls = run("plain", script="self none\n")
    hs.eq(p.returncode, 0, f"run ({p.stderr.decode(errors='replace')})")
    hs.eq(calls, ["create-process"], "started as hookscope is")
    hs.check("rights" not in t.json["target"], "report.json has no rights")
    hs.eq(rights_line(t), None, "report.txt has no rights line")


def test_elevated_without_split_token():
    p, t, calls = run("alone", script="self default\n")
    hs.eq(calls, ["create-process"], "no linked token to use")
    hs.eq(t.json["target"]["rights"], "administrator-only", "report.json says so")


def test_start_tried_again_when_the_system_start_up_fails():
    """Wine fails a start with ERROR_INTERNAL_ERROR (1359) when the new
    process dies in Wine's start-up before it ran (seen once in a CI run):
    hookscope starts it again, up to 3 times, and the run is as any other;
    a third failure is one line."""
    plain, _, _ = run("transient-none", script="self none\n")
    hs.eq(plain.returncode, 0, f"run ({plain.stderr.decode(errors='replace')})")
    p, t, calls = run("transient-2", script="self none\ntransient 1359 2\n")
    hs.eq(p.returncode, 0, f"run ({p.stderr.decode(errors='replace')})")
    hs.eq(calls, ["create-process"] * 3, "started a third time")
    hs.eq(p.stdout, plain.stdout, "the target's output, as in a run started at once")
    hs.check(t.json["total_calls"] > 0, "the target ran hooked")
    p, t, calls = run("transient-linked", script="self full\ntransient 1359 1\n")
    hs.eq(p.returncode, 0, f"run ({p.stderr.decode(errors='replace')})")
    hs.eq(calls, ["linked", "duplicate primary", "as-user linked", "as-user linked"],
          "the user's token, started a second time")
    hs.eq(t.json["target"]["rights"], "user", "report.json says so")
    p, t, calls = run("transient-3", script="self none\ntransient 1359 3\n")
    hs.eq(p.returncode, 125, "three failures: hookscope gives up")
    hs.eq(calls, ["create-process"] * 3, "three tries")
    hs.eq(p.stdout, b"", "the target never ran")
    lines = p.stderr.decode().splitlines()
    hs.eq(len(lines), 1, f"one line: {lines}")
    hs.check(re.fullmatch(r"hookscope: cannot start '.*elevation\.exe': .+", lines[0].strip()), lines[0])
    p, t, calls = run("transient-other", script="self none\ntransient 5 1\n")
    hs.eq((p.returncode, calls), (125, ["create-process"]), "another error is not tried again")


def attach_refused(name, line, script_for):
    with hs.Process([hs.need("build/tests/resident.exe")]) as target:
        m = re.fullmatch(r"pid (\d+) code-matches 1", target.readline(timeout=30))
        hs.check(m, "the target did not start")
        pid = m.group(1)
        path = os.path.join(hs.OUT, f"rights-{name}.script")
        os.makedirs(hs.OUT, exist_ok=True)
        with open(path, "w") as f:
            f.write(script_for(pid))
        out = hs.outdir("rights-" + name)
        p = hs.hookscope(["attach", pid, "-q", "-d", "1", "-o", out],
                         extra_env={"HOOKSCOPE_TOKEN_API": hs.need(FAKE), "HS_FAKE_TOKEN_SCRIPT": path})
        if line is None:
            hs.eq(p.returncode, 0, f"attach ({p.stderr.decode(errors='replace')})")
            return
        hs.eq(p.returncode, 125, "attach refuses")
        lines = p.stderr.decode().splitlines()
        hs.eq(len(lines), 1, f"one line: {lines}")
        hs.check(re.fullmatch(line.replace("PID", pid), lines[0].strip()), lines[0])
        hs.eq(hs.code_differences(target.proc.pid, "build/tests/resident.exe", 0x140000000), 0,
              "nothing went into the process")


def test_attach_to_another_users_process():
    attach_refused("otheruser", r"hookscope: process PID runs as another user: attach only to processes of your "
                   r"own user", lambda pid: f"other-user {pid}\n")


def test_attach_to_a_process_whose_token_is_hidden():
    attach_refused("hiddenuser", r"hookscope: process PID runs as another user \(its token cannot be read\): "
                   r"attach only to processes of your own user", lambda pid: f"hidden-user {pid}\n")


def test_attach_to_a_protected_process():
    attach_refused("protected", r"hookscope: process PID is a protected process \(protection 0x61\): Windows lets "
                   r"no profiler into it", lambda pid: f"protected {pid} 97\n")


def test_attach_to_own_process_with_the_fake():
    attach_refused("own", None, lambda pid: "self full\n")
