#!/usr/bin/python3
"""Checks that a fresh Debian 12 machine gets everything the build used from install-deps.sh.

A developer's machine keeps packages installed by hand, so a green build there can hide a
package that scripts/install-deps.sh never installs (it happened: Debian's oneDNN CMake config
needs OpenCL, which libdnnl-dev only *recommends*, and `--no-install-recommends` skips it).

This test takes every system file the finished build touched:
  - the CMake files the configure step read (the RERUN_CMAKE dependencies in build.ninja),
  - the file paths CMake found and cached (CMakeCache.txt),
  - the libraries on every link line (build.ninja),
  - the headers every object was compiled against (`ninja -t deps`),
maps each to the Debian package that owns it (dpkg's file lists), and checks that the package
is in what a fresh machine would have: the packages install-deps.sh lists, Debian's Essential
and Priority "required" packages, and everything those pull in through Depends/Pre-Depends
(never Recommends or Suggests). Any other owner is reported with the file that needs it.

Files outside /usr (the CUDA toolkit in /usr/local, the build tree) are not Debian's and are
skipped; files no package owns are skipped too (generated or installed by hand; listed with -v).

Usage: deps_closure.py BUILD_DIR INSTALL_DEPS_SCRIPT [-v]
"""
import glob
import os
import re
import subprocess
import sys


def read_status():
    """Installed packages: name -> dict(depends=[[alternatives]], provides=[...], essential, prio)."""
    pkgs = {}
    with open("/var/lib/dpkg/status", encoding="utf-8", errors="replace") as f:
        text = f.read()
    for stanza in text.split("\n\n"):
        fields = {}
        key = None
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        name = fields.get("Package")
        if not name or "install ok installed" not in fields.get("Status", ""):
            continue
        deps = []
        for field in ("Pre-Depends", "Depends"):
            for group in filter(None, (g.strip() for g in fields.get(field, "").split(","))):
                deps.append([strip_version(a) for a in group.split("|")])
        provides = [strip_version(p) for p in fields.get("Provides", "").split(",") if p.strip()]
        pkgs[name] = {
            "depends": deps,
            "provides": provides,
            "base": fields.get("Essential") == "yes" or fields.get("Priority") == "required",
        }
    return pkgs


def strip_version(atom):
    atom = re.sub(r"\(.*?\)", "", atom).strip()
    return atom.split(":")[0].strip()  # drop ":any" / ":amd64" qualifiers


def closure(roots, pkgs):
    providers = {}
    for name, info in pkgs.items():
        for virtual in info["provides"]:
            providers.setdefault(virtual, []).append(name)

    def resolve(atom):
        if atom in pkgs:
            return [atom]
        return sorted(providers.get(atom, []))

    seen = set()
    queue = [r for r in roots if r in pkgs]
    while queue:
        name = queue.pop()
        if name in seen:
            continue
        seen.add(name)
        for alternatives in pkgs[name]["depends"]:
            candidates = [c for a in alternatives for c in resolve(a)]
            if any(c in seen for c in candidates):
                continue
            # apt takes the first alternative it can install; on a fresh machine that is the
            # first one that exists (all of them might be installed here by hand).
            for atom in alternatives:
                chosen = resolve(atom)
                if chosen:
                    queue.extend(chosen[:1] if atom in pkgs else chosen)
                    break
    return seen


def listed_packages(script):
    out = subprocess.run(["bash", script, "--list"], check=True, capture_output=True, text=True)
    return out.stdout.split()


def file_owners():
    owners = {}
    for path in glob.glob("/var/lib/dpkg/info/*.list"):
        pkg = os.path.basename(path)[:-5].split(":")[0]
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                owners.setdefault(line.rstrip("\n"), pkg)
    return owners


def owner_of(path, owners):
    candidates = [path, os.path.realpath(path)]
    for p in list(candidates):
        for a, b in (("/usr/lib/", "/lib/"), ("/usr/bin/", "/bin/"), ("/usr/sbin/", "/sbin/")):
            if p.startswith(a):
                candidates.append(b + p[len(a):])
            elif p.startswith(b):
                candidates.append(a + p[len(b):])
    for c in candidates:
        if c in owners:
            return owners[c]
    return None


def used_files(build_dir):
    files = set()
    ninja_file = os.path.join(build_dir, "build.ninja")
    with open(ninja_file, encoding="utf-8") as f:
        for line in f:
            if line.startswith("build build.ninja: RERUN_CMAKE") or "LINK_LIBRARIES =" in line:
                files.update(t for t in line.split() if t.startswith("/"))
    with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^[A-Za-z0-9_]+:(FILEPATH|PATH)=(/.*)$", line.strip())
            if m:
                files.add(m.group(2))
    deps = subprocess.run(["ninja", "-C", build_dir, "-t", "deps"], check=True,
                          capture_output=True, text=True).stdout
    for line in deps.splitlines():
        t = line.strip()
        if t.startswith("/"):
            files.add(t)
    return {f for f in files if f.startswith("/usr/") and not f.startswith("/usr/local/")
            and os.path.isfile(f)}


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    build_dir, script = sys.argv[1], sys.argv[2]
    verbose = "-v" in sys.argv[3:]
    pkgs = read_status()
    listed = listed_packages(script)
    not_installed = [p for p in listed if p not in pkgs]
    roots = set(listed) | {n for n, i in pkgs.items() if i["base"]}
    fresh = closure(roots, pkgs)
    owners = file_owners()
    files = used_files(build_dir)
    missing = {}
    unowned = []
    for f in sorted(files):
        pkg = owner_of(f, owners)
        if pkg is None:
            unowned.append(f)
        elif pkg not in fresh:
            missing.setdefault(pkg, []).append(f)
    print(f"deps_closure: {len(files)} system files used by the build, {len(listed)} packages "
          f"listed in {os.path.basename(script)}, {len(fresh)} packages on a fresh machine")
    if verbose and unowned:
        print("files no Debian package owns (skipped):\n  " + "\n  ".join(unowned))
    if not_installed:
        print("listed but not installed here: " + " ".join(not_installed))
    if missing:
        for pkg, fs in sorted(missing.items()):
            print(f"NOT INSTALLED ON A FRESH MACHINE: {pkg} (needed for {fs[0]}"
                  + (f" and {len(fs) - 1} more" if len(fs) > 1 else "") + ")")
        print("add these packages to scripts/install-deps.sh")
        return 1
    print("deps_closure: every package the build used is installed by install-deps.sh")
    return 0


if __name__ == "__main__":
    sys.exit(main())
