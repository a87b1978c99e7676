"""Stack walks from inside a hooked function (tests/targets/stackwalk.c):
RtlCaptureStackBackTrace and an RtlLookupFunctionEntry/RtlVirtualUnwind
loop, printed by the target itself.

Under --time the capture gives what it gives untimed (agent/backtrace.c
detours RtlCaptureStackBackTrace and drops hookscope's frames); in the
unwind loop each wrapped function's frame is followed by one frame of
hookscope's wrapper (in hookscope-agent.dll), and nothing else may change:
every caller frame is still there, in order, named the same.
"""
import hs

EXE = "build/tests/stackwalk.exe"
AGENT = "hookscope-agent.dll"


def walks(stdout):
    """{'capture 1': [frame, ...], 'unwind 1': [...], ...} (frame text
    without its index)"""
    out, cur = {}, None
    for line in stdout.decode().splitlines():
        if line.endswith(":") and not line.startswith(" "):
            cur = out.setdefault(line[:-1], [])
        elif cur is not None and line.strip():
            cur.append(line.split(None, 1)[1])
    return out


def test_untraced_walks_are_complete():
    exe = hs.need(EXE)
    plain = walks(hs.wine([exe]).stdout)
    hs.eq(sorted(plain), ["capture 1", "capture 2", "unwind 1", "unwind 2"], "walks printed")
    for k in ("capture 1", "unwind 1"):
        names = [f.split()[-1] for f in plain[k][:5]]
        hs.eq(names, ["do_walks", "walk_c", "walk_b", "walk_a", "main"], f"{k}: the program's frames")
    for k in ("capture 2", "unwind 2"):
        names = [f.split()[-1] for f in plain[k][:3]]
        hs.eq(names, ["do_walks", "walk_c", "main"], f"{k}: the program's frames")
    for k, frames in plain.items():
        hs.check(frames[-2:] == ["kernel32.dll", "ntdll.dll"], f"{k} reaches the thread start: {frames}")


def test_walks_with_time_captures_unchanged_unwinds_gain_the_wrapper_frames():
    exe = hs.need(EXE)
    plain = walks(hs.wine([exe]).stdout)
    t = hs.trace(exe, options=["--time"], name="stackwalk_time")
    hs.eq(t.rc, 0, "exit code")
    traced = walks(t.stdout)
    hs.eq(sorted(traced), sorted(plain), "walks printed")
    wrapped = {f["rva"] for f in t.functions("stackwalk.exe") if f["hooked"] and f["entry_only"] is None}
    for k, frames in traced.items():
        if k.startswith("capture"):
            hs.eq(frames, plain[k], f"{k}: RtlCaptureStackBackTrace under --time against untraced")
            continue
        hs.eq([f for f in frames if f != AGENT], plain[k], f"{k} without the wrapper frames")
        # one wrapper frame right after each wrapped function, nowhere else
        for i, f in enumerate(frames):
            if f == AGENT:
                hs.check(i > 0 and frames[i - 1].startswith("stackwalk.exe!"),
                         f"{k}: wrapper frame {i} does not follow a frame of the exe: {frames}")
                continue
            follows = i + 1 < len(frames) and frames[i + 1] == AGENT
            is_wrapped = f.startswith("stackwalk.exe!") and f.split("!")[1].split()[0] in wrapped
            hs.eq(follows, is_wrapped, f"{k}: frame {i} ({f}) is followed by a wrapper frame")
        hs.check(frames.count(AGENT) >= 5, f"{k}: too few wrapped frames to mean anything: {frames}")


def test_walks_with_entry_probes_only_are_unchanged():
    """Without --time the entry stub returns into the function before it
    runs: no frame is added at all."""
    exe = hs.need(EXE)
    plain = hs.wine([exe])
    t = hs.trace(exe, options=["--stacks=8"], name="stackwalk_count")
    hs.eq(t.rc, 0, "exit code")
    hs.eq(t.stdout, plain.stdout, "stdout (every walk identical)")
    hs.eq(t.calls("stackwalk.exe")["do_walks"], 2, "do_walks calls")


def test_entry_stacks_agree_with_the_programs_own_walk():
    """qsortwalk.exe: by_length is called by msvcrt's qsort; its first call
    walks its own stack with RtlVirtualUnwind. hookscope's entry stacks of
    by_length (its own walk, with cached lookups and its own unwinder for
    the common frames) hold that same sequence of frames: the same modules
    and, for the exe's named functions, the same functions; with and
    without --time (the program's walk then passes hookscope's wrapper
    frames, which hookscope's stacks leave out)."""
    exe = hs.need("build/tests/qsortwalk.exe")
    named = ("by_length", "sort_words", "main")
    for opts in (["--stacks=32"], ["--time", "--stacks=32"]):
        t = hs.trace(exe, modules=["qsortwalk.exe", "msvcrt.dll"], options=opts, name="qsortwalk_" + str(len(opts)))
        hs.eq(t.rc, 0, f"{opts} exit code")
        own = [l.split(None, 1)[1] for l in t.stdout.decode().splitlines() if l.startswith("frame ")]
        own = [f for f in own if f != AGENT]
        hs.check(own.count("msvcrt.dll") >= 2 and own[-2:] == ["kernel32.dll", "ntdll.dll"],
                 f"{opts}: the program's walk passes msvcrt and reaches the thread start: {own}")

        def short(frame):
            mod, rest = frame.split("!", 1)
            fn = rest.rsplit("+", 1)[0]
            return f"{mod}!{fn}" if mod == "qsortwalk.exe" and fn in named else mod

        ours = [[short(f) for f in s["frames"][1:]] for s in t.json["stacks"] if s["function"] == "by_length"]
        hs.check(ours and own in ours, f"{opts}: the program's walk {own} is none of hookscope's: {ours}")
        hs.eq(sum(s["count"] for s in t.json["stacks"] if s["function"] == "by_length"),
              [f for f in t.functions("qsortwalk.exe") if f["name"] == "by_length"][0]["calls"],
              f"{opts}: a stack for every call")
