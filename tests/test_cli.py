"""The command line and bad input: every bad input gets one clear line on
stderr and a nonzero exit, never a crash or a hang."""
import os
import re
import struct

import hs


def err_lines(p):
    return [l for l in p.stderr.decode(errors="replace").splitlines() if l.strip()]


def test_help_and_version():
    p = hs.hookscope(["--help"])
    hs.eq(p.returncode, 0, "exit code of --help")
    out = p.stdout.decode()
    for word in ("run TARGET", "attach PID", "functions FILE", "--module", "--output", "--duration"):
        hs.check(word in out, f"--help does not mention {word!r}")
    p = hs.hookscope(["--version"])
    hs.eq(p.returncode, 0, "exit code of --version")
    hs.eq(p.stdout.decode().strip(), "hookscope 0.1.0")


def test_usage_errors():
    cases = [
        (["--bogus"], "unknown option '--bogus'"),
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["run"], "run needs a target program"),
        (["run", "--nope", "x"], "unknown option '--nope'"),
        (["run", "-m"], "option '-m' needs a value"),
        (["run", "-d", "abc", "--", "x"], "--duration needs a positive number of seconds, not 'abc'"),
        (["attach"], "attach needs a process id"),
        (["attach", "12x"], "attach needs a process id, not '12x'"),
        (["functions"], "functions needs a file"),
    ]
    for args, msg in cases:
        p = hs.hookscope(args)
        hs.eq(p.returncode, 2, f"exit code of {args}")
        lines = err_lines(p)
        hs.eq(lines[0], "hookscope: " + msg, f"first stderr line of {args}")


def test_missing_target():
    p = hs.hookscope(["run", "--", "build/tests/does-not-exist.exe"])
    hs.eq(p.returncode, 125, "exit code")
    hs.eq(err_lines(p), ["hookscope: cannot find program 'build/tests/does-not-exist.exe'"])
    p = hs.hookscope(["run", "no_such_program_anywhere"])
    hs.eq(p.returncode, 125, "exit code for a bare name")
    hs.eq(err_lines(p), ["hookscope: cannot find program 'no_such_program_anywhere'"])


def test_not_a_pe():
    path = os.path.join(hs.OUT, "notpe.exe")
    os.makedirs(hs.OUT, exist_ok=True)
    with open(path, "w") as f:
        f.write("this is not a program\n" * 20)
    rel = os.path.relpath(path, hs.ROOT)
    p = hs.hookscope(["run", "--", rel])
    hs.eq(p.returncode, 125, "exit code")
    hs.eq(err_lines(p), [f"hookscope: '{rel}' is not a Windows program (not a PE file)"])
    p = hs.hookscope(["functions", rel])
    hs.eq(p.returncode, 125, "exit code of functions")
    hs.eq(err_lines(p), [f"hookscope: '{rel}' is not a PE file"])


def make_pe32(src, dst):
    """A copy of a 64-bit exe whose headers say i386/PE32."""
    data = bytearray(open(src, "rb").read())
    pe = struct.unpack_from("<I", data, 0x3C)[0]
    struct.pack_into("<H", data, pe + 4, 0x14C)        # Machine = i386
    struct.pack_into("<H", data, pe + 24, 0x10B)       # Optional header magic = PE32
    open(dst, "wb").write(data)


def test_broken_32bit_target():
    """An x64 exe whose headers say i386/PE32 (its contents are not a 32-bit
    program): Wine cannot start it with any token, and hookscope says it
    could not start it, in one line of its own, not that it lacked rights."""
    src = os.path.join(hs.ROOT, hs.need("build/tests/echo.exe"))
    dst = os.path.join(hs.OUT, "pe32.exe")
    os.makedirs(hs.OUT, exist_ok=True)
    make_pe32(src, dst)
    rel = os.path.relpath(dst, hs.ROOT)
    p = hs.hookscope(["run", "--", rel])
    hs.eq(p.returncode, 125, "exit code")
    ours = [l for l in err_lines(p) if not l.startswith("wine: ")]   # (Wine's loader says it too)
    hs.eq(len(ours), 1, f"one line of hookscope's: {ours}")
    hs.check(re.fullmatch(rf"hookscope: cannot start '{re.escape(rel)}': [^;]+", ours[0]), ours[0])


