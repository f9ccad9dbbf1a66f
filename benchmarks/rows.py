# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue #42's local rows, each tool next to its peer in the same interleaved rounds.

    python benchmarks/rows.py [--rows start,first,skip,replace,regenerated] [--files 10000,100000]
                              [--rounds 3] [--quick] [--tree NAME=PATH ...] [--seed N] [--under DIR]

Every figure is the module process as Ansible runs it (`python -m ...distributor_publish ARGS`),
CPU = user + sys of it and its children, wall beside it; every round gives every tool a fresh
root, tools alternate their order from round to round, `os.sync()` before each run, and the
report gives each tool's median and the median of the per-round ratios. Rows:

- start: a skip of a 1-file bundle (absolute), next to `floor + AnsibleModule` (replace_floor.py's
  floor on the same bundle: the fixed cost of any module doing a publish's reads);
- first: a first publish of N x 4 KiB (CPU / `rsync -a`, wall / `rsync -a --fsync`);
- skip: the same bundle again into that root (CPU / a no-op `rsync -a`, and / its first publish);
- replace: 10% of N rewritten, every other mtime kept (rsync writes only the changed files),
  CPU / `rsync -a`;
- regenerated: the same change in a tree rebuilt whole (every mtime new), CPU / `rsync -a`.

The floor (replace_floor.py with `AnsibleModule`: the reads, checks and durable writes of each
row and nothing else) runs every row in the same rounds, and each row's line has the floor's
ratio to the same peer beside the module's: a goal below the floor's ratio is out of reach. The
first, skip, replace and regenerated rows also run the contract floor (contract_floor.py: those
reads and writes plus every check, record and durable step the state contract asks of them, and
the module's own plan digest, which it must match), its skip on the root the module published: a
goal below its ratio is out of reach for any module keeping the contract.

`--tree` (as in compare.py: a directory holding ansible_collections/distributor/core) adds each
checkout's module to every round: before and after a change, measured in the same run. `--quick`:
2,000 files, 2 rounds, a minute a row. Writes benchmarks/results/<time>-rows.json and .md;
targets.py reads them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bundles import BundleSpec, change, generate
from harness import COLLECTIONS, module_from, time_command, write_results

FLOOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "replace_floor.py")
FLOOR_TOOL = "floor + AnsibleModule"
CONTRACT_FLOOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contract_floor.py")
CONTRACT_TOOL = "contract floor"
FLOORS = (FLOOR_TOOL, CONTRACT_TOOL)
ROWS = ("start", "first", "skip", "replace", "regenerated")
SITE = "site"


def rsync(*extra: str):
    def run(source: str, root: str):
        os.makedirs(root, exist_ok=True)
        return time_command(["rsync", "-a", *extra, "--exclude=/manifest.json", source + "/", os.path.join(root, SITE) + "/"])
    return run


def floor(source: str, root: str):
    return time_command([sys.executable, FLOOR, "--floor", source, root, "--ansible"])


def contract_floor(source: str, root: str):
    return time_command([sys.executable, CONTRACT_FLOOR, source, root])


def same_digest(module, floor_) -> None:
    """The contract floor must do the module's work: its plan digest is the module's, or the
    run is not a measure of it."""
    digests = [json.loads(timing.stdout.strip().splitlines()[-1]).get("plan_digest") for timing in (module, floor_)]
    if digests[0] != digests[1]:
        raise RuntimeError("the contract floor's plan digest %s is not the module's %s" % (digests[1], digests[0]))


class Rounds:
    """Each tool's timings of each measured step, round by round."""

    def __init__(self, modules: dict):
        self.modules = modules
        self.timings: dict = {}

    def time(self, step: str, tool: str, run, source: str, root: str):
        os.sync()
        timing = run(source, root)
        self.timings.setdefault(step, {}).setdefault(tool, []).append({"wall": timing.seconds, "cpu": timing.cpu_seconds})
        return timing

    def each_module(self, round_: int):
        names = list(self.modules)
        return names if round_ % 2 == 0 else names[::-1]


def bundles(workdir: str, files: int, seed: int) -> dict:
    """The bundle (mtimes an hour old), its 10% change with every other mtime kept, and the same
    change rebuilt whole (every mtime new)."""
    spec = BundleSpec("rows", "small", files, 4096)
    old = generate(os.path.join(workdir, "old-%d" % files), spec, seed)
    built = time.time() - 3600  # the change must show in the mtime, which rsync compares in whole seconds
    for directory, _dirs, names in os.walk(old):
        for name in names:
            os.utime(os.path.join(directory, name), (built, built))
    kept, regenerated = os.path.join(workdir, "kept-%d" % files), os.path.join(workdir, "regenerated-%d" % files)
    subprocess.run(["cp", "-a", old, kept], check=True)
    change(kept, spec, seed)
    subprocess.run(["cp", "-r", kept, regenerated], check=True)
    return {"old": old, "kept": kept, "regenerated": regenerated}


def measure(rows: tuple, files: int, rounds: int, trees: dict, workdir: str, seed: int) -> dict:
    measured = Rounds({name: module_from(tree, SITE) for name, tree in trees.items()})
    if "start" in rows:
        one = generate(os.path.join(workdir, "one"), BundleSpec("start", "small", 1, 4096), seed)
        for round_ in range(rounds):
            for name in measured.each_module(round_):
                root = os.path.join(workdir, "start-%d-%s" % (round_, name))
                measured.modules[name](one, root)
                measured.time("start", name, measured.modules[name], one, root)
            root = os.path.join(workdir, "start-%d-floor" % round_)
            floor(one, root)
            measured.time("start", FLOOR_TOOL, floor, one, root)
    if not set(rows) & {"first", "skip", "replace", "regenerated"}:
        return measured.timings
    sources = bundles(workdir, files, seed)
    peers = {"rsync -a": rsync(), "rsync -a --fsync": rsync("--fsync"), FLOOR_TOOL: floor, CONTRACT_TOOL: contract_floor}
    # The contract floor runs beside the last module, which its plan digest must match.
    last = list(measured.modules)[-1]
    # Every root stays until the end: deleting a large tree just before a round inflates the next
    # one's syncfs, and its CPU (the disk discards).
    for round_ in range(rounds):
        roots = {}
        for name in list(measured.each_module(round_)) + [FLOOR_TOOL] if {"first", "skip"} & set(rows) else ():
            run = measured.modules.get(name) or peers[name]
            roots[name] = os.path.join(workdir, "%d-%d-%s" % (files, round_, name.replace(" ", "")))
            first = measured.time("first", name, run, sources["old"], roots[name])
            if name == last:
                roots[CONTRACT_TOOL] = os.path.join(workdir, "%d-%d-contract" % (files, round_))
                same_digest(first, measured.time("first", CONTRACT_TOOL, contract_floor, sources["old"], roots[CONTRACT_TOOL]))
            if "skip" in rows:
                skipped = measured.time("skip", name, run, sources["old"], roots[name])
                if name == last:
                    # On the root that module published: the state as the module writes it.
                    same_digest(skipped, measured.time("skip", CONTRACT_TOOL, contract_floor, sources["old"], roots[name]))
        for peer in ("rsync -a", "rsync -a --fsync") if "first" in rows else ("rsync -a",) if "skip" in rows else ():
            roots[peer] = os.path.join(workdir, "%d-%d-%s" % (files, round_, peer.replace(" ", "")))
            measured.time("first", peer, peers[peer], sources["old"], roots[peer])
        if "skip" in rows:
            measured.time("skip", "rsync -a", peers["rsync -a"], sources["old"], roots["rsync -a"])
        for step in ("replace", "regenerated"):
            if step not in rows:
                continue
            done = {}
            for tool in list(measured.each_module(round_)) + ["rsync -a", FLOOR_TOOL, CONTRACT_TOOL]:
                run = measured.modules.get(tool) or peers[tool]
                root = os.path.join(workdir, "%d-%d-%s-%s" % (files, round_, step, tool.replace(" ", "")))
                run(sources["old"], root)
                done[tool] = measured.time(step, tool, run, sources["kept" if step == "replace" else step], root)
            same_digest(done[last], done[CONTRACT_TOOL])
        print("%d files, round %d: %s" % (files, round_, "; ".join("%s %s" % (step, ", ".join(
            "%s %.2f" % (tool, values[-1]["cpu"]) for tool, values in tools.items())) for step, tools in measured.timings.items()
            if step != "start")), flush=True)
    return measured.timings


# (step, measure, peer step, peer tool, goal); the figure is each module's per-round ratio.
ROW_LINES = {
    "start": [("start", "cpu", "start", FLOOR_TOOL, None)],
    "first": [("first", "cpu", "first", "rsync -a", 1.3), ("first", "wall", "first", "rsync -a --fsync", 1.0)],
    "skip": [("skip", "cpu", "skip", "rsync -a", 2.5), ("skip", "cpu", "first", None, 0.1)],
    "replace": [("replace", "cpu", "replace", "rsync -a", 2.0)],
    "regenerated": [("regenerated", "cpu", "regenerated", "rsync -a", 0.4)],
}


def summary(timings_by_files: dict, modules: list) -> list[dict]:
    """Each module's line of each row, and the floor's beside it against the same peer: what the
    smallest program doing the row's work reaches in the same rounds."""
    lines = []
    for files, timings in timings_by_files.items():
        for row in ROWS:
            for step, key, peer_step, peer, goal in ROW_LINES[row]:
                if step not in timings or peer_step not in timings:
                    continue
                for name in modules + ([floor_ for floor_ in FLOORS if floor_ in timings[step]] if row != "start" else []):
                    if (peer or name) not in timings[peer_step]:
                        continue  # a row run alone: `--rows skip` measures no `rsync -a --fsync`
                    mine = [t[key] for t in timings[step][name]]
                    theirs = [t[key] for t in timings[peer_step][peer or name]]
                    line = {"row": row, "files": 1 if row == "start" else files, "module": name, "measure": key,
                            "peer": "%s %s" % (peer or "its first publish", peer_step if peer else ""), "goal": goal,
                            "mine": statistics.median(mine), "theirs": statistics.median(theirs),
                            "ratio": statistics.median(m / max(t, 1e-3) for m, t in zip(mine, theirs)), "rounds": len(mine)}
                    if row == "start":
                        line.update(goal=0.2, ratio=None)
                    lines.append(line)
    return lines


def markdown(lines: list[dict]) -> str:
    table = ["| row | files | module | measure | module s | peer | peer s | ratio | goal |", "| --- | ---: | --- | --- | ---: | --- | ---: | ---: | ---: |"]
    for line in lines:
        ratio, goal = ("-", "≤ %.1f s" % line["goal"]) if line["ratio"] is None else ("%.2fx" % line["ratio"], "≤ %.1fx" % line["goal"])
        table.append("| {} | {:,} | {} | {} | {:.3f} | {} | {:.3f} | {} | {} |".format(
            line["row"], line["files"], line["module"], line["measure"], line["mine"], line["peer"].strip(), line["theirs"], ratio, goal))
    return "\n".join(table) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--files", default="10000,100000", help="bundle sizes of the first/skip/replace rows")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2,000 files, 2 rounds")
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH of a directory holding ansible_collections")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--under", help="the directory to work in (default: the system's temporary directory); a freshly made "
                        "filesystem there keeps the first publishes clear of the inode allocator's scans past recently deleted "
                        "inodes (README: a first publish on a fresh ext4)")
    args = parser.parse_args(argv)
    rows = tuple(row for row in args.rows.split(",") if row)
    unknown = set(rows) - set(ROWS)
    if unknown:
        parser.error("unknown rows %s (known: %s)" % (", ".join(sorted(unknown)), ", ".join(ROWS)))
    counts = [int(count) for count in args.files.split(",")]
    rounds = args.rounds
    if args.quick:
        counts, rounds = [min(counts[0], 2000)], min(rounds, 2)
    trees = dict(tree.split("=", 1) for tree in args.tree) or {"module": COLLECTIONS}
    started, load = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0]
    timings = {}
    workdir = tempfile.mkdtemp(prefix="distributor-rows-", dir=args.under)
    try:
        for index, count in enumerate(counts):
            # The 1-file start row is measured once, with the first bundle size.
            wanted = rows if index == 0 else tuple(row for row in rows if row != "start")
            # 10% replace rows at 10,000 files only: the table names no larger case.
            wanted = wanted if count <= 10000 else tuple(row for row in wanted if row not in ("replace", "regenerated"))
            timings[count] = measure(wanted, count, rounds, trees, workdir, args.seed)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    lines = summary(timings, list(trees))
    write_results("rows", {"started": started, "load_before": load, "trees": trees, "timings": {str(k): v for k, v in timings.items()},
                           "summary": lines}, markdown(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
