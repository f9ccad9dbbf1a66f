# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The floor of what a one-file change published as a release does beyond the same change in
place (issue #42's release row), at the steady state of `keep: 3`: the new generation's files
linked from the live one, the index and the switch, and the oldest generation cleared as every
delete must be (issue #38): each file judged a regular file of this account whose other names
are the ones distributor made (the same path, the same file, in a sibling generation whose
record names it with the same digest), then removed with its directories and record.

    python benchmarks/release_floor.py [--files 10000] [--rounds 3] [--quick] [--seed N]

It builds a release home at that steady state with distributor_publish (release_change.py's
setup), then each round copies it (`cp -a`, links kept) and runs that extra work on the copy in a
process of its own, timing its CPU (`process_time`, the interpreter's start left out: the change
in place pays it too), next to the module's release change and in-place change on the original in
the same rounds. What both kinds of change do alike (the bundle's checks, the changed file
written, a record of every output written durably, the lock, the result) is left out, and the
live generation's record, which the change in place reads as its own, is reused. The row's ratio
can then be no lower than 1 + this floor / the change in place's CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from operator import itemgetter

HOME = os.path.join(".distributor-releases", "site")
INDEX = ".distributor-releases.json"
STATE = ".distributor.json"
SITE = "site"


def digests(generation: str) -> dict:
    """path -> sha256 of a generation's record, refused when too dense to decode (as the module)."""
    with open(os.path.join(generation, STATE), "rb") as handle:
        raw = handle.read()
    if raw.count(b"{") + raw.count(b"[") > len(raw) // 32 + 1000:
        raise SystemExit("%s is too dense" % generation)
    outputs = json.loads(raw)["outputs"]
    return dict(zip(map(itemgetter("path"), outputs), map(itemgetter("sha256"), outputs)))


def walk(top: str) -> tuple[list, list]:
    """(files, directories) under `top`, relative, distributor's own names left out."""
    files, directories, pending = [], [], [""]
    while pending:
        prefix = pending.pop()
        with os.scandir(os.path.join(top, prefix) if prefix else top) as entries:
            for entry in entries:
                if entry.name.startswith(".distributor"):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    directories.append(prefix + entry.name)
                    pending.append(prefix + entry.name + "/")
                else:
                    files.append(prefix + entry.name)
    return files, directories


def extra(root: str, changed: str) -> float:
    """The release's work beyond the change in place, on the release home under `root`; its CPU."""
    home = os.path.join(root, HOME)
    live = os.readlink(os.path.join(root, SITE)).rpartition("/")[2]
    live_dir, new_id = os.path.join(home, live), "new-%d" % os.getpid()
    new_dir = os.path.join(home, new_id)
    live_digests = digests(live_dir)  # read by the change in place too, as its own record: not counted
    started = time.process_time()
    with open(os.path.join(home, INDEX)) as handle:
        index = json.load(handle)
    ids = [release["id"] for release in index["releases"]]
    oldest = ids[0]
    # The new generation: every file but the changed one a link to the live generation's.
    files, directories = walk(live_dir)
    os.mkdir(new_dir)
    for directory in sorted(directories):
        os.mkdir(os.path.join(new_dir, directory))
    live_prefix, new_prefix = live_dir + "/", new_dir + "/"
    for path in files:
        if path != changed:
            os.link(live_prefix + path, new_prefix + path)
    new_digests = dict(live_digests, **{changed: "the changed file's"})
    # The index naming it, and the switch.
    index["releases"].append(dict(index["releases"][-1], id=new_id))
    with open(os.path.join(home, INDEX + ".new"), "w") as handle:
        json.dump(index, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(os.path.join(home, INDEX + ".new"), os.path.join(home, INDEX))
    os.symlink(os.path.join(HOME, new_id), os.path.join(root, SITE + ".new"))
    os.rename(os.path.join(root, SITE + ".new"), os.path.join(root, SITE))
    # The oldest generation cleared: its record and its siblings' read, each file judged.
    cleared = os.path.join(home, oldest)
    mine = digests(cleared)
    siblings = [(sibling, digests(os.path.join(home, sibling)) if sibling not in (live, new_id) else
                 live_digests if sibling == live else new_digests) for sibling in ids[1:] + [new_id]]
    files, directories = walk(cleared)
    held = {}
    me = os.geteuid()
    prefix = cleared + "/"
    for path in files:
        found = os.lstat(prefix + path)
        if not stat.S_ISREG(found.st_mode) or found.st_uid != me:
            raise SystemExit("%s is not distributor's" % path)
        names = 1
        head, _slash, name = path.rpartition("/")
        for sibling, recorded in siblings:
            if names < found.st_nlink and recorded.get(path) == mine.get(path):
                directory = held.get((sibling, head))
                if directory is None:
                    directory = held[sibling, head] = os.open(os.path.join(home, sibling, head), os.O_RDONLY | os.O_DIRECTORY)
                there = os.stat(name, dir_fd=directory, follow_symlinks=False)
                names += (there.st_dev, there.st_ino) == (found.st_dev, found.st_ino)
        if names != found.st_nlink:
            raise SystemExit("%s has a name distributor did not make" % path)
    for directory in held.values():
        os.close(directory)
    for path in files:
        os.unlink(prefix + path)
    for directory in sorted(directories, key=lambda d: -d.count("/")):
        os.rmdir(os.path.join(cleared, directory))
    os.unlink(os.path.join(cleared, STATE))
    os.rmdir(cleared)
    return time.process_time() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--floor", nargs=2, metavar=("ROOT", "CHANGED"), help="run the floor itself on a copy")
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2,000 files, 2 rounds")
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args(argv)
    if args.floor:
        print(json.dumps({"cpu": extra(*args.floor)}))
        return 0
    # Here, not at the top: the floor's own process must not pay for the harness, which imports the collection.
    from bundles import BundleSpec, generate  # pylint: disable=import-outside-toplevel
    from harness import write_results  # pylint: disable=import-outside-toplevel
    import release_change  # pylint: disable=import-outside-toplevel
    files, rounds = (min(args.files, 2000), min(args.rounds, 2)) if args.quick else (args.files, args.rounds)
    workdir = tempfile.mkdtemp(prefix="distributor-release-floor-")
    try:
        spec = BundleSpec("release-change", "small", files, 4096)
        cpu = {"in place": [], "release": [], "release floor (extra only)": []}
        source, rng = generate(os.path.join(workdir, "bundle"), spec, args.seed), random.Random(args.seed)
        roots = {"in place": os.path.join(workdir, "in-place"), "release": os.path.join(workdir, "release")}
        version = 0
        for number in range(4):  # the first publish, then keep's 3 changes: the steady state
            if number:
                version += 1
                release_change.one_file_changed(source, spec, rng, version)
            for name, root in roots.items():
                release_change.module(source, root, 3 if name == "release" else None, workdir)
        for number in range(rounds):
            copy = os.path.join(workdir, "copy-%d" % number)
            subprocess.run(["cp", "-a", roots["release"], copy], check=True)
            version += 1
            changed = release_change.one_file_changed(source, spec, rng, version)
            os.sync()
            floor = subprocess.run([sys.executable, __file__, "--floor", copy, changed], capture_output=True, text=True, check=True)
            cpu["release floor (extra only)"].append(json.loads(floor.stdout)["cpu"])
            for name in ("in place", "release") if number % 2 == 0 else ("release", "in place"):
                os.sync()
                cpu[name].append(release_change.module(source, roots[name], 3 if name == "release" else None, workdir)[1])
            print("round %d: %s" % (number + 1, ", ".join("%s %.3f s" % (name, values[-1]) for name, values in cpu.items())), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    median = {name: statistics.median(values) for name, values in cpu.items()}
    ratio, bound = median["release"] / median["in place"], 1 + median["release floor (extra only)"] / median["in place"]
    write_results("release-floor", {"files": files, "cpu": cpu, "median_cpu": median, "ratio": ratio, "bound": bound},
                  "| files | rounds | in place CPU s | release CPU s | ratio | floor of the release's extra work | no lower than |\n"
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n| %d | %d | %.3f | %.3f | %.2fx | %.3f s | %.2fx |\n" % (
                      files, rounds, median["in place"], median["release"], ratio, median["release floor (extra only)"], bound))
    return 0


if __name__ == "__main__":
    sys.exit(main())
