# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue #30's cost row: a one-file change to a 10,000-file release, against the same change
published in place, local destination, the module process Ansible runs.

    python benchmarks/release_change.py [--files 10000] [--rounds 5] [--keep 3] [--warm N] [--quick] [--seed N]

Both destinations get the same bundle first; then `warm` (default: `keep`) unmeasured changes
bring the release home to its steady state (each publish adds a generation and removes the
oldest beyond keep; `--keep 10 --warm 0` measures publishes that remove none), and each
measured round changes one file, publishes it in place and as a release (the order
alternating between rounds) and measures each module process's CPU (user + sys, wait4). For the
release it also counts what the publish wrote (`written`) and what the new generation holds on
disk that no other generation holds: the changed file, its state record and its directories
(every other file is a hard link to the generation before). Each round also runs the floor of
the release's extra work on a copy of the release home (release_floor.py), so the ratio comes with
the lowest it can be, 1 + that floor / the change in place. Prints the medians, the ratio and that
bound, the figures benchmarks/README.md quotes; --quick runs 2,000 files, 3 rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bundles import BUNDLE_ID, BundleSpec, generate, paths
from harness import COLLECTIONS, create_manifest, write_results
from release_floor import on_a_copy

MODULE = "ansible_collections.distributor.core.plugins.modules.distributor_publish"
SITE = "site"


def destination(root: str, keep: int | None) -> dict:
    made = {"id": "bench", "storage": {"type": "local", "root": root}, "path": SITE}
    return dict(made, releases={"keep": keep}) if keep else made


def module(source: str, root: str, keep: int | None, workdir: str) -> tuple[float, float, dict]:
    """(wall s, CPU s, result) of distributor_publish as Ansible runs it: a process of its own
    reading its arguments from a file; its CPU from the children's usage around it."""
    args = os.path.join(workdir, "args-%s.json" % ("release" if keep else "in-place"))
    with open(args, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": {"source": source, "pipeline": {"id": "bench"},
                                           "destination": destination(root, keep)}}, handle)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run([sys.executable, "-m", MODULE, args], env=dict(os.environ, PYTHONPATH=COLLECTIONS),
                               capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads(completed.stdout) if completed.stdout.strip() else {}
    if completed.returncode != 0 or result.get("failed"):
        raise RuntimeError("the module failed: %s%s" % (completed.stdout[-2000:], completed.stderr[-2000:]))
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), result


def one_file_changed(source: str, spec: BundleSpec, rng: random.Random, version: int) -> str:
    """One file of the bundle rewritten (same size, new bytes) and the manifest made again,
    `created` a minute later than the version before; the path changed."""
    path = rng.choice(paths(spec))
    with open(os.path.join(source, path), "wb") as handle:
        handle.write(rng.randbytes(spec.size))
    create_manifest(source, BUNDLE_ID, "2026-01-01T%02d:%02d:00Z" % divmod(version, 60))
    return path


def own_blocks(root: str, release: str) -> dict:
    """What generation `release` holds that no other name does, in bytes of disk blocks: its
    files with one link (the changed file, its record) and its directories."""
    return tree_blocks(os.path.join(root, ".distributor-releases", SITE, release))


def tree_blocks(top: str) -> dict:
    found = {"files": 0, "file_bytes": 0, "directories": 0, "directory_bytes": 0}
    for directory, _dirs, files in os.walk(top):
        found["directories"] += 1
        found["directory_bytes"] += os.lstat(directory).st_blocks * 512
        for name in files:
            info = os.lstat(os.path.join(directory, name))
            if info.st_nlink == 1:
                found["files"] += 1
                found["file_bytes"] += info.st_blocks * 512
    return found


def measure(files: int, rounds: int, keep: int, warm: int, seed: int, workdir: str) -> dict:
    spec = BundleSpec("release-change", "small", files, 4096)
    source = generate(os.path.join(workdir, "bundle"), spec, seed)
    rng = random.Random(seed)
    roots = {"in place": os.path.join(workdir, "in-place"), "release": os.path.join(workdir, "release")}
    keeps = {"in place": None, "release": keep}
    version = 0
    for number in range(1 + warm):
        if number:
            version += 1
            one_file_changed(source, spec, rng, version)
        for name, root in roots.items():
            module(source, root, keeps[name], workdir)
    measured = []
    for number in range(rounds):
        version += 1
        path = one_file_changed(source, spec, rng, version)
        row = {"round": number + 1, "changed": path,
               "floor": {"cpu": round(on_a_copy(roots["release"], path, keep, os.path.join(workdir, "floor-%d" % number)), 3)}}
        for name in (("in place", "release") if number % 2 == 0 else ("release", "in place")):
            os.sync()  # the bundle's dirty pages and the round before are not this publish's cost
            wall, cpu, result = module(source, roots[name], keeps[name], workdir)
            written = result.get("written_count", len(result["written"]))
            row[name] = {"wall": round(wall, 3), "cpu": round(cpu, 3), "written": written}
            if name == "release":
                released = result["release"]
                row[name].update(id=released["id"], removed=len(released["removed"]),
                                 own=own_blocks(roots[name], released["id"]))
        print("round %d: in place %.3f s CPU (%.3f wall), release %.3f s CPU (%.3f wall), %d generation(s) removed, %s; "
              "floor of the release's extra work %.3f s" % (
                  number + 1, row["in place"]["cpu"], row["in place"]["wall"], row["release"]["cpu"], row["release"]["wall"],
                  row["release"]["removed"], row["release"]["own"], row["floor"]["cpu"]), flush=True)
        measured.append(row)
    medians = {name: statistics.median(row[name]["cpu"] for row in measured) for name in (*roots, "floor")}
    return {"files": files, "rounds": measured, "keep": keep, "warm": warm, "median_cpu": medians,
            "ratio": round(medians["release"] / medians["in place"], 3), "changed_size": spec.size,
            "bound": round(1 + medians["floor"] / medians["in place"], 3)}


def markdown(data: dict) -> str:
    rounds = data["rounds"]
    own = rounds[-1]["release"]["own"]
    lines = [
        "| files | rounds | generations removed | in place CPU s (median) | release CPU s (median) | ratio "
        "| floor of the release's extra work s | no lower than | written | new generation's own disk |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        "| %d | %d | %s | %.3f | %.3f | %.2fx | %.3f | %.2fx | %s | %d file(s) %d KiB, %d directories %d KiB (the file changed: %d KiB) |" % (
            data["files"], len(rounds), "/".join(str(row["release"]["removed"]) for row in rounds),
            data["median_cpu"]["in place"], data["median_cpu"]["release"], data["ratio"], data["median_cpu"]["floor"], data["bound"],
            "/".join(str(row["release"]["written"]) for row in rounds), own["files"], own["file_bytes"] // 1024,
            own["directories"], own["directory_bytes"] // 1024, data["changed_size"] // 1024),
    ]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keep", type=int, default=3)
    parser.add_argument("--warm", type=int, help="unmeasured changes first (default: keep)")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="2,000 files, 3 rounds")
    options = parser.parse_args(argv)
    if options.quick:
        options.files, options.rounds = 2000, 3
    workdir = tempfile.mkdtemp(prefix="distributor-release-change-")
    try:
        warm = options.keep if options.warm is None else options.warm
        data = measure(options.files, options.rounds, options.keep, warm, options.seed, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    write_results("release-change", data, markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
