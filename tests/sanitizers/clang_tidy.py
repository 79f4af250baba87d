#!/usr/bin/env python3
"""clang-tidy on the given sources, skipping those it already passed unchanged.

What it is: CI's clang-tidy step (.ci/run) with a cache of passes. A source's key is a hash of
clang-tidy's version, the checked-in .clang-tidy, its compile command and the text of the source
and of every header it includes (NOLINT comments among them), the clone's path replaced so clean
clones share the cache. Which headers a source includes comes from the build's own record, Ninja's
deps log (`ninja -t deps`), when the object is newer than every file on that list (the build
compiled it since any of them last changed); else (another generator, an object out of date)
from the preprocessor (`-E -P -C`, about 1 s a source). A source that passes leaves an empty file named by its key in the cache; one that fails
leaves nothing and is checked again next time. A change to a source, a header it includes, a flag
or the configuration checks it again; anything else is skipped in the time its key takes. A
source the build did not compile (another configuration's) is checked every time, with the flags
clang-tidy takes from its neighbours in the database.

Example:
  git ls-files 'framework/*.cc' 'telemetry/*.cc' |
    tests/sanitizers/clang_tidy.py -p build --cache /var/cache/rtloop-ci/clang-tidy --jobs 2

Exit status: 0 when every source passed (now or before), 1 when one had a finding (clang-tidy's
output is printed), 2 on a usage error. One process, a pool of --jobs worker threads each
running one preprocessor or clang-tidy at a time; the cache is written only by this process.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys


def preprocess_command(entry):
    """The compile command with -E -P -C instead of -c and its -o dropped."""
    args = entry.get("arguments") or shlex.split(entry["command"])
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c":
            out.append(a)
    return out + ["-E", "-P", "-C"]


def object_of(entry):
    """The object file the compile command writes (its -o), as Ninja names it; None without one."""
    args = entry.get("arguments") or shlex.split(entry["command"])
    return args[args.index("-o") + 1] if "-o" in args[:-1] else None


def ninja_deps(build):
    """{object: [its source and every file it includes]} from Ninja's deps log, for the objects
    compiled since their inputs last changed (VALID); {} when the build is not Ninja's."""
    try:
        r = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True, text=True)
    except OSError:
        return {}
    deps, current = {}, None
    for line in r.stdout.splitlines() if r.returncode == 0 else []:
        if line.startswith(" "):
            if current is not None:
                current.append(line.strip())
        elif ": #deps " in line:
            current = [] if line.endswith("(VALID)") else None
            if current is not None:
                deps[line.split(": #deps ")[0]] = current
    return deps


class Digests:
    """The SHA-256 and mtime of each file, each read once (a header is included by many sources)."""

    def __init__(self):
        self.known = {}
        self.mtimes = {}

    def mtime(self, path):
        m = self.mtimes.get(path)
        if m is None:
            try:
                m = os.stat(path).st_mtime_ns
            except OSError:
                m = -1
            self.mtimes[path] = m
        return m

    def of(self, path):
        d = self.known.get(path)
        if d is None:
            try:
                with open(path, "rb") as f:
                    d = hashlib.sha256(f.read()).digest()
            except OSError:
                d = b"absent"
            self.known[path] = d  # two threads may both compute it: the same value
        return d


def key_of(entry, root, salt, deps, digests):
    h = hashlib.sha256(salt)
    h.update(entry.get("command", " ".join(entry.get("arguments", []))).replace(root, "@").encode())
    obj = object_of(entry)
    included = deps.get(obj)
    if included:
        built = digests.mtime(os.path.join(entry["directory"], obj))
        if any(digests.mtime(os.path.join(entry["directory"], p)) > built for p in included):
            included = None  # changed since it was compiled: the list may be out of date
    if included:
        h.update(b"deps")
        for path in included:
            h.update(path.replace(root, "@").encode())
            h.update(digests.of(os.path.join(entry["directory"], path)))
        return h.hexdigest()
    pre = subprocess.run(preprocess_command(entry), cwd=entry["directory"], capture_output=True)
    if pre.returncode != 0:
        return None  # clang-tidy will say what is wrong
    h.update(pre.stdout.replace(root.encode(), b"@"))
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-p", dest="build", required=True, help="build dir with compile_commands.json")
    ap.add_argument("--cache", required=True, help="directory of passed keys (created)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("files", nargs="*", help="sources (default: read from stdin)")
    a = ap.parse_args()
    root = os.getcwd()
    db_path = os.path.join(a.build, "compile_commands.json")
    if not os.path.exists(db_path):
        sys.exit(f"clang_tidy.py: {db_path} is missing: configure {a.build} with CMake first")
    db = {os.path.realpath(e["file"]): e for e in json.load(open(db_path))}
    files = a.files or sys.stdin.read().split()
    version = subprocess.run(["clang-tidy", "--version"], capture_output=True).stdout
    salt = version + open(os.path.join(root, ".clang-tidy"), "rb").read()
    os.makedirs(a.cache, exist_ok=True)
    deps, digests = ninja_deps(a.build), Digests()

    def check(f):
        # A source another configuration builds (http_server_absent.cc: RTLOOP_HTTP=OFF) is not in
        # the database: clang-tidy takes its neighbours' flags, and it is checked every time.
        entry = db.get(os.path.realpath(f))
        key = key_of(entry, root, salt, deps, digests) if entry else None
        if key and os.path.exists(os.path.join(a.cache, key)):
            return f, True, True, ""
        r = subprocess.run(["clang-tidy", "-p", a.build, "--quiet", "--warnings-as-errors=*", f],
                           capture_output=True, text=True)
        if r.returncode == 0 and key:
            open(os.path.join(a.cache, key), "w").close()
        noise = re.compile(r"^\d+ warnings? generated\.$")  # the suppressed ones, counted
        output = "".join(l for l in (r.stdout + r.stderr).splitlines(True) if not noise.match(l))
        return f, r.returncode == 0, False, output

    failed = cached = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for f, ok, hit, output in pool.map(check, files):
            cached += hit
            if not ok:
                failed += 1
                print(output, end="", flush=True)
    print(f"clang_tidy.py: {len(files)} sources, {cached} passed before unchanged, "
          f"{len(files) - cached - failed} passed now, {failed} with findings")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
