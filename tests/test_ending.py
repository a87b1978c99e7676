"""Crash or exit, told apart by how the target ended (agent/exitwatch.c and
injector/trace/outcome.c), not by its exit code: tests/targets/ending.c ends in
each way it knows, after 10 calls of work(); tests/targets/cxxthrow.cpp
throws a C++ exception nobody catches.

For each: hookscope's exit status (Wine keeps the low byte of the code),
the report's stop, exit code, crash name and code, the one line hookscope
prints for a crash (with the function the exception happened in), and
that work() was counted 10 times."""
import re

import hs

EXE = "build/tests/ending.exe"


def run(args, exe=EXE, name=None):
    hs.need(exe)
    t = hs.trace(exe, args=args, name=name or "ending_" + "_".join(args).replace("-", "m"), timeout=120)
    hs.check(t.json is not None, f"no report; stderr {t.stderr!r}")
    calls = t.calls(exe.split("/")[-1])
    hs.eq(calls.get("work", calls.get("work(int)")), 10, "calls of work")
    return t


def crash_lines(t):
    return [l for l in t.stderr.decode(errors="replace").splitlines() if "the target crashed" in l]


def check_exit(args, code):
    t = run(args)
    hs.eq(t.json["target"]["stop"], "exit", f"{args}: stop")
    hs.eq(t.json["target"]["exit_code"], code, f"{args}: exit code")
    hs.eq(t.json["target"]["crash"], None, f"{args}: crash")
    hs.eq(t.rc, code & 0xFF, f"{args}: hookscope's exit status")
    hs.eq(crash_lines(t), [], f"{args}: no crash line")
    return t


def check_crash(args, exit_code, crash_code, name, where=None, exe=EXE):
    t = run(args, exe)
    j = t.json["target"]
    hs.eq(j["stop"], "crash", f"{args}: stop")
    hs.eq(j["exit_code"], exit_code, f"{args}: exit code")
    hs.eq(j["crash_code"], crash_code, f"{args}: crash code")
    hs.check(j["crash"].startswith(name), f"{args}: crash {j['crash']!r}, expected {name!r}")
    hs.eq(t.rc, exit_code & 0xFF, f"{args}: hookscope's exit status")
    lines = crash_lines(t)
    hs.eq(len(lines), 1, f"{args}: one crash line in {t.stderr!r}")
    expect = f"hookscope: the target crashed: 0x{crash_code:08X} ({name}"
    hs.check(lines[0].startswith(expect), f"{args}: {lines[0]!r} does not start with {expect!r}")
    if where:
        hs.check(re.search(r"\) at " + re.escape(where) + r"\+0x[0-9a-f]+; ", lines[0]),
                 f"{args}: {lines[0]!r} does not name {where}")
        hs.check(j["crash_address"] is not None, f"{args}: crash_address")
    hs.check(f"crashed: 0x{crash_code:08X} ({name}" in t.txt, f"{args}: report.txt")
    return t


def test_exit_with_a_crash_like_code_is_an_exit():
    # 0xC0000005 as an int: a normal exit with that code (cmd /c exit -1073741819)
    check_exit(["exit", "-1073741819"], 0xC0000005)


def test_return_from_main_is_an_exit():
    check_exit(["return", "3"], 3)


def test_terminate_itself_is_an_exit():
    check_exit(["terminate", "-1073741819"], 0xC0000005)


def test_exit_from_another_thread_is_an_exit():
    check_exit(["thread-exit", "5"], 5)


def test_filter_that_repairs_the_fault_is_an_exit():
    t = check_exit(["filter-fix"], 0)
    hs.eq(t.stdout.decode().split(), ["ending", "filter-fix", "fixed", "7"], "stdout")


def test_cmd_exit_with_a_crash_like_code_is_an_exit():
    """The case from the issue: cmd.exe's `exit -1073741819`."""
    t = hs.trace("cmd.exe", args=["/c", "exit", "-1073741819"], name="ending_cmd", timeout=120)
    hs.eq(t.json["target"]["stop"], "exit", "stop")
    hs.eq(t.json["target"]["exit_code"], 0xC0000005, "exit code")
    hs.eq(crash_lines(t), [], "no crash line")


def test_access_violation_is_a_crash():
    check_crash(["av"], 0xC0000005, 0xC0000005, "access violation", "ending.exe!main")


def test_access_violation_on_another_thread_is_a_crash():
    check_crash(["thread-av"], 0xC0000005, 0xC0000005, "access violation", "ending.exe!crasher")


def test_divide_by_zero_is_a_crash():
    check_crash(["div0"], 0xC0000094, 0xC0000094, "integer divide by zero", "ending.exe!main")


def test_unhandled_raise_is_a_crash():
    check_crash(["raise"], 0xE0000001, 0xE0000001, "unhandled exception", "kernelbase.dll!RaiseException")


def test_filter_that_ends_the_process_is_a_crash():
    check_crash(["filter-exit"], 0xC0000005, 0xC0000005, "access violation", "ending.exe!main")


def test_abort_is_a_crash():
    check_crash(["abort"], 3, 3, "abort()")


def test_uncaught_cxx_exception_is_a_crash():
    """mingw's libstdc++: std::terminate, then abort() (exit code 3)."""
    t = check_crash([], 3, 3, "abort()", exe="build/tests/cxxthrow.exe")
    hs.check(b"terminate called after throwing" in t.stderr, "libstdc++'s message")


def test_fast_fail_is_a_crash():
    """No handler runs: the process ended without asking to."""
    check_crash(["fastfail"], 0xC0000409, 0xC0000409, "fast fail")


def test_stack_overflow_is_a_crash_and_ends():
    """Under Wine a thread whose stack overflows with no room to report it
    dies with no exception and no exit; with hookscope's threads still in
    the process it used to keep running for good. The agent ends it as Wine
    would have (code 1) and says what happened."""
    check_crash(["overflow"], 1, 1, "its last thread died without exiting")


def test_last_thread_exit_ends_the_process():
    """A program whose last thread ends with ExitThread ends with that
    thread's code, traced or not (hookscope's own threads in the target do
    not keep it alive)."""
    hs.need("build/tests/lastthread.exe")
    plain = hs.wine(["build/tests/lastthread.exe"], timeout=60)
    hs.eq(plain.returncode, 42, "untraced exit code")
    t = hs.trace("build/tests/lastthread.exe", name="ending_lastthread", timeout=120)
    hs.eq(t.json["target"]["stop"], "exit", "stop")
    hs.eq(t.json["target"]["exit_code"], 42, "exit code")
    hs.eq(t.rc, 42, "hookscope's exit status")
