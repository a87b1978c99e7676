#!/usr/bin/env python3
"""Pins that let apt install a foreign-architecture package beside the
native side without removing anything (used by scripts/deps32.sh).

usage: scripts/multiarch_pins.py PACKAGE:ARCH PREFERENCES_FILE

Multiarch needs one version of every Multi-Arch: same package for all the
architectures it is installed for. The indexes of the two architectures
need not offer the installed native version: a suite's index of one
architecture can fail to download ("Mirror sync in progress?") while the
other's is newer, or the machine was installed from an older snapshot. apt
then either gives up or removes native packages (wine64 and libwine:amd64,
for libgstreamer-plugins-base1.0-0 at a version the i386 index lacked).

For every Multi-Arch: same package that PACKAGE may depend on (recursively,
every alternative; recommends left out) and that is installed for the
native architecture, this chooses the version both architectures are to
have: the installed one when the foreign index offers it (the native side
is left as it is), else the newest version both indexes offer (the native
package moves to it: printed), else none (printed: apt will refuse). Each
is pinned, moved or not: installing one architecture's package, apt brings
the other's to its candidate, and the two candidates may differ. The
native packages built from the same source as one that moves depend on its
exact version (libssl-dev on libssl3): they move with it, or apt would
remove them. The choices are written as apt preferences (priority 1001: a
downgrade is allowed) to PREFERENCES_FILE, for `apt-get -o
Dir::Etc::Preferences=FILE` (the machine's own preferences are left as
they are); one line is printed per native package that changes version
("move NAME:ARCH FROM -> TO") or cannot be matched ("none NAME:ARCH
VERSION"). Python 3 standard library only.
"""
import re
import subprocess
import sys


def run(*cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout


def closure(pkg):
    """Every package name PACKAGE may need, without its architecture."""
    out = run("apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
              "--no-breaks", "--no-replaces", "--no-enhances", pkg)
    names = set()
    for line in out.splitlines():
        if line and not line[0].isspace() and not line.startswith("<"):
            names.add(line.split(":", 1)[0])
    return names


def installed(arch):
    """The installed packages of arch and of all: (name, Multi-Arch, source, version)."""
    out = run("dpkg-query", "-W", "-f=${db:Status-Abbrev}\t${Package}\t${Architecture}\t${Multi-Arch}\t"
              "${source:Package}\t${Version}\n")
    rows = []
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) == 6 and f[0].strip() == "ii" and f[2] in (arch, "all"):
            rows.append((f[1], f[3], f[4], f[5]))
    return rows


def offers(names, arch):
    """{name: [versions the indexes offer for arch, as apt-cache madison lists them]}."""
    got = {n: [] for n in names}
    if not names:
        return got
    out = run("apt-cache", "madison", *[f"{n}:{arch}" for n in sorted(names)])
    for line in out.splitlines():
        f = [x.strip() for x in line.split("|")]
        if len(f) < 3 or not f[2].endswith(" Packages"):
            continue  # a Sources line
        name = f[0].split(":", 1)[0]
        if name in got and f[1] not in got[name]:
            got[name].append(f[1])
    return got


def source_version(v):
    """A binary version without its binNMU suffix (1.2-3+b1: 1.2-3)."""
    return re.sub(r"\+b[0-9]+$", "", v)


def newer(a, b):
    return subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0


def main():
    if len(sys.argv) != 3 or ":" not in sys.argv[1]:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    pkg, prefs = sys.argv[1], sys.argv[2]
    foreign = pkg.split(":", 1)[1]
    native = run("dpkg", "--print-architecture").strip()
    rows = installed(native)
    have = {n: v for n, ma, _, v in rows if ma == "same"}
    names = sorted(closure(pkg) & set(have))
    theirs, ours = offers(names, foreign), offers(names, native)
    pins = {}     # (name, arch): version
    moved = {}    # name: (from, to), native packages that change version
    for n in names:
        v = have[n]
        if v not in theirs[n]:
            best = None
            for x in theirs[n]:
                if x in ours[n] and (best is None or newer(x, best)):
                    best = x
            if best is None:
                print(f"none {n}:{native} {v}")
                continue
            moved[n] = (v, best)
            v = best
        pins[(n, native)] = pins[(n, foreign)] = v
    # the installed packages built from the same source as a moved one
    # depend on its exact version (libssl-dev on libssl3): they move with it
    by_source, source_of = {}, {}
    for n, _, src, v in rows:
        by_source.setdefault(src, []).append((n, v))
        source_of[n] = src
    siblings = {}
    for n, (old, new) in moved.items():
        for m, v in by_source.get(source_of.get(n), []):
            if m not in moved and (m, native) not in pins and source_version(v) == source_version(old):
                siblings[m] = (v, source_version(new))
    offered = offers(siblings, native)
    for m, (v, want) in sorted(siblings.items()):
        match = [x for x in offered[m] if source_version(x) == want]
        if not match:
            print(f"none {m}:{native} {v}")
            continue
        moved[m] = (v, match[0])
        pins[(m, native)] = match[0]
    for n, (old, new) in sorted(moved.items()):
        print(f"move {n}:{native} {old} -> {new}")
    with open(prefs, "w") as f:
        f.write("\n".join(f"Package: {n}:{a}\nPin: version {v}\nPin-Priority: 1001\n"
                          for (n, a), v in sorted(pins.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
