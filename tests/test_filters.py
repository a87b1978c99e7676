"""Function filters: -f includes, -x excludes, module!pattern, undecorated
C++ names, and a filter that matches nothing."""
import re

import hs


def hooked_names(t, module):
    return {f["name"] for f in t.functions(module) if f["hooked"]}


def test_include_exclude_exact():
    exe = hs.need("build/examples/demo.exe")
    t = hs.trace(exe, options=["-f", "fib", "-f", "is_*", "-x", "is_odd"], name="filter_basic")
    hs.eq(t.rc, 0, "exit code")
    hs.eq(hooked_names(t, "demo.exe"), {"fib", "is_even"}, "hooked functions")
    c = t.calls("demo.exe")
    hs.eq(c["fib"], 150049, "fib")
    hs.eq(c["is_even"], 501, "is_even")
    m = t.module("demo.exe")
    hs.eq(m["skipped"].get("filtered"), m["functions_found"] - 2, "the others are skipped as filtered")
    odd = [f for f in t.functions("demo.exe") if f["name"] == "is_odd"][0]
    hs.eq(odd["skip_reason"], "filtered", "is_odd's skip reason")


def test_exe_list_made_while_the_target_starts():
    """run makes the exe's function list while the target starts and the
    agent is injected (hs_fnservice_prefetch): the agent's request for it is
    answered with that list, filters applied as ever; with -m (the exe
    maybe not hooked) it is made on request."""
    exe = hs.need("build/examples/demo.exe")
    t = hs.trace(exe, options=["-v", "-f", "fib", "-f", "is_*", "-x", "is_odd"], name="filter_prefetch")
    hs.eq(t.rc, 0, "exit code")
    err = t.stderr.decode(errors="replace")
    hs.check(re.search(r"function list of demo\.exe: \d+ functions \(made while the target started\)", err),
             f"the exe's list was not made in advance:\n{err}")
    hs.eq(hooked_names(t, "demo.exe"), {"fib", "is_even"}, "hooked functions (the filters on the list made early)")
    hs.eq(t.calls("demo.exe")["fib"], 150049, "fib")
    t = hs.trace(exe, modules=["demo.exe"], options=["-v"], name="filter_prefetch_m")
    err = t.stderr.decode(errors="replace")
    hs.check(re.search(r"function list of demo\.exe: \d+ functions\r?$", err, re.M),
             f"with -m the exe's list is made on request:\n{err}")
    hs.eq(t.calls("demo.exe")["fib"], 150049, "fib with -m")


def test_module_qualified_patterns():
    exe = hs.need("build/examples/demo.exe")
    t = hs.trace(exe, modules=["demo.exe", "msvcrt.dll"],
                 options=["-f", "msvcrt!qsort", "-f", "demo!compare_words", "-f", "demo.exe!main"],
                 name="filter_modules")
    hs.eq(t.rc, 0, "exit code")
    hs.eq(hooked_names(t, "demo.exe"), {"compare_words", "main"}, "hooked in demo.exe")
    hs.eq(hooked_names(t, "msvcrt.dll"), {"qsort"}, "hooked in msvcrt.dll")
    hs.eq(t.calls("msvcrt.dll")["qsort"], 1, "qsort calls")
    hs.check(t.calls("demo.exe")["compare_words"] > 10, "comparator counted")
    # the comparator is called by msvcrt (its qsort implementation)
    callers = {(e["caller_module"]) for e in t.json["edges"] if e["callee"] == "compare_words"}
    hs.eq(callers, {"msvcrt.dll"}, "modules calling compare_words")


def test_cxx_undecorated_names():
    exe = hs.need("build/tests/cxxbasic.exe")
    t = hs.trace(exe, modules=["libstdc++-6.dll"], options=["-f", "std::basic_ostream<char*"],
                 name="filter_cxx")
    hs.eq(t.rc, 0, "exit code")
    names = hooked_names(t, "libstdc++-6.dll")
    hs.check(names and all(n.startswith("std::basic_ostream<char") for n in names),
             f"unexpected names: {sorted(names)[:10]}")
    hs.check(any(c > 0 for n, c in t.calls("libstdc++-6.dll").items()), "no ostream call counted")


def test_filter_matching_nothing_fails_fast():
    exe = hs.need("build/tests/echo.exe")
    t = hs.trace(exe, ["x"], options=["-f", "no_such_function*"], name="filter_none")
    hs.eq(t.rc, 125, "exit code")
    hs.eq(t.stdout, b"", "the target never ran")
    lines = [l for l in t.stderr.decode().splitlines() if l]
    hs.eq(lines, ["hookscope: function filter 'no_such_function*' matched no function"])


