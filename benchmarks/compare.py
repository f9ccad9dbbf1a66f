# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Before and after: the module process of two (or more) checkouts and `rsync -a`, one phase of
one bundle, rounds interleaved so each round's load weighs on every tool alike.

    python benchmarks/compare.py --tree before=/tmp/before --tree after=.build/src --phase skip --files 100000
    git archive <commit> | tar -x -C /tmp/before/ansible_collections/distributor/core   # a checkout to compare

A tree is a directory holding ansible_collections/distributor/core (PYTHONPATH of the module
process, as scale.py runs it). `first` publishes into a fresh root each round; `skip` publishes
once (with the first tree) and then republishes into that root, against a no-op `rsync -a`.
Prints the median CPU (user + sys of the process and its children) of each tool, each tree's
ratio to rsync, and the load average before and after: the figures benchmarks/README.md quotes
for issue #32.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile

from bundles import BundleSpec, generate
from harness import run_module, time_command


def module(tree: str, source: str, root: str, workdir: str):
    return run_module({"source": source, "pipeline": {"id": "bench"},
                       "destination": {"id": "compare", "storage": {"type": "local", "root": root}, "path": "site"}},
                      os.path.join(workdir, "args.json"), tree=tree)


def rsync(source: str, target: str):
    return time_command(["rsync", "-a", "--exclude=/manifest.json", source + "/", target + "/"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH of a directory holding ansible_collections")
    parser.add_argument("--phase", choices=("first", "skip"), default="skip")
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    trees = dict(tree.split("=", 1) for tree in options.tree)
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="distributor-compare-") as work:
        source = generate(os.path.join(work, "bundle"), BundleSpec("compare", "small", options.files, 4096), options.seed)
        skip_root, skip_copy = os.path.join(work, "skip"), os.path.join(work, "skip-rsync", "site")
        if options.phase == "skip":
            module(next(iter(trees.values())), source, skip_root, work)
            os.makedirs(os.path.dirname(skip_copy))
            rsync(source, skip_copy)
        os.sync()
        cpu = {name: [] for name in list(trees) + ["rsync -a"]}
        for round_ in range(options.rounds):
            for name in cpu:
                # First publishes go to fresh roots, kept until the end: deleting a large tree
                # just before a round inflates the next one's syncfs (the disk discards).
                fresh = os.path.join(work, "r%d-%s" % (round_, name.replace(" ", "")))
                if name == "rsync -a":
                    if options.phase == "first":
                        os.makedirs(fresh)
                    timing = rsync(source, skip_copy if options.phase == "skip" else os.path.join(fresh, "site"))
                else:
                    timing = module(trees[name], source, skip_root if options.phase == "skip" else fresh, work)
                cpu[name].append(timing.cpu_seconds)
                os.sync()
    peer = statistics.median(cpu["rsync -a"])
    print("%s of %d x 4 KiB, %d rounds, load average %.2f before, %.2f after" % (
        options.phase, options.files, options.rounds, load[0], os.getloadavg()[0]))
    for name, seconds in cpu.items():
        ratio = "" if name == "rsync -a" else "  %.2fx rsync -a" % (statistics.median(seconds) / peer)
        print("%-12s median CPU %.3f s (%s)%s" % (name, statistics.median(seconds), " ".join("%.2f" % s for s in seconds), ratio))


if __name__ == "__main__":
    main()