def test_dll_target():
    dll = hs.need("build/tests/libgcc_s_seh-1.dll")
    p = hs.hookscope(["run", "--", dll])
    hs.eq(p.returncode, 125, "exit code")
    hs.eq(err_lines(p), [f"hookscope: '{dll}' is a DLL, not a program"])


def test_module_never_loaded():
    """Said at once (before the target runs; not with -q) and again at the
    end; the target ran traced all the same, so its exit code is kept."""
    exe = hs.need("build/tests/echo.exe")
    t = hs.trace(exe, ["a"], modules=["echo.exe", "nosuchmodule.dll"], name="never_loaded")
    hs.eq(t.rc, 0, "exit code: the target's")
    hs.eq(err_lines(t.proc), ["to stderr",   # the target's own line
                              "hookscope: module 'nosuchmodule.dll' was never loaded by the target"])
    out = hs.outdir("never_loaded_loud")
    p = hs.hookscope(["run", "-o", out, "-m", "echo.exe", "-m", "nosuchmodule.dll", "--", exe, "a"])
    hs.eq(p.returncode, 0, "exit code without -q")
    hs.eq(err_lines(p)[:3], ["hookscope: module 'nosuchmodule.dll' is neither the program nor a DLL it loads "
                             "at start; it is traced if it is loaded later",
                             "to stderr",
                             "hookscope: module 'nosuchmodule.dll' was never loaded by the target"])
    hs.check(t.json is not None, "the report is still written")
    hs.eq(t.calls("echo.exe").get("show"), 1, "calls of show")


def test_function_table_full():
    """A module asked for that does not fit is an error, before the target runs."""
    exe = hs.need("build/tests/cxxbasic.exe")
    t = hs.trace(exe, modules=["cxxbasic.exe", "libstdc++-6.dll"], options=["--max-functions", "1024"],
                 name="table_full")
    hs.eq(t.rc, 125, "exit code")
    hs.eq(t.stdout, b"", "the target never ran")
    lines = err_lines(t.proc)
    hs.eq(len(lines), 1, f"one line: {lines}")
    hs.check(lines[0].startswith("hookscope: cannot hook libstdc++-6.dll: its ") and
             lines[0].endswith("functions do not fit in the function table (282 of 1024 used); "
                               "raise --max-functions"), lines[0])


def test_output_dir_cannot_be_created():
    """Checked before the target runs: a trace whose report cannot be
    written is not started."""
    exe = hs.need("build/tests/echo.exe")
    p = hs.hookscope(["run", "-o", exe + "/sub", "--", exe, "a"])
    hs.eq(p.returncode, 125, "exit code")
    hs.eq(p.stdout, b"", "the target never ran")
    hs.eq(err_lines(p), [f"hookscope: cannot create output directory {exe}/sub: a part of the path is a file"])
    p = hs.hookscope(["run", "-o", exe, "--", exe, "a"])
    hs.eq(p.returncode, 125, "exit code with -o naming a file")
    hs.eq(err_lines(p), [f"hookscope: cannot create output directory {exe}: a file of that name exists"])


def test_messages_that_name_the_cause():
    d = "build/tests"
    cases = [
        (["run", d], 125, f"hookscope: '{d}' is a directory, not a program"),
        (["functions", d], 125, f"hookscope: cannot read '{d}': it is a directory"),
        (["attach", "99999"], 125, "hookscope: no process has id 99999"),
        (["run", "--stacks", "8", "--", "x.exe"], 2,
         "hookscope: '8' after --stacks would be the program to run; write --stacks=8"),
        (["functions", "--time", "x.exe"], 2,
         "hookscope: functions does not take option '--time' (see 'hookscope help functions')"),
        (["report", "-m", "x", "dir"], 2, "hookscope: report does not take option '-m' (see 'hookscope help report')"),
        (["help", "frob"], 2, "hookscope: no command 'frob' to help with"),
        (["report"], 2, "hookscope: report needs the directory of a run (with its report.json), or --etl FILE"),
    ]
    for args, code, msg in cases:
        p = hs.hookscope(args)
        hs.eq(p.returncode, code, f"exit code of {args}")
        hs.eq(err_lines(p)[0], msg, f"first stderr line of {args}")