def test_functions_command_with_filter():
    exe = hs.need("build/examples/demo.exe")
    p = hs.hookscope(["functions", exe, "-f", "parse_*"])
    hs.eq(p.returncode, 0, "exit code")
    out = p.stdout.decode().splitlines()
    yes = sorted(l.split()[-1] for l in out if " yes" in l)
    hs.eq(yes, ["parse_expr", "parse_factor", "parse_number", "parse_term"], "hookable after the filter")
    p = hs.hookscope(["functions", exe, "-f", "zzz"])
    hs.eq(p.returncode, 125, "exit code when nothing matches")
    hs.check(b"hookscope: function filter 'zzz' matched no function" in p.stderr, "error line")


def test_unmatched_filter_names_the_nearest_functions():
    exe = hs.need("build/examples/demo.exe")
    t = hs.trace(exe, options=["-f", "pars_expr", "-f", "evaluat*"], name="filter_suggest")
    hs.eq(t.rc, 125, "exit code")
    hs.eq(t.stdout, b"", "the target never ran")
    lines = [l for l in t.stderr.decode().splitlines() if l]
    hs.eq(lines, ["hookscope: function filter 'pars_expr' matched no function; did you mean 'parse_expr'?"],
          "one line for the filter that matched nothing")
    p = hs.hookscope(["functions", exe, "-f", "op_dubble"])
    hs.eq(p.returncode, 125, "functions: exit code")
    hs.eq(p.stderr.decode().strip(),
          "hookscope: function filter 'op_dubble' matched no function; did you mean 'op_double'?")


def test_filter_for_an_untraced_module_says_to_add_it():
    exe = hs.need("build/examples/demo.exe")
    t = hs.trace(exe, options=["-f", "msvcrt!qsort"], name="filter_module")
    hs.eq(t.rc, 125, "exit code")
    hs.eq(t.stdout, b"", "the target never ran")
    hs.eq([l for l in t.stderr.decode().splitlines() if l],
          ["hookscope: function filter 'msvcrt!qsort' is for module 'msvcrt', which is not traced: add -m msvcrt"])


def test_filters_that_exclude_everything_are_an_error():
    exe = hs.need("build/examples/demo.exe")
    t = hs.trace(exe, options=["-x", "*"], name="filter_all_out")
    hs.eq(t.rc, 125, "exit code")
    hs.eq(t.stdout, b"", "the target never ran")
    lines = [l for l in t.stderr.decode().splitlines() if l]
    hs.eq(len(lines), 1, f"one line: {lines}")
    hs.check(re.fullmatch(r"hookscope: the function filters leave no function to hook "
                          r"\(all \d+ found are filtered out\)", lines[0]), lines[0])


def test_functions_with_a_filter_lists_only_the_matches():
    exe = hs.need("build/examples/demo.exe")
    p = hs.hookscope(["functions", exe, "-f", "parse_*", "-x", "parse_term"])
    hs.eq(p.returncode, 0, "exit code")
    out = p.stdout.decode().splitlines()
    rows = [l.split()[-1] for l in out[1:] if l.startswith("0x")]
    hs.eq(sorted(rows), ["parse_expr", "parse_factor", "parse_number"], "rows")
    total = sum(1 for l in hs.hookscope(["functions", exe]).stdout.decode().splitlines() if l.startswith("0x"))
    hs.eq(out[-1], f"3 of {total} functions match the filters, 3 hookable (100.0%)", "summary")


def test_filter_on_a_module_loaded_later():
    """A DLL loaded after the start is named, filtered and hooked through
    the same function lists as the exe: the names the filters see are the
    report's."""
    exe = hs.need("build/tests/lateload.exe")
    t = hs.trace(exe, modules=["latedll.dll"], options=["-f", "latedll!dll_p*", "-f", "dll_add"],
                 name="filter_late")
    hs.eq(t.rc, 0, f"exit code ({t.stderr.decode(errors='replace')})")
    hooked = sorted({f["name"] for f in t.functions("latedll.dll") if f["hooked"]})
    hs.eq(hooked, ["dll_add", "dll_poly"], "hooked in the late DLL")
    # lateload.c: dll_add 1234 + 5 (inside dll_poly) + 10 over both loads, dll_poly 5
    c = t.calls("latedll.dll")
    hs.eq((c.get("dll_add"), c.get("dll_poly")), (1249, 5), "calls of dll_add and dll_poly over both loads")
