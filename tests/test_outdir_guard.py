"""The output directory never leads hookscope's deletes and writes
elsewhere (injector/output/outdir_win.c): an output directory that is a
junction or symbolic link, or that holds one, is refused with one line
before the target starts, and nothing outside is touched.

Wine 8 cannot make a junction (FSCTL_SET_REPARSE_POINT fails), but it
shows a Unix symbolic link to a directory as a reparse point (attribute
0x400), as Windows shows a junction: the tests plant those. (A Unix link
to a file shows as a plain file under Wine, so hookscope cannot see it
there; on Windows the open that writes each file does not follow one.)
"""
import hashlib
import os
import shutil

import hs

REFUSED = "refused (hookscope never cleans or writes through one)"


def victim(root):
    """A directory outside the output directory, with files named like
    hookscope's outputs (a run that went there would write or remove
    them); returns its path and a fingerprint of it."""
    v = os.path.join(root, "victim")
    os.makedirs(v)
    for name in ("report.txt", "report.json", "callgrind.out", "flamegraph.svg", "cpu-stacks.folded",
                 "profile.speedscope.json", "profile.pb.gz", "entry-stacks.folded"):
        with open(os.path.join(v, name), "w") as f:
            f.write("not hookscope's\n")
    return v, fingerprint(v)


def fingerprint(d):
    return sorted((n, hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest(), os.stat(os.path.join(d, n)).st_mtime_ns)
                  for n in os.listdir(d))


def fresh(name):
    root = os.path.join(hs.OUT, name)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    return root


def refused(root, out, expect_line, what):
    demo = os.path.join(hs.ROOT, hs.need("build/examples/demo.exe"))
    p = hs.hookscope(["run", "--no-sample", "--no-edges", "-o", out, "--", demo], cwd=root)
    hs.eq(p.returncode, 125, f"{what}: refused")
    hs.eq(p.stdout, b"", f"{what}: the target never ran")
    lines = p.stderr.decode().splitlines()
    hs.eq([ln.strip() for ln in lines], [expect_line], f"{what}: one line")


def test_output_directory_that_is_a_link():
    root = fresh("guard-outdir-link")
    v, before = victim(root)
    os.symlink("victim", os.path.join(root, "out"))
    refused(root, "out", f"hookscope: output directory out is a junction or symbolic link: {REFUSED}", "a linked dir")
    hs.eq(fingerprint(v), before, "nothing in the link's target was written, removed or touched")
    hs.eq(sorted(os.listdir(root)), ["out", "victim"], "nothing written beside")


def test_link_planted_in_the_output_directory():
    root = fresh("guard-outdir-planted")
    v, before = victim(root)
    os.makedirs(os.path.join(root, "out"))
    # where a run of the same options writes its flame graph
    os.symlink("../victim", os.path.join(root, "out", "flamegraph.svg"))
    refused(root, "out", f"hookscope: output directory out holds a junction or symbolic link, flamegraph.svg: "
                         f"{REFUSED}", "a link inside")
    hs.eq(fingerprint(v), before, "nothing in the link's target was written, removed or touched")
    hs.eq(sorted(os.listdir(os.path.join(root, "out"))), ["flamegraph.svg"], "the link was not removed either")


def test_report_into_a_linked_directory():
    """`report DIR -o OUT` writes into OUT under the same guard."""
    root = fresh("guard-report-link")
    demo = os.path.join(hs.ROOT, hs.need("build/examples/demo.exe"))
    p = hs.hookscope(["run", "-q", "--no-sample", "-o", "run", "--", demo], cwd=root)
    hs.eq(p.returncode, 0, "the run")
    v, before = victim(root)
    os.symlink("victim", os.path.join(root, "again"))
    p = hs.hookscope(["report", "-q", "-o", "again", "run"], cwd=root)
    hs.eq(p.returncode, 125, "report refuses")
    hs.eq([ln.strip() for ln in p.stderr.decode().splitlines()],
          [f"hookscope: output directory again is a junction or symbolic link: {REFUSED}"], "one line")
    hs.eq(fingerprint(v), before, "nothing in the link's target was touched")