RUN_OPTIONS = ["--module", "--function", "--exclude", "--output", "--duration", "--no-edges", "--stacks",
               "--stack-every", "--time", "--quiet", "--verbose", "--max-functions", "--max-threads", "--help",
               "--symbols", "--srcline", "--no-sample", "--sample-rate", "--no-hooks", "--sampler", "--keep-etl",
               "--timeline", "--timeline-max", "--timeline-buffer", "--timeline-min-duration", "--timeline-depth",
               "--timeline-wait"]
TAKES = {
    "run": RUN_OPTIONS + ["--elevated-target"],
    "attach": RUN_OPTIONS,
    "functions": ["--function", "--exclude", "--verbose", "--help", "--symbols"],
    "report": ["--output", "--quiet", "--verbose", "--help", "--etl", "--pid", "--process", "--symbols",
               "--srcline", "--format", "--sort", "--top", "--threads"],
    "diff": ["--output", "--sort", "--top", "--verbose", "--help"],
}


def help_options(args):
    p = hs.hookscope(args)
    hs.eq(p.returncode, 0, f"exit code of {args} (stdout {p.stdout[:200]!r}, stderr {p.stderr[-300:]!r})")
    out = p.stdout.decode()
    hs.check(out.startswith(f"usage: hookscope {args[0] if args[0] != 'help' else args[1]} "), f"{args}: {out[:60]!r}")
    return set(re.findall(r"(?m)^  (?:-\w, |    )(--[a-z-]+)", out.split("Options:")[1]))


def test_help_per_command():
    """Each command's help lists exactly the options the command takes:
    all of them, none more."""
    for cmd, opts in TAKES.items():
        for args in (["help", cmd], [cmd, "--help"]):
            hs.eq(sorted(help_options(args)), sorted(opts), f"options in {args}")


def test_sort_help_per_command():
    """--sort's keys are not the same for report and diff: each command's
    help describes its own (diff: by the change of self, total, cpu or calls;
    report: report.txt's order, with avg)."""
    diff = hs.hookscope(["help", "diff"]).stdout.decode()
    report = hs.hookscope(["help", "report"]).stdout.decode()
    hs.check("order the rows by the largest change of: self" in diff and "total (inclusive time when both ran" in diff
             and "report.txt" not in diff.split("--sort", 1)[1].split("--top", 1)[0], "help diff's --sort: " + diff)
    hs.check("order report.txt's functions by calls, self," in report and "change of" not in report,
             "help report's --sort: " + report)


def test_readme_documents_every_option():
    """README.md's option table lists options `run` takes, and every option
    any command's help shows is named in README.md."""
    with open(os.path.join(hs.ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    table = set(re.findall(r"(?m)^\| `(?:-\w, )?(--[a-z-]+)", readme))
    hs.check(len(table) >= 15, f"README.md's option table: {sorted(table)}")
    shown = help_options(["help", "run"])
    hs.eq(sorted(table - shown), [], "options in README.md's table that `help run` does not show")
    every = set().union(*(help_options(["help", c]) for c in TAKES))
    named = lambda o: re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", readme)
    hs.eq(sorted(o for o in every if not named(o)), [],
          "options a command's help shows that README.md never names")


def test_summary_counts_traced_modules():
    exe = hs.need("build/tests/echo.exe")
    out = hs.outdir("summary")
    p = hs.hookscope(["run", "-o", out, "-m", "echo.exe", "-m", "nosuchmodule.dll", "--", exe, "a"])
    hs.eq(p.returncode, 0, "exit code")
    t = hs.Trace(p, out)
    m = t.module("echo.exe")
    hs.eq(len(t.json["modules"]), 1, "one traced module in the report")
    lines = err_lines(p)
    hs.eq(lines[-1], f"hookscope: {m['functions_hooked']} of {m['functions_found']} functions hooked in 1 module, "
                     f"{t.json['total_calls']} calls, {t.json['sampling']['samples']} CPU samples "
                     f"at {t.json['sampling']['rate_hz']:.0f} Hz "
                     f"({t.json['sampling']['hookscope_samples']} more in hookscope's code); "
                     f"report in {out}/report.txt", "the summary line")
